package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/keys"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// twoKeyStore holds one datastore with snapshots under two keys and a
// plain one, and real key files (PBKDF2 under a passphrase) for them.
type twoKeyStore struct {
	dir                 string
	ccA, ccB, ccC       *crypto.Config
	plain, encA, encB   index.Snapshot
	signB               index.Snapshot // signed only, with key B
	fileA, fileB, fileC string         // key files of A, B and C (C: no snapshot)
	bareB               string         // key B's file without its fingerprint field
	lying               string         // key C's file claiming key A's fingerprint
	bareA               string         // key A's file without its fingerprint field
	oldA                string         // key A's file under another passphrase (before key change-passphrase)
}

const keyPass = "pass-for-tests"

func newTwoKeyStore(t *testing.T) *twoKeyStore {
	t.Helper()
	kA, ccA := fixture.Key(t, 11)
	kB, ccB := fixture.Key(t, 12)
	kC, ccC := fixture.Key(t, 13)
	s := &twoKeyStore{dir: fixture.NewStore(t), ccA: ccA, ccB: ccB, ccC: ccC,
		plain: fixture.Snap(t, "", "vm", "100", fixture.T0),
		encA:  fixture.Snap(t, "", "vm", "200", fixture.T0),
		encB:  fixture.Snap(t, "", "vm", "300", fixture.T0),
		signB: fixture.Snap(t, "", "vm", "400", fixture.T0),
	}
	src := t.TempDir()
	for _, c := range []struct {
		snap index.Snapshot
		opts backup.Options
	}{
		{s.plain, backup.Options{ChunkSize: 64 << 10}},
		{s.encA, backup.Options{ChunkSize: 64 << 10, Key: ccA}},
		{s.encB, backup.Options{ChunkSize: 64 << 10, Key: ccB}},
		{s.signB, backup.Options{ChunkSize: 64 << 10, Key: ccB, SignOnly: true}},
	} {
		img := fixture.WriteFile(t, src, c.snap.ID+".img", fixture.Mixed(100<<10, uint64(len(c.snap.ID))))
		fixture.Backup(t, s.dir, c.snap, c.opts, backup.Source{Name: "drive-scsi0.img", Path: img})
	}
	kd := t.TempDir()
	s.fileA = fixture.KeyFile(t, kd, "a.json", kA, crypto.KDFPBKDF2, keyPass)
	s.fileB = fixture.KeyFile(t, kd, "b.json", kB, crypto.KDFPBKDF2, keyPass)
	s.fileC = fixture.KeyFile(t, kd, "c.json", kC, crypto.KDFPBKDF2, keyPass)
	s.bareB = rewriteKeyFile(t, s.fileB, "bare-b.json", "")
	s.lying = rewriteKeyFile(t, s.fileC, "lying.json", ccA.Fingerprint().String())
	s.bareA = rewriteKeyFile(t, s.fileA, "bare-a.json", "")
	s.oldA = fixture.KeyFile(t, t.TempDir(), "a-old.json", kA, crypto.KDFPBKDF2, "an-older-passphrase")
	return s
}

// rewriteKeyFile writes a copy of the key file at path named name, its
// fingerprint field set to fp ("" drops it), and returns its path.
func rewriteKeyFile(t *testing.T, path, name, fp string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kf, err := crypto.ParseKeyFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	kf.Fingerprint = fp
	data, err := kf.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if fp == "" && strings.Contains(string(data), "fingerprint") {
		t.Fatalf("key file still carries a fingerprint: %s", data)
	}
	return fixture.WriteFile(t, t.TempDir(), name, data)
}

// asker counts the passphrase asked for each key file, as the terminal
// prompt or the environment would give it.
type asker struct {
	mu    sync.Mutex
	asked map[string]int
}

func (a *asker) open(ctx context.Context, path string) (*crypto.Config, error) {
	return keys.Open(ctx, path, func() ([]byte, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.asked[path]++
		return []byte(keyPass), nil
	})
}

func (a *asker) total() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.asked {
		n += c
	}
	return n
}

// TestKeySet: with several key files each snapshot gets the key its
// manifest names, chosen by the fingerprint each key file carries (read
// without a passphrase); only the keys needed are opened, each at most
// once; a key file without the fingerprint field is opened only when no
// other has the key; a snapshot no given key opens is a KeyError (key
// missing, key mismatch, key error), no damage.
func TestKeySet(t *testing.T) {
	s := newTwoKeyStore(t)
	store := fixture.OpenStore(t, s.dir)
	type want struct {
		snap   index.Snapshot
		key    *crypto.Config // the key read with; nil for none
		status string         // a KeyError's Status, else ""
		cause  error          // errors.Is of the error, when status is set
		names  []string       // said by the error, when status is set
	}
	cases := []struct {
		name  string
		files []string
		def   string // DefaultFile
		reads []want
		asked map[string]int // passphrases asked per key file, after all reads
		note  string         // said, when set
	}{
		{name: "two keys by fingerprint",
			files: []string{s.fileA, s.fileB},
			reads: []want{{snap: s.encA, key: s.ccA}, {snap: s.encB, key: s.ccB}, {snap: s.signB, key: s.ccB}, {snap: s.plain}, {snap: s.encA, key: s.ccA}},
			asked: map[string]int{s.fileA: 1, s.fileB: 1}},
		{name: "unused key not opened",
			files: []string{s.fileC, s.fileB, s.fileA},
			reads: []want{{snap: s.encA, key: s.ccA}, {snap: s.plain}},
			asked: map[string]int{s.fileA: 1}},
		{name: "plain snapshots open no key",
			files: []string{s.fileA, s.fileB},
			reads: []want{{snap: s.plain}},
			asked: map[string]int{}},
		{name: "key file without fingerprint opened only for a key no other has",
			files: []string{s.bareB, s.fileA},
			reads: []want{{snap: s.encA, key: s.ccA}, {snap: s.encB, key: s.ccB}},
			asked: map[string]int{s.fileA: 1, s.bareB: 1},
			note:  "carries no fingerprint"},
		{name: "key missing: no key opened",
			files: []string{s.fileB, s.fileC},
			reads: []want{{snap: s.encA, status: snapshot.KeyMissing, cause: index.ErrMissingKey}, {snap: s.encB, key: s.ccB}},
			asked: map[string]int{s.fileB: 1}},
		{name: "key mismatch: the key file without fingerprint is another key",
			files: []string{s.bareB},
			reads: []want{{snap: s.encA, status: snapshot.KeyMismatch, cause: index.ErrWrongKey}, {snap: s.encB, key: s.ccB}},
			asked: map[string]int{s.bareB: 1}},
		{name: "a key file whose fingerprint claim its key belies",
			files: []string{s.lying, s.fileB},
			reads: []want{{snap: s.encA, status: snapshot.KeyUnopened, cause: crypto.ErrKeyFingerprint}, {snap: s.encB, key: s.ccB}},
			asked: map[string]int{s.lying: 1, s.fileB: 1}},
		{name: "an old copy under another passphrase before the key: the next is tried",
			files: []string{s.oldA, s.fileA, s.fileB},
			reads: []want{{snap: s.encA, key: s.ccA}, {snap: s.encA, key: s.ccA}, {snap: s.encB, key: s.ccB}},
			asked: map[string]int{s.oldA: 1, s.fileA: 1, s.fileB: 1}},
		{name: "a file claiming the key's fingerprint does not block the key",
			files: []string{s.lying, s.fileA},
			reads: []want{{snap: s.encA, key: s.ccA}, {snap: s.encA, key: s.ccA}},
			asked: map[string]int{s.lying: 1, s.fileA: 1}},
		{name: "claims that fail, then the key file without fingerprint",
			files: []string{s.lying, s.oldA, s.bareA},
			reads: []want{{snap: s.encA, key: s.ccA}},
			asked: map[string]int{s.lying: 1, s.oldA: 1, s.bareA: 1},
			note:  "carries no fingerprint"},
		{name: "every key file claiming the key fails: each named with why",
			files: []string{s.oldA, s.lying, s.fileB},
			reads: []want{
				{snap: s.encA, status: snapshot.KeyUnopened, cause: crypto.ErrWrongPassphrase, names: []string{s.oldA, "wrong passphrase", s.lying, "not the key it names"}},
				{snap: s.encA, status: snapshot.KeyUnopened, cause: crypto.ErrKeyFingerprint, names: []string{s.oldA, s.lying}},
				{snap: s.encB, key: s.ccB}},
			asked: map[string]int{s.oldA: 1, s.lying: 1, s.fileB: 1}},
		{name: "the default key file joins the set",
			files: []string{s.fileA}, def: s.fileB,
			reads: []want{{snap: s.encA, key: s.ccA}, {snap: s.encB, key: s.ccB}},
			asked: map[string]int{s.fileA: 1, s.fileB: 1},
			note:  "using the default key file"},
		{name: "the default key file not opened when another has the key",
			files: []string{s.fileA}, def: s.fileB,
			reads: []want{{snap: s.encA, key: s.ccA}, {snap: s.plain}},
			asked: map[string]int{s.fileA: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, said := &asker{asked: map[string]int{}}, &notes{}
			ks, err := snapshot.NewKeys(ctx, snapshot.KeyOptions{Files: c.files, DefaultFile: c.def, Fingerprint: keys.Fingerprint, Open: a.open, Note: said.note})
			if err != nil {
				t.Fatal(err)
			}
			if n := a.total(); n != 0 {
				t.Fatalf("NewKeys asked %d passphrase(s), want none before a snapshot needs a key", n)
			}
			for _, w := range c.reads {
				r, err := snapshot.OpenSnapshot(ctx, store, w.snap, ks)
				if w.status != "" {
					var ke *snapshot.KeyError
					if !errors.As(err, &ke) || ke.Status != w.status || !errors.Is(err, w.cause) {
						t.Fatalf("%s: %v, want a KeyError %s matching %v", w.snap, err, w.status, w.cause)
					}
					if ke.Fingerprint != s.ccA.Fingerprint() || !strings.Contains(err.Error(), s.ccA.Fingerprint().String()) {
						t.Errorf("%s: %v does not name the manifest's key %s", w.snap, err, s.ccA.Fingerprint())
					}
					for _, n := range w.names {
						if !strings.Contains(err.Error(), n) {
							t.Errorf("%s: %v does not say %q", w.snap, err, n)
						}
					}
					if w.status != snapshot.KeyUnopened && (!strings.Contains(err.Error(), "--keyfile") || strings.Contains(err.Error(), "--crypt-mode none")) {
						t.Errorf("%s (encrypted): %v, want the --keyfile hint and no --crypt-mode none", w.snap, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", w.snap, err)
				}
				if r.Key() != w.key && (r.Key() == nil || w.key == nil || r.Key().Fingerprint() != w.key.Fingerprint()) {
					t.Errorf("%s read with key %v, want %v", w.snap, r.Key(), w.key)
				}
			}
			a.mu.Lock()
			if fmt.Sprint(a.asked) != fmt.Sprint(c.asked) {
				t.Errorf("passphrases asked %v, want %v", a.asked, c.asked)
			}
			a.mu.Unlock()
			if !strings.Contains(said.all(), c.note) {
				t.Errorf("notes %q, want %q", said.all(), c.note)
			}
		})
	}
}

// TestKeySetSignOnlyHint: a signed-only snapshot without its key says that
// --crypt-mode none reads its (unencrypted) data, and that is so.
func TestKeySetSignOnlyHint(t *testing.T) {
	s := newTwoKeyStore(t)
	store := fixture.OpenStore(t, s.dir)
	a := &asker{asked: map[string]int{}}
	ks, err := snapshot.NewKeys(ctx, snapshot.KeyOptions{Files: []string{s.fileA}, Fingerprint: keys.Fingerprint, Open: a.open})
	if err != nil {
		t.Fatal(err)
	}
	_, err = snapshot.OpenSnapshot(ctx, store, s.signB, ks)
	var ke *snapshot.KeyError
	if !errors.As(err, &ke) || ke.Status != snapshot.KeyMissing || !ke.SignOnly || !strings.Contains(err.Error(), "--crypt-mode none") || !strings.Contains(err.Error(), s.ccB.Fingerprint().String()) {
		t.Fatalf("sign-only without its key: %v, want key missing naming %s and --crypt-mode none", err, s.ccB.Fingerprint())
	}
	none, err := snapshot.NewKeys(ctx, snapshot.KeyOptions{CryptMode: "none"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := snapshot.OpenSnapshot(ctx, store, s.signB, none)
	if err != nil || !r.KeyMissing() {
		t.Fatalf("--crypt-mode none: %v (key missing %v)", err, r != nil && r.KeyMissing())
	}
	if a.total() != 0 {
		t.Errorf("asked %v, want no passphrase for a key that is not the snapshot's", a.asked)
	}
}

// TestKeySetConcurrent: snapshots read at once open each key once.
func TestKeySetConcurrent(t *testing.T) {
	s := newTwoKeyStore(t)
	store := fixture.OpenStore(t, s.dir)
	a := &asker{asked: map[string]int{}}
	ks, err := snapshot.NewKeys(ctx, snapshot.KeyOptions{Files: []string{s.fileA, s.bareB, s.fileC}, Fingerprint: keys.Fingerprint, Open: a.open})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		for _, snap := range []index.Snapshot{s.encA, s.encB, s.signB, s.plain} {
			wg.Go(func() {
				if _, err := snapshot.OpenSnapshot(ctx, store, snap, ks); err != nil {
					t.Errorf("%s: %v", snap, err)
				}
			})
		}
	}
	wg.Wait()
	if want := map[string]int{s.fileA: 1, s.bareB: 1}; fmt.Sprint(a.asked) != fmt.Sprint(want) {
		t.Errorf("passphrases asked %v, want %v", a.asked, want)
	}
}

// TestKeySetCandidatesConcurrent: snapshots read at once, with an old copy
// of key A under another passphrase and a file lying about key A's
// fingerprint before key A's file, all get key A; each file is opened once.
func TestKeySetCandidatesConcurrent(t *testing.T) {
	s := newTwoKeyStore(t)
	store := fixture.OpenStore(t, s.dir)
	a := &asker{asked: map[string]int{}}
	ks, err := snapshot.NewKeys(ctx, snapshot.KeyOptions{Files: []string{s.oldA, s.lying, s.fileA, s.fileB}, Fingerprint: keys.Fingerprint, Open: a.open})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		for _, snap := range []index.Snapshot{s.encA, s.encB} {
			wg.Go(func() {
				if _, err := snapshot.OpenSnapshot(ctx, store, snap, ks); err != nil {
					t.Errorf("%s: %v", snap, err)
				}
			})
		}
	}
	wg.Wait()
	if want := map[string]int{s.oldA: 1, s.lying: 1, s.fileA: 1, s.fileB: 1}; fmt.Sprint(a.asked) != fmt.Sprint(want) {
		t.Errorf("passphrases asked %v, want %v", a.asked, want)
	}
}

// TestKeyErrorText: each KeyError says its status once ("missing key",
// never "missing key (key missing, …)"), the fingerprint and what to do.
func TestKeyErrorText(t *testing.T) {
	_, cc := fixture.Key(t, 7)
	fp := cc.Fingerprint()
	for _, c := range []struct {
		e        *snapshot.KeyError
		want     []string
		wantNone []string
	}{
		{&snapshot.KeyError{Status: snapshot.KeyMissing, Fingerprint: fp, Given: []string{"a.json (ab:cd)"}},
			[]string{"missing key", fp.String(), "a.json (ab:cd)", "give --keyfile"}, []string{"key missing", "missing key (key"}},
		{&snapshot.KeyError{Status: snapshot.KeyMismatch, Fingerprint: fp},
			[]string{"wrong key", "key mismatch", fp.String()}, []string{"key missing"}},
		{&snapshot.KeyError{Status: snapshot.KeyUnopened, Fingerprint: fp, File: "a.json", Err: errors.New("key file a.json: wrong passphrase")},
			[]string{fp.String(), "a.json", "wrong passphrase"}, []string{"give --keyfile"}},
	} {
		msg := c.e.Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %q lacks %q", c.e.Status, msg, w)
			}
		}
		for _, w := range c.wantNone {
			if strings.Contains(msg, w) {
				t.Errorf("%s: %q says %q", c.e.Status, msg, w)
			}
		}
	}
}

// TestKeyUnopenedWithoutFingerprint: a manifest that needs a key and
// names no fingerprint gets the first key file; when that file is not
// opened (a wrong passphrase), the error is a KeyError (KeyUnopened, no
// damage) naming the file, as for a manifest that names its key.
func TestKeyUnopenedWithoutFingerprint(t *testing.T) {
	wrong := fmt.Errorf("key file a.json: %w", crypto.ErrWrongPassphrase)
	k, err := snapshot.NewKeys(context.Background(), snapshot.KeyOptions{
		Files: []string{"a.json", "b.json"},
		Open:  func(context.Context, string) (*crypto.Config, error) { return nil, wrong },
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &index.Manifest{BackupType: "vm", BackupID: "100", Files: []index.FileInfo{{Filename: "drive-scsi0.img.fidx", CryptMode: index.CryptEncrypt}}}
	_, err = k.ForManifest(m)
	var ke *snapshot.KeyError
	if !errors.As(err, &ke) || ke.Status != snapshot.KeyUnopened || ke.File != "a.json" || !errors.Is(err, crypto.ErrWrongPassphrase) ||
		strings.Contains(err.Error(), "00:00") || !strings.Contains(err.Error(), "a.json") {
		t.Errorf("ForManifest: %v, want a KeyError (key-error) naming a.json", err)
	}
}
