package snapshot_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

var ctx = context.Background()

func ns(t *testing.T, s string) index.Namespace {
	n, err := index.ParseNamespace(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// datastore writes small snapshots: root vm/100 at T0 and T0+3600, vm/101,
// ct/200 and host/h1; prod vm/100; prod/db vm/100 at T0; plus an unfinished
// root vm/100 at T0+7200 and stray files that are not snapshots.
func datastore(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	dir := fixture.NewStore(t)
	src := t.TempDir()
	images := map[string][]byte{}
	add := func(nsName, typ, id string, epoch int64, seed uint64) {
		data := fixture.Mixed(100<<10+int64(seed), seed)
		snap := fixture.Snap(t, nsName, typ, id, epoch)
		images[snap.String()] = data
		img := fixture.WriteFile(t, src, strings.NewReplacer("/", "_", ":", "_").Replace(snap.String()), data)
		conf := fixture.WriteFile(t, src, "conf"+string(rune('a'+seed)), []byte("conf "+snap.String()))
		fixture.Backup(t, dir, snap, backup.Options{ChunkSize: 64 << 10},
			backup.Source{Name: "drive-scsi0.img", Path: img}, backup.Source{Name: "qemu-server.conf", Path: conf})
	}
	add("", "vm", "100", fixture.T0+3600, 1)
	add("", "vm", "100", fixture.T0, 2)
	add("", "vm", "101", fixture.T0, 3)
	add("", "ct", "200", fixture.T0, 4)
	add("", "host", "h1", fixture.T0, 5)
	add("prod", "vm", "100", fixture.T0+60, 6)
	add("prod/db", "vm", "100", fixture.T0, 7)
	// Unfinished: newest in its group, but without a manifest.
	unf := fixture.SnapPath(dir, fixture.Snap(t, "", "vm", "100", fixture.T0+7200), "")
	fixture.CopyDir(t, fixture.SnapPath(dir, fixture.Snap(t, "", "vm", "100", fixture.T0), ""), unf)
	os.Remove(filepath.Join(unf, snapshot.ManifestName))
	// Strays: a group owner file, a non-snapshot directory, a bad time.
	os.WriteFile(filepath.Join(dir, "vm", "100", "notes"), []byte("x"), 0o644)
	os.MkdirAll(filepath.Join(dir, "vm", "100", "not-a-time"), 0o755)
	os.WriteFile(filepath.Join(dir, "vm", "100", "not-a-time", snapshot.ManifestName), []byte("x"), 0o644)
	return dir, images
}

func TestList(t *testing.T) {
	dir, _ := datastore(t)
	store := fixture.OpenStore(t, dir)
	cases := []struct {
		ns   string
		want []string
	}{
		{"", []string{"ct/200/2026-11-29T10:00:00Z", "host/h1/2026-11-29T10:00:00Z", "vm/100/2026-11-29T10:00:00Z", "vm/100/2026-11-29T11:00:00Z", "vm/101/2026-11-29T10:00:00Z"}},
		{"prod", []string{"ns/prod/vm/100/2026-11-29T10:01:00Z"}},
		{"prod/db", []string{"ns/prod/ns/db/vm/100/2026-11-29T10:00:00Z"}},
		{"nonexistent", nil},
	}
	for _, c := range cases {
		list, err := snapshot.List(ctx, store, ns(t, c.ns))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, i := range list {
			got = append(got, i.Snapshot.String())
			names := map[string]bool{}
			for _, f := range i.Files {
				names[f.Path] = f.Size > 0
			}
			if !names[snapshot.ManifestName] || !names["drive-scsi0.img.fidx"] || !names["qemu-server.conf.blob"] || len(names) != 3 {
				t.Errorf("%s: files %v", i.Snapshot, i.Files)
			}
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("ns %q: got %v, want %v", c.ns, got, c.want)
		}
	}
}

func TestResolve(t *testing.T) {
	dir, _ := datastore(t)
	store := fixture.OpenStore(t, dir)
	cases := []struct {
		ns, ref string
		want    string // "" = error
		err     error
	}{
		{"", "vm/100", "vm/100/2026-11-29T11:00:00Z", nil},
		{"", "vm/100/2026-11-29T10:00:00Z", "vm/100/2026-11-29T10:00:00Z", nil},
		{"", "vm/101", "vm/101/2026-11-29T10:00:00Z", nil},
		{"", "host/h1", "host/h1/2026-11-29T10:00:00Z", nil},
		{"prod", "vm/100", "ns/prod/vm/100/2026-11-29T10:01:00Z", nil},
		{"prod/db", "vm/100", "ns/prod/ns/db/vm/100/2026-11-29T10:00:00Z", nil},
		{"", "vm/100/2026-11-29T12:00:00Z", "", snapshot.ErrNoSnapshot}, // unfinished
		{"", "vm/100/2026-11-29T13:00:00Z", "", snapshot.ErrNoSnapshot}, // absent
		{"", "vm/102", "", snapshot.ErrNoSnapshot},
		{"prod", "vm/101", "", snapshot.ErrNoSnapshot},
		{"prod", "vm/100/2026-11-29T10:00:00Z", "", snapshot.ErrNoSnapshot},
		// A reference carrying its namespace (as List prints it) resolves
		// there, never silently in the root namespace.
		{"", "ns/prod/vm/100/2026-11-29T10:01:00Z", "ns/prod/vm/100/2026-11-29T10:01:00Z", nil},
		{"", "ns/prod/vm/100", "ns/prod/vm/100/2026-11-29T10:01:00Z", nil},
		{"", "ns/prod/ns/db/vm/100", "ns/prod/ns/db/vm/100/2026-11-29T10:00:00Z", nil},
		{"prod", "ns/prod/vm/100", "ns/prod/vm/100/2026-11-29T10:01:00Z", nil},
		{"", "ns/prod/vm/100/2026-11-29T10:00:00Z", "", snapshot.ErrNoSnapshot},
		{"prod/db", "ns/prod/vm/100", "", index.ErrBadName},
		{"", "vm", "", index.ErrBadName},
		{"", "xx/100", "", index.ErrBadName},
		{"", "vm/100/yesterday", "", index.ErrBadName},
		{"", "vm/../100", "", index.ErrBadName},
	}
	for _, c := range cases {
		s, err := snapshot.Resolve(ctx, store, ns(t, c.ns), c.ref)
		if c.want == "" {
			if !errors.Is(err, c.err) {
				t.Errorf("%q %q: got %v (%v), want %v", c.ns, c.ref, s, err, c.err)
			}
			continue
		}
		if err != nil || s.String() != c.want {
			t.Errorf("%q %q: got %v, %v, want %s", c.ns, c.ref, s, err, c.want)
		}
	}
}

func TestLoadManifestAndReadBlob(t *testing.T) {
	dir := fixture.NewStore(t)
	src := t.TempDir()
	key, cc := fixture.Key(t, 1)
	_, other := fixture.Key(t, 2)
	_ = key
	conf := []byte("cores: 2\n")
	img := fixture.WriteFile(t, src, "d.raw", fixture.Mixed(70<<10, 1))
	cf := fixture.WriteFile(t, src, "c.conf", conf)
	srcs := []backup.Source{{Name: "drive-scsi0.img", Path: img}, {Name: "qemu-server.conf", Path: cf}}
	plain := fixture.Snap(t, "", "vm", "1", fixture.T0)
	enc := fixture.Snap(t, "", "vm", "2", fixture.T0)
	signed := fixture.Snap(t, "", "vm", "3", fixture.T0)
	fixture.Backup(t, dir, plain, backup.Options{ChunkSize: 64 << 10}, srcs...)
	fixture.Backup(t, dir, enc, backup.Options{ChunkSize: 64 << 10, Key: cc}, srcs...)
	fixture.Backup(t, dir, signed, backup.Options{ChunkSize: 64 << 10, Key: cc, SignOnly: true}, srcs...)
	store := fixture.OpenStore(t, dir)

	for _, c := range []struct {
		snap index.Snapshot
		key  *crypto.Config
		err  error
	}{
		{plain, nil, nil},
		{plain, cc, nil}, // unsigned manifest: a key does not hurt
		{enc, cc, nil},
		{enc, nil, index.ErrMissingKey},
		{enc, other, index.ErrWrongKey},
		{signed, cc, nil},
		{signed, nil, index.ErrMissingKey},
		{signed, other, index.ErrWrongKey},
	} {
		m, err := snapshot.LoadManifest(ctx, store, c.snap, c.key)
		if c.err != nil {
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.snap.Dir()) {
				t.Errorf("%s: got %v, want %v naming the snapshot", c.snap, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.snap, err)
			continue
		}
		data, err := snapshot.ReadBlob(ctx, store, c.snap, m, "qemu-server.conf.blob", c.key)
		if err != nil || string(data) != string(conf) {
			t.Errorf("%s: ReadBlob: %q, %v", c.snap, data, err)
		}
		if _, err := snapshot.ReadBlob(ctx, store, c.snap, m, "fw.conf.blob", c.key); !errors.Is(err, index.ErrNotInManifest) {
			t.Errorf("%s: ReadBlob of an unlisted blob: %v", c.snap, err)
		}
	}

	// Encrypted blob without a key: a decode error naming the file.
	m := fixture.Manifest(t, dir, enc)
	if _, err := snapshot.ReadBlob(ctx, store, enc, m, "qemu-server.conf.blob", nil); !errors.Is(err, chunkstore.ErrNoKey) {
		t.Errorf("encrypted blob without key: %v", err)
	}
	// Damaged blob: csum mismatch with the manifest, named.
	fixture.FlipByte(t, fixture.SnapPath(dir, plain, "qemu-server.conf.blob"), -1)
	m = fixture.Manifest(t, dir, plain)
	if _, err := snapshot.ReadBlob(ctx, store, plain, m, "qemu-server.conf.blob", nil); !errors.Is(err, index.ErrCsumMismatch) || !strings.Contains(err.Error(), "qemu-server.conf.blob") {
		t.Errorf("damaged blob: %v", err)
	}
	// Missing blob.
	os.Remove(fixture.SnapPath(dir, plain, "qemu-server.conf.blob"))
	if _, err := snapshot.ReadBlob(ctx, store, plain, m, "qemu-server.conf.blob", nil); !errors.Is(err, chunkstore.ErrNotFound) {
		t.Errorf("missing blob: %v", err)
	}
	// Tampered signed manifest.
	fixture.RewriteManifest(t, dir, signed, func(m *index.Manifest) { m.Files[1].Size++ })
	if _, err := snapshot.LoadManifest(ctx, store, signed, cc); !errors.Is(err, index.ErrBadSignature) {
		t.Errorf("tampered signed manifest: %v", err)
	}
	// A manifest stored under another snapshot's directory.
	moved := fixture.Snap(t, "", "vm", "1", fixture.T0+1)
	fixture.CopyDir(t, fixture.SnapPath(dir, enc, ""), fixture.SnapPath(dir, moved, ""))
	if _, err := snapshot.LoadManifest(ctx, store, moved, cc); err == nil {
		t.Error("manifest of vm/2 accepted as vm/1")
	}
	// Damaged manifest blob.
	fixture.FlipByte(t, fixture.SnapPath(dir, enc, snapshot.ManifestName), -1)
	if _, err := snapshot.LoadManifest(ctx, store, enc, cc); !errors.Is(err, chunkstore.ErrCRC) || !strings.Contains(err.Error(), snapshot.ManifestName) {
		t.Errorf("damaged manifest: %v", err)
	}
	// No manifest.
	if _, err := snapshot.LoadManifest(ctx, store, fixture.Snap(t, "", "vm", "9", fixture.T0), nil); !errors.Is(err, snapshot.ErrNoSnapshot) {
		t.Errorf("absent manifest: %v", err)
	}
}
