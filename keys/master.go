package keys

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"os"
	"path"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/paperkey"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// Names of the master key files WriteMasterKey writes in the current
// directory, as proxmox-backup-client (§5.5).
const (
	MasterPublicName  = "master-public.pem"
	MasterPrivateName = "master-private.pem"
)

// WriteMasterKey generates an RSA master key pair of bits bits, the
// private key under pass, and writes it as new files MasterPublicName and
// MasterPrivateName in the current directory (Write: an existing file is
// ErrUsage). When the private key cannot be written, the public key is
// removed again.
func WriteMasterKey(bits int, pass []byte) error {
	pub, priv, err := crypto.GenerateMasterKey(bits, pass)
	if err != nil {
		return err
	}
	if err := Write(MasterPublicName, pub, false); err != nil {
		return err
	}
	if err := Write(MasterPrivateName, priv, false); err != nil {
		os.Remove(MasterPublicName)
		return err
	}
	return nil
}

// ReadRSAKeyFile reads an RSA-encrypted key from the file name: the blob
// payload as proxmox-backup-client restores it, or rsa-encrypted.key.blob
// copied from a snapshot directory (a plain DataBlob, decoded and
// CRC-checked here). An AES-encrypted blob is refused.
func ReadRSAKeyFile(name string) ([]byte, error) {
	data, err := ReadFile(name)
	if err != nil {
		return nil, err
	}
	if kind, kerr := chunkstore.Kind(data); kerr == nil {
		if kind.Encrypted() {
			return nil, fmt.Errorf("%s: an AES-encrypted blob, not the RSA-encrypted key", name)
		}
		return DecodePlainBlob(name, data)
	}
	return data, nil
}

// ErrNoRSAKeyBlob is matched (errors.Is) by the errors of RSAKeyBlob when
// the snapshot named, or every snapshot of the group named, has no
// rsa-encrypted.key.blob: definitively missing, so it also matches
// chunkstore.ErrNotFound (exit 1).
var ErrNoRSAKeyBlob = chunkstore.MissingKind("no " + index.RSAKeyBlobName)

// noRSAKeyBlobf is an ErrNoRSAKeyBlob error saying the formatted message.
func noRSAKeyBlobf(format string, args ...any) error {
	return &classError{class: ErrNoRSAKeyBlob, msg: fmt.Sprintf(format, args...), err: ErrNoRSAKeyBlob}
}

// RSAKeyBlob reads rsa-encrypted.key.blob of snapshot ref (TYPE/ID/TIME,
// or TYPE/ID: the newest snapshot of the group that has the blob) in
// namespace ns of store, without the key: the manifest is read without key
// checks, the blob checked against its size and SHA-256 in the manifest and
// decoded (it is a plain blob, §5.5). It returns the payload and the
// manifest's key fingerprint, when it names one. note is told (one line,
// store text escaped) when an older snapshot of the group is read, and
// warned when that snapshot was made with another key than the newest.
func RSAKeyBlob(ctx context.Context, store chunkstore.Store, ns index.Namespace, ref string, note func(string)) ([]byte, *crypto.Fingerprint, error) {
	// The manifest is read without key checks: the key is what is lost.
	src, err := snapshot.Open(ctx, store, ns, ref, nil)
	if err != nil {
		return nil, nil, err
	}
	snap, m := src.Snapshot(), src.Manifest()
	if _, err := m.File(index.RSAKeyBlobName); err != nil {
		if group, _ := index.ParseSnapshotRef(ref); group.IsGroup() {
			// TYPE/ID: the newest snapshot of the group that has the key.
			latest := snap
			lfp, latestHas, _ := m.KeyFingerprint()
			if src, err = newestWithRSAKey(ctx, store, ns, snap); err != nil {
				return nil, nil, err
			}
			snap, m = src.Snapshot(), src.Manifest()
			note(fmt.Sprintf("the latest snapshot of %s has no %s: reading it from %s", ref, index.RSAKeyBlobName, snap))
			if fp, has, _ := m.KeyFingerprint(); latestHas && (!has || fp != lfp) {
				note(fmt.Sprintf("warning: %s was made with another key (%s) than %s: the key recovered does not open it", latest, lfp.Short(), snap))
			}
		} else {
			return nil, nil, noRSAKeyBlobf("snapshot %s has no %s: it was not backed up with a master public key (--master-pubkey-file)", snap, index.RSAKeyBlobName)
		}
	}
	raw, err := src.CheckedBlob(ctx, index.RSAKeyBlobName)
	if err != nil {
		return nil, nil, err
	}
	ct, err := DecodePlainBlob(path.Join(snap.Dir(), index.RSAKeyBlobName), raw)
	if err != nil {
		return nil, nil, err
	}
	var want *crypto.Fingerprint
	if fp, ok, err := m.KeyFingerprint(); err == nil && ok {
		want = &fp
	}
	return ct, want, nil
}

// newestWithRSAKey returns the newest snapshot of latest's group (latest
// being its newest) whose manifest lists rsa-encrypted.key.blob, with that
// manifest read without key checks; an error naming the group when none
// has it.
func newestWithRSAKey(ctx context.Context, store chunkstore.Store, ns index.Namespace, latest index.Snapshot) (*snapshot.Reader, error) {
	list, err := snapshot.List(ctx, store, ns)
	if err != nil {
		return nil, err
	}
	for i := len(list) - 1; i >= 0; i-- {
		s := list[i].Snapshot
		if s.Type != latest.Type || s.ID != latest.ID {
			continue
		}
		r, err := snapshot.OpenSnapshot(ctx, store, s, nil)
		if err != nil {
			continue // pruned meanwhile, or unreadable: an older one may do
		}
		if _, err := r.File(index.RSAKeyBlobName); err == nil {
			return r, nil
		}
	}
	return nil, noRSAKeyBlobf("no snapshot of %s has %s: none was backed up with a master public key (--master-pubkey-file)", latest.GroupDir(), index.RSAKeyBlobName)
}

// DecodePlainBlob decodes the unencrypted DataBlob raw read from name (CRC
// checked, at most crypto.MaxSecretFileSize bytes); errors name name.
func DecodePlainBlob(name string, raw []byte) ([]byte, error) {
	dec, err := chunkstore.NewDecoder()
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	data, _, err := dec.Decode(nil, raw, nil, crypto.MaxSecretFileSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return data, nil
}

// Recovered is a key recovered with the master private key.
type Recovered struct {
	Key    [crypto.KeySize]byte
	Config *crypto.Config
	// Created is the creation time of the original key file, kept in
	// the key file the recovered key is written to.
	Created string
}

// Recover decrypts the RSA-encrypted key ct (read from ctName) with the
// master private key priv (read from masterName) and opens it; want, when
// not nil, is the fingerprint the snapshot's manifest names, which the
// recovered key must have (else an error wrapping index.ErrWrongKey).
// Errors name ctName (and masterName for a failed decryption).
func Recover(ctx context.Context, ctName, masterName string, priv *rsa.PrivateKey, ct []byte, want *crypto.Fingerprint) (*Recovered, error) {
	kf, err := crypto.RSADecryptKeyFile(priv, ct)
	if err != nil {
		return nil, fmt.Errorf("%s with %s: %w", ctName, masterName, err)
	}
	key, cfg, err := kf.Open(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: recovered key: %w", ctName, err)
	}
	if want != nil && *want != cfg.Fingerprint() {
		return nil, fmt.Errorf("%s: %w: recovered key %s, but the snapshot's manifest names key %s", ctName, index.ErrWrongKey, cfg.Fingerprint(), want)
	}
	return &Recovered{Key: key, Config: cfg, Created: kf.Created}, nil
}

// RSAEncrypt encrypts the key cc (opened from the key file at keyfile)
// under the master public key pub, as proxmox-backup-client does for
// rsa-encrypted.key.blob (§5.5): the key in clear, with the key file's
// creation time (none when keyfile cannot be read), RSA PKCS#1
// v1.5-encrypted.
func RSAEncrypt(pub *rsa.PublicKey, keyfile string, cc *crypto.Config) ([]byte, error) {
	var created string
	if kd, err := ReadFile(keyfile); err == nil {
		if kf, err := crypto.ParseKeyFile(kd); err == nil {
			created = kf.Created
		}
	}
	return crypto.RSAEncryptKeyFile(pub, cc.UnprotectedKeyFile(created, time.Now()))
}

// RSAEncryptUnder encrypts the key cc (opened from keyfile) under the
// master public key in the PEM file pubFile, as RSAEncrypt does. Errors
// reading or parsing pubFile name it as --master-pubkey-file; a file that
// is no master public key is ErrUsage.
func RSAEncryptUnder(pubFile, keyfile string, cc *crypto.Config) ([]byte, error) {
	data, err := ReadFile(pubFile)
	if err != nil {
		return nil, fmt.Errorf("--master-pubkey-file: %w", err)
	}
	pub, err := crypto.ParseMasterPublicKey(data)
	if err != nil {
		err = fmt.Errorf("--master-pubkey-file %s: %w", pubFile, err)
		if errors.Is(err, crypto.ErrMasterKeyFormat) {
			err = &classError{class: ErrUsage, msg: err.Error(), err: err}
		}
		return nil, err
	}
	return RSAEncrypt(pub, keyfile, cc)
}

// ReadMasterFile reads a master private key file: the PEM, or its paper
// key (paperkey.PrivateText: the whole printout with its QR codes, or its
// numbered lines typed back), which is returned as the PEM it holds. A
// paper key may have up to paperkey.MaxPrivateTextSize bytes, anything
// else crypto.MaxSecretFileSize (larger: crypto.ErrNotSecretFile, a usage
// error). Numbered lines that make no PEM are an ErrUsage error wrapping
// crypto.ErrMasterKeyFormat and paperkey.ErrPrivateText naming path and the
// line (a printout typed back with a line left out: the file given must
// change).
func ReadMasterFile(path string) ([]byte, error) {
	data, err := crypto.ReadSecretFileMax(path, paperkey.MaxPrivateTextSize)
	if err != nil {
		return nil, notThereUsage(err)
	}
	pem, ok, err := paperkey.PrivatePEM(data)
	switch {
	case err != nil:
		err = fmt.Errorf("%s: %w: %w", path, crypto.ErrMasterKeyFormat, err)
		return nil, &classError{class: ErrUsage, msg: err.Error(), err: err}
	case ok:
		return pem, nil
	case len(data) > crypto.MaxSecretFileSize:
		return nil, fmt.Errorf("%s: %w: %d bytes, more than the %d a key file may have, and no paper key of a master key (numbered lines)", path, crypto.ErrNotSecretFile, len(data), crypto.MaxSecretFileSize)
	}
	return data, nil
}

// OpenMaster reads the master private key in the PEM file path
// (ReadMasterFile: its paper key too) and opens it, asking pass for its passphrase only when it is protected (pass's
// errors are returned as they are). Errors parsing it name path: one that
// is no master key (crypto.ErrMasterKeyFormat) is ErrUsage, a wrong
// passphrase ErrNotOpened (NotOpened).
func OpenMaster(path string, pass func() ([]byte, error)) (*rsa.PrivateKey, error) {
	pem, err := ReadMasterFile(path)
	if err != nil {
		return nil, err
	}
	var p []byte
	if crypto.MasterPrivateKeyEncrypted(pem) {
		if p, err = pass(); err != nil {
			return nil, err
		}
	}
	priv, err := crypto.ParseMasterPrivateKey(pem, p)
	if errors.Is(err, crypto.ErrMasterKeyFormat) {
		err = fmt.Errorf("%s: %w", path, err)
		return nil, &classError{class: ErrUsage, msg: err.Error(), err: err}
	}
	if err != nil {
		return nil, NotOpened(path, err)
	}
	return priv, nil
}
