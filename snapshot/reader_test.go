package snapshot_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// keyStores holds one datastore with three snapshots: vm/100 plain,
// vm/200 encrypted and signed with key 1, vm/300 signed only with key 1.
type keyStores struct {
	dir          string
	cc, other    *crypto.Config
	plain, enc   index.Snapshot
	signed       index.Snapshot
	conf         map[string][]byte // snapshot → qemu-server.conf content
	keyFile      string            // a path standing for key 1's file
	otherKeyFile string            // a path standing for key 2's file
}

func newKeyStores(t *testing.T) *keyStores {
	t.Helper()
	_, cc := fixture.Key(t, 1)
	_, other := fixture.Key(t, 2)
	ks := &keyStores{dir: fixture.NewStore(t), cc: cc, other: other, conf: map[string][]byte{},
		plain:  fixture.Snap(t, "", "vm", "100", fixture.T0),
		enc:    fixture.Snap(t, "", "vm", "200", fixture.T0),
		signed: fixture.Snap(t, "", "vm", "300", fixture.T0),
	}
	src := t.TempDir()
	for _, c := range []struct {
		snap index.Snapshot
		opts backup.Options
	}{
		{ks.plain, backup.Options{ChunkSize: 64 << 10}},
		{ks.enc, backup.Options{ChunkSize: 64 << 10, Key: cc}},
		{ks.signed, backup.Options{ChunkSize: 64 << 10, Key: cc, SignOnly: true}},
	} {
		img := fixture.WriteFile(t, src, c.snap.ID+".img", fixture.Mixed(200<<10, uint64(len(c.snap.ID))))
		ks.conf[c.snap.String()] = []byte("conf of " + c.snap.String())
		conf := fixture.WriteFile(t, src, c.snap.ID+".conf", ks.conf[c.snap.String()])
		fixture.Backup(t, ks.dir, c.snap, c.opts, backup.Source{Name: "drive-scsi0.img", Path: img}, backup.Source{Name: "qemu-server.conf", Path: conf})
	}
	keys := t.TempDir()
	ks.keyFile = fixture.WriteFile(t, keys, "key1.json", []byte("{}"))
	ks.otherKeyFile = fixture.WriteFile(t, keys, "key2.json", []byte("{}"))
	return ks
}

// opener stands for the command's key-file opener: it counts the opens and
// fails for a path it does not know (as a protected key without a
// passphrase would).
type opener struct {
	mu     sync.Mutex
	keys   map[string]*crypto.Config
	opened map[string]int
}

func (ks *keyStores) opener() *opener {
	return &opener{keys: map[string]*crypto.Config{ks.keyFile: ks.cc, ks.otherKeyFile: ks.other}, opened: map[string]int{}}
}

func (o *opener) open(_ context.Context, path string) (*crypto.Config, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.opened[path]++
	if cc, ok := o.keys[path]; ok {
		return cc, nil
	}
	return nil, crypto.ErrPassphraseNeeded
}

func (o *opener) count(path string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.opened[path]
}

// notes collects what the key policy says.
type notes struct {
	mu   sync.Mutex
	said []string
}

func (n *notes) note(msg string) { n.mu.Lock(); n.said = append(n.said, msg); n.mu.Unlock() }
func (n *notes) all() string     { n.mu.Lock(); defer n.mu.Unlock(); return strings.Join(n.said, "\n") }

// TestReaderOpen: Open resolves TYPE/ID to the latest finished snapshot,
// reads its manifest, blobs and indexes, and names the snapshot in errors
// once it is resolved.
func TestReaderOpen(t *testing.T) {
	dir, _ := datastore(t)
	store := fixture.OpenStore(t, dir)
	r, err := snapshot.Open(ctx, store, nil, "vm/100", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Snapshot().String(); got != "vm/100/2026-11-29T11:00:00Z" {
		t.Errorf("vm/100 opened %s, want the latest finished one", got)
	}
	if r.Manifest().BackupTime != fixture.T0+3600 || r.Key() != nil || r.Pinned() != chunkstore.Store(store) {
		t.Errorf("manifest %s, key %v, pinned %v", index.FormatTime(r.Manifest().BackupTime), r.Key(), r.Pinned())
	}
	conf, err := r.Blob(ctx, "qemu-server.conf.blob")
	if err != nil || string(conf) != "conf "+r.Snapshot().String() {
		t.Errorf("blob: %q, %v", conf, err)
	}
	f, n, fi, err := r.OpenIndex(ctx, "drive-scsi0.img.fidx")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(f)
	f.Close()
	if int64(len(data)) != n || fi.Filename != "drive-scsi0.img.fidx" {
		t.Errorf("index: %d bytes of %d, entry %+v", len(data), n, fi)
	}
	if _, _, _, err := r.OpenIndex(ctx, "drive-nope.img.fidx"); !errors.Is(err, index.ErrNotInManifest) {
		t.Errorf("archive not listed: %v, want ErrNotInManifest", err)
	}
	// Resolution errors carry no snapshot; later ones do.
	if _, err := snapshot.Open(ctx, store, nil, "vm/999", nil); !errors.Is(err, snapshot.ErrNoSnapshot) {
		t.Errorf("vm/999: %v", err)
	}
	fixture.Patch(t, fixture.SnapPath(dir, fixture.Snap(t, "", "vm", "101", fixture.T0), snapshot.ManifestName), 0, []byte("XXXX"))
	_, err = snapshot.Open(ctx, store, nil, "vm/101", nil)
	var se *snapshot.Error
	if !errors.As(err, &se) || se.Snapshot.String() != "vm/101/2026-11-29T10:00:00Z" {
		t.Errorf("damaged manifest: %v, want a snapshot.Error naming vm/101", err)
	}
}

// TestReaderPinned: on a chain, the snapshot's files come from the member
// that holds its manifest, not from an earlier member that holds a stale
// copy of an index without the manifest.
func TestReaderPinned(t *testing.T) {
	dir, _ := datastore(t)
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	stale := fixture.NewStore(t)
	os.MkdirAll(fixture.SnapPath(stale, snap, ""), 0o755)
	idx, err := os.ReadFile(fixture.SnapPath(dir, snap, "drive-scsi0.img.fidx"))
	if err != nil {
		t.Fatal(err)
	}
	p := fixture.WriteFile(t, fixture.SnapPath(stale, snap, ""), "drive-scsi0.img.fidx", idx)
	fixture.FlipByte(t, p, -1) // a stale copy: its csum no longer matches the manifest
	first, second := fixture.OpenStore(t, stale), fixture.OpenStore(t, dir)
	chain, err := chunkstore.NewChain(first, second)
	if err != nil {
		t.Fatal(err)
	}
	r, err := snapshot.Open(ctx, chain, nil, snap.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Pinned() != chunkstore.Store(second) {
		t.Fatalf("pinned to %v, want the member with the manifest (%v)", r.Pinned(), second)
	}
	f, _, _, err := r.OpenIndex(ctx, "drive-scsi0.img.fidx")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(f)
	f.Close()
	fixture.EqualBytes(t, "index read through the reader", got, idx)
	// A file the pinned member lacks comes from the others.
	fixture.WriteFile(t, fixture.SnapPath(stale, snap, ""), "client.log.blob", []byte("log"))
	f, _, err = r.OpenFile(ctx, snap.Dir()+"/client.log.blob")
	if err != nil {
		t.Fatalf("file only in another member: %v", err)
	}
	f.Close()
	if _, _, err := r.OpenFile(ctx, snap.Dir()+"/nothing.blob"); !errors.Is(err, chunkstore.ErrNotFound) {
		t.Errorf("file in no member: %v, want ErrNotFound", err)
	}
}

// TestKeyPolicy: which key a snapshot is read with, when the default key
// file is opened, and which option combinations are refused.
func TestKeyPolicy(t *testing.T) {
	ks := newKeyStores(t)
	store := fixture.OpenStore(t, ks.dir)
	def := fixture.WriteFile(t, t.TempDir(), "encryption-key.json", []byte("{}"))
	badDef := fixture.WriteFile(t, t.TempDir(), "encryption-key.json", []byte("{}")) // the opener cannot open it
	cases := []struct {
		name       string
		o          snapshot.KeyOptions
		snap       index.Snapshot
		wantKey    *crypto.Config
		missing    bool
		newErr     error // from NewKeys
		err        error // from Open
		openedDef  int   // opens of the default key file
		note       string
		noNoteText string
	}{
		{name: "plain, default key there: not opened", o: snapshot.KeyOptions{DefaultFile: ks.keyFile}, snap: ks.plain, noNoteText: "default key"},
		{name: "encrypted, default key opened", o: snapshot.KeyOptions{DefaultFile: ks.keyFile}, snap: ks.enc, wantKey: ks.cc, openedDef: 1, note: "using the default key file"},
		{name: "signed only, default key opened", o: snapshot.KeyOptions{DefaultFile: ks.keyFile}, snap: ks.signed, wantKey: ks.cc, openedDef: 1},
		{name: "encrypted, no default file", o: snapshot.KeyOptions{DefaultFile: filepath.Join(t.TempDir(), "none.json")}, snap: ks.enc, err: index.ErrMissingKey},
		{name: "encrypted, default key never with NoDefault", o: snapshot.KeyOptions{DefaultFile: ks.keyFile, NoDefault: true}, snap: ks.enc, err: index.ErrMissingKey},
		{name: "encrypted, --keyfile", o: snapshot.KeyOptions{File: ks.keyFile, DefaultFile: def}, snap: ks.enc, wantKey: ks.cc},
		{name: "encrypted, wrong --keyfile", o: snapshot.KeyOptions{File: ks.otherKeyFile}, snap: ks.enc, err: errAny},
		{name: "encrypted, crypt-mode none", o: snapshot.KeyOptions{CryptMode: "none", DefaultFile: ks.keyFile}, snap: ks.enc, missing: true, note: "--crypt-mode none: the manifest of vm/200"},
		{name: "encrypted, AllowMissing (crc-only)", o: snapshot.KeyOptions{AllowMissing: true, NoDefault: true, DefaultFile: ks.keyFile}, snap: ks.enc, missing: true},
		{name: "crypt-mode encrypt uses the default key despite NoDefault", o: snapshot.KeyOptions{CryptMode: "encrypt", NoDefault: true, DefaultFile: ks.keyFile}, snap: ks.enc, wantKey: ks.cc, openedDef: 1},
		{name: "crypt-mode none with --keyfile", o: snapshot.KeyOptions{CryptMode: "none", File: ks.keyFile}, newErr: snapshot.ErrKeyUsage},
		{name: "crypt-mode sign-only without any key", o: snapshot.KeyOptions{CryptMode: "sign-only", DefaultFile: filepath.Join(t.TempDir(), "none.json")}, newErr: snapshot.ErrKeyUsage},
		{name: "crypt-mode unknown", o: snapshot.KeyOptions{CryptMode: "plain"}, newErr: snapshot.ErrKeyUsage},
		{name: "default key fails to open", o: snapshot.KeyOptions{DefaultFile: badDef}, snap: ks.enc, err: crypto.ErrPassphraseNeeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op, said := ks.opener(), &notes{}
			c.o.Open, c.o.Note = op.open, said.note
			keys, err := snapshot.NewKeys(ctx, c.o)
			if c.newErr != nil || err != nil {
				if !errors.Is(err, c.newErr) || c.newErr == nil {
					t.Fatalf("NewKeys: %v, want %v", err, c.newErr)
				}
				return
			}
			r, err := snapshot.Open(ctx, store, nil, c.snap.String(), keys)
			switch {
			case c.err == errAny && err != nil:
				return
			case c.err != nil:
				if !errors.Is(err, c.err) {
					t.Fatalf("Open: %v, want %v", err, c.err)
				}
				var se *snapshot.Error
				if !errors.As(err, &se) || se.Snapshot.String() != c.snap.String() {
					t.Errorf("error %v does not name %s", err, c.snap)
				}
				return
			case err != nil:
				t.Fatalf("Open: %v", err)
			}
			if r.Key() != c.wantKey || r.KeyMissing() != c.missing {
				t.Errorf("key %p (missing %v), want %p (missing %v)", r.Key(), r.KeyMissing(), c.wantKey, c.missing)
			}
			if n := op.count(c.o.DefaultFile); n != c.openedDef {
				t.Errorf("default key file opened %d times, want %d", n, c.openedDef)
			}
			if !strings.Contains(said.all(), c.note) || (c.noNoteText != "" && strings.Contains(said.all(), c.noNoteText)) {
				t.Errorf("notes %q, want %q", said.all(), c.note)
			}
			conf, err := r.Blob(ctx, "qemu-server.conf.blob")
			if c.missing {
				if err == nil {
					t.Errorf("encrypted blob decoded without its key")
				}
				return
			}
			if err != nil || string(conf) != string(ks.conf[c.snap.String()]) {
				t.Errorf("blob %q, %v", conf, err)
			}
		})
	}
}

// errAny stands for any error in a table.
var errAny = errors.New("any error")

// TestKeyPolicyDefaultOnce: the default key file is opened once for many
// snapshots, also concurrently, and one that failed is not asked again.
func TestKeyPolicyDefaultOnce(t *testing.T) {
	ks := newKeyStores(t)
	store := fixture.OpenStore(t, ks.dir)
	for _, c := range []struct {
		def  string
		fail bool
	}{{ks.keyFile, false}, {fixture.WriteFile(t, t.TempDir(), "k.json", []byte("{}")), true}} {
		op := ks.opener()
		keys, err := snapshot.NewKeys(ctx, snapshot.KeyOptions{DefaultFile: c.def, Open: op.open})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				_, err := snapshot.OpenSnapshot(ctx, store, ks.enc, keys)
				if (err != nil) != c.fail {
					t.Errorf("default %s: %v", c.def, err)
				}
			})
		}
		wg.Wait()
		if n := op.count(c.def); n != 1 {
			t.Errorf("default key file opened %d times, want once", n)
		}
		if (keys.OpenErr() != nil) != c.fail {
			t.Errorf("OpenErr %v", keys.OpenErr())
		}
		// A plain snapshot needs no key, even after the default failed.
		if _, err := snapshot.OpenSnapshot(ctx, store, ks.plain, keys); err != nil {
			t.Errorf("plain snapshot after the default key: %v", err)
		}
	}
}

// TestSignaturePolicy: --require-signature refuses unsigned manifests and
// signed ones that cannot be checked; without it, an unsigned manifest
// read with a key, or with key files given, is a warning.
func TestSignaturePolicy(t *testing.T) {
	ks := newKeyStores(t)
	store := fixture.OpenStore(t, ks.dir)
	cases := []struct {
		name string
		o    snapshot.KeyOptions
		snap index.Snapshot
		err  error
		note string
	}{
		{"required, unsigned", snapshot.KeyOptions{RequireSignature: true}, ks.plain, index.ErrUnsigned, ""},
		{"required, unsigned with a key", snapshot.KeyOptions{RequireSignature: true, File: ks.keyFile}, ks.plain, index.ErrUnsigned, ""},
		{"required, signed, checked", snapshot.KeyOptions{RequireSignature: true, File: ks.keyFile}, ks.signed, nil, ""},
		{"required, encrypted, checked", snapshot.KeyOptions{RequireSignature: true, File: ks.keyFile}, ks.enc, nil, ""},
		{"required, signed, no key to check", snapshot.KeyOptions{RequireSignature: true, CryptMode: "none"}, ks.signed, index.ErrUnsigned, ""},
		{"not required, unsigned with a key: warned", snapshot.KeyOptions{File: ks.keyFile}, ks.plain, nil, "warning: the manifest of vm/100/2026-11-29T10:00:00Z is not signed"},
		{"signed with another key", snapshot.KeyOptions{File: ks.otherKeyFile}, ks.signed, errAny, ""},
		// Several key files (or a directory) warn as one does, though a
		// plain snapshot gets no key from them.
		{"not required, unsigned with several keys: warned", snapshot.KeyOptions{Files: []string{ks.keyFile, ks.otherKeyFile}}, ks.plain, nil, "warning: the manifest of vm/100/2026-11-29T10:00:00Z is not signed"},
		{"not required, unsigned, only the default key file: not warned", snapshot.KeyOptions{DefaultFile: ks.keyFile}, ks.plain, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op, said := ks.opener(), &notes{}
			c.o.Open, c.o.Note = op.open, said.note
			keys, err := snapshot.NewKeys(ctx, c.o)
			if err != nil {
				t.Fatal(err)
			}
			_, err = snapshot.Open(ctx, store, nil, c.snap.String(), keys)
			switch {
			case c.err == errAny:
				if err == nil {
					t.Fatal("opened, want an error")
				}
			case !errors.Is(err, c.err) || (c.err == nil) != (err == nil):
				t.Fatalf("Open: %v, want %v", err, c.err)
			}
			if !strings.Contains(said.all(), c.note) || (c.note == "" && strings.Contains(said.all(), "not signed")) {
				t.Errorf("notes %q, want %q", said.all(), c.note)
			}
		})
	}
}
