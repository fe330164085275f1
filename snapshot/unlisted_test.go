package snapshot_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/snapshot"
)

// TestListWarnsUnlisted puts entries whose names are no snapshot or
// namespace name into a datastore: listings leave them out, keep every
// snapshot, and say so in one warning per listed directory that counts
// them and names one, escaped; names PBS keeps there itself (owner, notes,
// hidden and lock files) are left out without a word.
func TestListWarnsUnlisted(t *testing.T) {
	const t0 = "2026-11-29T10:00:00Z"
	cases := []struct {
		name   string
		strays []string // datastore-relative files to create
		ns     string   // namespace listed ("" root)
		want   []string // warnings: substrings of each, in order; nil: none
	}{
		{"pbs-own-names", []string{"vm/100/owner", "vm/100/notes", "vm/100/owner.tmp_Ab12Cd", "vm/.lock", "vm/100/.lock", "vm/100/" + t0 + "/.protected", "vm/100/" + t0 + "/client.log.blob"}, "", nil},
		{"encoded-time", []string{"vm/100/2026-11-29T10%3A00%3A00Z/index.json.blob", "vm/100/2026-11-29T10%3A00%3A00Z/drive-scsi0.img.fidx", "vm/100/2026-11-30T10%3A00%3A00Z/index.json.blob"},
			"", []string{"2 entries under vm/ name no snapshot", `e.g. "vm/100/2026-11-29T10%3A00%3A00Z"`}},
		{"bad-id-with-escape", []string{"vm/1\x1b[2J00/" + t0 + "/index.json.blob"}, "", []string{"1 entry under vm/", `e.g. "vm/1\x1b[2J00/` + t0 + `"`}},
		{"junk-files", []string{"vm/junk", "vm/100/junk", "vm/100/" + t0 + "/sub/x.blob"}, "", []string{"3 entries under vm/", `e.g. "vm/100/` + t0 + `/sub"`}},
		{"in-namespace", []string{"ns/prod/ct/200/yesterday/index.json.blob"}, "prod", []string{"1 entry under ns/prod/ct/", `e.g. "ns/prod/ct/200/yesterday"`}},
		{"bad-namespace", []string{"ns/pr%2Fod/vm/100/" + t0 + "/index.json.blob", "ns/pr%2Fod/vm/101/" + t0 + "/index.json.blob", "ns/.hidden/x", "ns/prod/ns/-x/vm/1/" + t0 + "/index.json.blob"},
			"*", []string{"2 entries under ns/ name no namespace", `e.g. "ns/pr%2Fod"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := fixture.NewStore(t)
			snap := fixture.Snap(t, "", "vm", "100", fixture.T0)
			img := fixture.WriteFile(t, t.TempDir(), "disk.raw", fixture.Mixed(64<<10, 1))
			fixture.Backup(t, dir, snap, backup.Options{ChunkSize: 64 << 10}, backup.Source{Name: "drive-scsi0.img", Path: img})
			fixture.Backup(t, dir, fixture.Snap(t, "prod", "vm", "100", fixture.T0), backup.Options{ChunkSize: 64 << 10}, backup.Source{Name: "drive-scsi0.img", Path: img})
			for _, s := range c.strays {
				p := filepath.Join(dir, filepath.FromSlash(s))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			store := fixture.OpenStore(t, dir)
			var mu sync.Mutex
			var said []string
			store.WarnTo(func(msg string) { mu.Lock(); said = append(said, msg); mu.Unlock() })
			if c.ns == "*" {
				list, err := snapshot.Namespaces(ctx, store, nil, -1)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, n := range list {
					names = append(names, n.String())
				}
				if want := []string{"", "prod"}; !reflect.DeepEqual(names, want) {
					t.Errorf("namespaces %q, want %q", names, want)
				}
			} else {
				for range 2 { // a listing repeated in one run warns once
					list, err := snapshot.List(ctx, store, ns(t, c.ns))
					if err != nil {
						t.Fatal(err)
					}
					if len(list) != 1 {
						t.Errorf("%d snapshots listed, want 1", len(list))
					}
				}
			}
			if c.want == nil {
				if len(said) != 0 {
					t.Errorf("warnings %q, want none", said)
				}
				return
			}
			if len(said) != 1 {
				t.Fatalf("warnings %q, want one", said)
			}
			for _, w := range c.want {
				if !strings.Contains(said[0], w) {
					t.Errorf("warning %q does not say %q", said[0], w)
				}
			}
			if strings.ContainsAny(said[0], "\x1b\n\r") {
				t.Errorf("warning %q carries raw control characters", said[0])
			}
		})
	}
}

// TestChainWarnsUnlisted: a listing over several stores says what it left
// out through the chain's warning channel.
func TestChainWarnsUnlisted(t *testing.T) {
	a, b := fixture.NewStore(t), fixture.NewStore(t)
	for _, d := range []string{a, b} {
		p := filepath.Join(d, "vm", "100", "2026-11-29T10%3A00%3A00Z", snapshot.ManifestName)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
	}
	chain, err := chunkstore.NewChain(fixture.OpenStore(t, a), fixture.OpenStore(t, b))
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	chain.WarnTo(func(msg string) { said = append(said, msg) })
	if _, err := snapshot.List(ctx, chain, nil); err != nil {
		t.Fatal(err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "1 entry under vm/ names no snapshot") {
		t.Errorf("warnings %q, want one about 1 entry under vm/", said)
	}
}
