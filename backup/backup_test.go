package backup_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/index"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
)

func TestParseSpec(t *testing.T) {
	for _, c := range []struct {
		spec, name, path string
		ok               bool
	}{
		{"drive-scsi0.img:/dev/vg/x", "drive-scsi0.img", "/dev/vg/x", true},
		{"qemu-server.conf:/etc/pve/qemu-server/100.conf", "qemu-server.conf", "/etc/pve/qemu-server/100.conf", true},
		{"client.log:/tmp/a:b", "client.log", "/tmp/a:b", true},
		{"root.pxar:/", "root.pxar", "/", true},
		{"etc.pxar:/etc", "etc.pxar", "/etc", true},
		{".pxar:/", "", "", false},
		{"disk.qcow2:/x", "", "", false},
		{"noext:/x", "", "", false},
		{"a/b.img:/x", "", "", false},
		{"drive.img", "", "", false},
		{"drive.img:", "", "", false},
		{":/x", "", "", false},
	} {
		s, err := backup.ParseSpec(c.spec)
		if (err == nil) != c.ok || s.Name != c.name || s.Path != c.path {
			t.Errorf("ParseSpec(%q) = %+v, %v", c.spec, s, err)
		}
	}
}

func run(t *testing.T, dir string, opts backup.Options, srcs ...backup.Source) (*backup.Result, *backup.Stats, error) {
	t.Helper()
	s, err := chunkstore.OpenLocal(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var st backup.Stats
	res, err := backup.Run(context.Background(), s, srcs, opts, &st)
	return res, &st, err
}

// TestOptionErrors: each bad option or source is refused with its own
// error (naming the value or file at fault), and no manifest is written.
func TestOptionErrors(t *testing.T) {
	dir := fixture.NewStore(t)
	img := fixture.WriteFile(t, t.TempDir(), "d.raw", fixture.Mixed(100<<10, 1))
	empty := fixture.WriteFile(t, t.TempDir(), "e.raw", nil)
	src := backup.Source{Name: "drive-scsi0.img", Path: img}
	snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
	for _, c := range []struct {
		name string
		opts backup.Options
		srcs []backup.Source
		want []string // substrings of the error
		is   error    // nil, or an error the result must wrap
	}{
		{"chunk-size-small", backup.Options{ChunkSize: 32 << 10}, []backup.Source{src}, []string{"chunk size 32768", "power of two"}, nil},
		{"chunk-size-odd", backup.Options{ChunkSize: 3 << 16}, []backup.Source{src}, []string{"chunk size 196608", "power of two"}, nil},
		{"chunk-size-big", backup.Options{ChunkSize: 8 << 20}, []backup.Source{src}, []string{"chunk size 8388608", "power of two"}, nil},
		{"nothing", backup.Options{}, nil, []string{"nothing to back up"}, nil},
		{"twice", backup.Options{}, []backup.Source{src, src}, []string{"archive drive-scsi0.img given twice"}, nil},
		{"sign-only-without-key", backup.Options{SignOnly: true}, []backup.Source{src}, []string{"sign-only needs a key"}, nil},
		{"empty-image", backup.Options{}, []backup.Source{{Name: "drive-scsi0.img", Path: empty}}, []string{empty, "empty image"}, nil},
		{"missing-image", backup.Options{}, []backup.Source{{Name: "drive-scsi0.img", Path: img + ".nope"}}, []string{img + ".nope"}, fs.ErrNotExist},
	} {
		c.opts.Snapshot = snap
		_, _, err := run(t, dir, c.opts, c.srcs...)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: error %q does not wrap %v", c.name, err, c.is)
		}
	}
	if _, err := os.Stat(fixture.SnapPath(dir, snap, "index.json.blob")); err == nil {
		t.Error("a failed backup wrote a manifest")
	}
}

// TestIndexAndStore checks what a backup writes: digests of every chunk
// (keyed when encrypted), zero chunks as the zero digest, the zero chunk
// stored once, crypt modes of chunks, blobs and manifest, stats, dedup
// against an existing snapshot, and refusal to overwrite a snapshot.
func TestIndexAndStore(t *testing.T) {
	_, cc := fixture.Key(t, 3)
	for _, mode := range []index.CryptMode{index.CryptNone, index.CryptEncrypt, index.CryptSignOnly} {
		t.Run(string(mode), func(t *testing.T) {
			const cs = 64 << 10
			dir := fixture.NewStore(t)
			src := t.TempDir()
			a := fixture.Build(1, fixture.Region{Kind: fixture.Text, Len: cs})
			var data []byte
			for _, p := range [][]byte{a, make([]byte, 2*cs), a, fixture.Build(2, fixture.Region{Kind: fixture.Random, Len: cs + 100})} {
				data = append(data, p...)
			}
			// positions: a, 0, 0, a, r, short tail → 6 positions, 3 unique non-zero
			img := fixture.WriteFile(t, src, "d.raw", data)
			conf := fixture.WriteFile(t, src, "c.conf", []byte("x: y\n"))
			opts := backup.Options{Snapshot: fixture.Snap(t, "prod", "vm", "100", fixture.T0), ChunkSize: cs}
			var key *crypto.Config // chunk key
			switch mode {
			case index.CryptEncrypt:
				opts.Key, key = cc, cc
			case index.CryptSignOnly:
				opts.Key, opts.SignOnly = cc, true
			}
			srcs := []backup.Source{{Name: "drive-scsi0.img", Path: img}, {Name: "qemu-server.conf", Path: conf}}
			res, st, err := run(t, dir, opts, srcs...)
			if err != nil {
				t.Fatal(err)
			}
			m := fixture.Manifest(t, dir, opts.Snapshot)
			if len(m.Files) != 2 || m.Files[0].Filename != "drive-scsi0.img.fidx" || m.Files[1].Filename != "qemu-server.conf.blob" {
				t.Fatalf("manifest files %+v", m.Files)
			}
			for _, f := range m.Files {
				if f.CryptMode != mode {
					t.Errorf("%s: crypt mode %s, want %s", f.Filename, f.CryptMode, mode)
				}
			}
			if (m.Signature != nil) != (mode != index.CryptNone) || m.Check(opts.Key) != nil {
				t.Errorf("signature %v, check %v", m.Signature, m.Check(opts.Key))
			}
			if res.Manifest.Files[0].Size != uint64(len(data)) || m.Files[0].Size != uint64(len(data)) {
				t.Errorf("manifest size %d, want %d", m.Files[0].Size, len(data))
			}
			h, ds := fixture.Digests(t, fixture.SnapPath(dir, opts.Snapshot, "drive-scsi0.img.fidx"))
			if h.Size != uint64(len(data)) || h.ChunkSize != cs || len(ds) != 6 {
				t.Fatalf("index: size %d chunk size %d, %d digests", h.Size, h.ChunkSize, len(ds))
			}
			zd := fixture.ZeroDigest(cs, key)
			for i, d := range ds {
				chunk := data[i*cs : min((i+1)*cs, len(data))]
				if want := key.ChunkDigest(chunk); d != want {
					t.Errorf("digest %d: %s, want %s", i, d, want)
				}
				raw, err := os.ReadFile(fixture.ChunkPath(dir, d))
				if err != nil {
					t.Errorf("chunk %d not stored: %v", i, err)
					continue
				}
				k, err := chunkstore.Kind(raw)
				if err != nil || k.Encrypted() != (mode == index.CryptEncrypt) {
					t.Errorf("chunk %d: kind %s, %v (mode %s)", i, k, err, mode)
				}
			}
			if ds[1] != zd || ds[2] != zd {
				t.Error("zero chunks do not carry the zero digest")
			}
			blob, _ := os.ReadFile(fixture.SnapPath(dir, opts.Snapshot, "qemu-server.conf.blob"))
			if k, err := chunkstore.Kind(blob); err != nil || k.Encrypted() != (mode == index.CryptEncrypt) {
				t.Errorf("blob kind %s, %v", k, err)
			}
			if owner, err := os.ReadFile(filepath.Join(dir, "ns", "prod", "vm", "100", "owner")); err != nil || string(owner) != "root@pam\n" {
				t.Errorf("owner %q, %v", owner, err)
			}
			// 6 chunks: 2 all zeros, 4 with data of which 3 unique (1
			// repeated); the zero chunk counted apart.
			want := stats{chunks: 6, zeroChunks: 2, zeroBytes: 2 * cs, uploaded: 3, dedup: 1, zeroUploaded: 1}
			if got := statsOf(st); got != want {
				t.Errorf("stats %+v, want %+v", got, want)
			}
			// Restore and verify see the same counts: the unique chunks with
			// data they fetch, and the zero chunks they never fetch.
			store := fixture.OpenStore(t, dir)
			plan, _, err := restore.LoadPlan(context.Background(), store, opts.Snapshot.Dir(), m, "drive-scsi0.img.fidx", opts.Key)
			if err != nil {
				t.Fatal(err)
			}
			if n := uint64(len(plan.Chunks)); n != st.Uploaded.Load()+st.Existing.Load() || plan.ZeroBytes/cs != st.ZeroChunks.Load() {
				t.Errorf("restore plan: %d chunks with data, %d zero chunks; backup: %d written + %d already there, %d zero chunks",
					n, plan.ZeroBytes/cs, st.Uploaded.Load(), st.Existing.Load(), st.ZeroChunks.Load())
			}

			// The same snapshot again is refused; a new one finds every chunk stored.
			if _, _, err := run(t, dir, opts, srcs...); !errors.Is(err, backup.ErrSnapshotExists) {
				t.Errorf("second backup of the same snapshot: %v", err)
			}
			opts.Snapshot.Time += 60
			if _, st, err = run(t, dir, opts, srcs...); err != nil {
				t.Fatal(err)
			}
			want = stats{chunks: 6, zeroChunks: 2, zeroBytes: 2 * cs, existing: 3, dedup: 1, zeroExisting: 1}
			if got := statsOf(st); got != want {
				t.Errorf("incremental: stats %+v, want %+v", got, want)
			}
		})
	}
}

// stats is backup.Stats' counts, for comparing.
type stats struct {
	chunks, zeroChunks, zeroBytes, uploaded, existing, dedup, zeroUploaded, zeroExisting uint64
}

func statsOf(st *backup.Stats) stats {
	return stats{st.Chunks.Load(), st.ZeroChunks.Load(), st.ZeroBytes.Load(), st.Uploaded.Load(), st.Existing.Load(),
		st.DedupHits.Load(), st.ZeroUploaded.Load(), st.ZeroExisting.Load()}
}

// TestStatsZeroChunkOnce: of two images with zero chunks, the zero chunk
// is stored and counted once, never as a chunk with data or a repeat.
func TestStatsZeroChunkOnce(t *testing.T) {
	const cs = 64 << 10
	dir := fixture.NewStore(t)
	src := t.TempDir()
	a := fixture.Build(1, fixture.Region{Kind: fixture.Text, Len: cs})
	b := fixture.Build(2, fixture.Region{Kind: fixture.Random, Len: cs})
	one := fixture.WriteFile(t, src, "1.raw", slices.Concat(a, make([]byte, cs), b))
	two := fixture.WriteFile(t, src, "2.raw", slices.Concat(make([]byte, 2*cs), a))
	_, st, err := run(t, dir, backup.Options{Snapshot: fixture.Snap(t, "", "vm", "100", fixture.T0), ChunkSize: cs},
		backup.Source{Name: "drive-scsi0.img", Path: one}, backup.Source{Name: "drive-scsi1.img", Path: two})
	if err != nil {
		t.Fatal(err)
	}
	// 6 chunks: 3 all zeros; a, b written, a repeated; the zero chunk written once.
	want := stats{chunks: 6, zeroChunks: 3, zeroBytes: 3 * cs, uploaded: 2, dedup: 1, zeroUploaded: 1}
	if got := statsOf(st); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	var files int
	filepath.WalkDir(filepath.Join(dir, ".chunks"), func(_ string, de fs.DirEntry, _ error) error {
		if de != nil && de.Type().IsRegular() {
			files++
		}
		return nil
	})
	if files != 3 {
		t.Errorf("%d chunk files, want 3 (a, b and the zero chunk)", files)
	}
}

// TestSparseImage: holes (never written) are zero chunks.
func TestSparseImage(t *testing.T) {
	const cs = 64 << 10
	p := filepath.Join(t.TempDir(), "sparse.raw")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	data := fixture.Build(4, fixture.Region{Kind: fixture.Random, Len: 1000})
	f.WriteAt(data, 5*cs+10)
	f.Truncate(64 * cs)
	f.Close()
	dir := fixture.NewStore(t)
	snap := fixture.Snap(t, "", "host", "h", fixture.T0)
	fixture.Backup(t, dir, snap, backup.Options{ChunkSize: cs}, backup.Source{Name: "root.img", Path: p})
	_, ds := fixture.Digests(t, fixture.SnapPath(dir, snap, "root.img.fidx"))
	zd := fixture.ZeroDigest(cs, nil)
	full := make([]byte, cs)
	copy(full[10:], data)
	for i, d := range ds {
		want := zd
		if i == 5 {
			want = (*crypto.Config)(nil).ChunkDigest(full)
		}
		if d != want {
			t.Errorf("position %d: %s, want %s", i, d, want)
		}
	}
	if len(ds) != 64 {
		t.Errorf("%d positions", len(ds))
	}
	if m := fixture.Manifest(t, dir, snap); !strings.HasPrefix(m.Files[0].Filename, "root.img") {
		t.Errorf("manifest %+v", m.Files)
	}
}
