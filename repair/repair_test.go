package repair_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/repair"
)

// racingMirror is a mirror whose every read first has another writer (a
// backup) store the good chunk into the primary: what repair finds when it
// checks the primary again before writing.
type racingMirror struct {
	chunkstore.Store
	primary chunkstore.WriteStore
	blob    []byte
}

func (m *racingMirror) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	if r, ok := m.primary.(chunkstore.ChunkReplacer); ok {
		if _, err := r.ReplaceChunk(ctx, d, nil, m.blob); err != nil {
			return nil, err
		}
	}
	return m.Store.ReadChunk(ctx, d, buf, limit)
}

// TestRepairNeverReplacesGood: a chunk missing or damaged in the primary
// that another writer stores whole while repair fetches its copy is left
// as that writer stored it ("good meanwhile"): repair writes nothing over
// it and keeps no copy aside.
func TestRepairNeverReplacesGood(t *testing.T) {
	ctx := context.Background()
	for _, damaged := range []bool{false, true} {
		data := fixture.Build(7, fixture.Region{Kind: fixture.Random, Len: 4096})
		var nokey *crypto.Config
		d := nokey.ChunkDigest(data)
		blob := fixture.Encode(t, data, nil, true)
		open := func() (*chunkstore.Local, string) {
			dir := fixture.NewStore(t)
			s, err := chunkstore.OpenLocal(dir, true)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s, dir
		}
		primary, pdir := open()
		mirror, _ := open()
		if _, err := mirror.WriteChunk(ctx, d, blob); err != nil {
			t.Fatal(err)
		}
		if damaged {
			bad := append([]byte(nil), blob...)
			bad[len(bad)/2] ^= 1
			if _, err := primary.WriteChunk(ctx, d, bad); err != nil {
				t.Fatal(err)
			}
		}
		r := repair.New(primary, []chunkstore.Store{&racingMirror{mirror, primary, blob}}, repair.Options{})
		items, n, err := r.Run(ctx, []repair.Chunk{{Digest: d, Length: len(data)}})
		if err != nil || len(items) != 1 || items[0].Action != repair.ActionGoodNow || n.GoodNow != 1 || n.Repaired != 0 {
			t.Fatalf("damaged %v: items %+v, counts %+v, %v; want good meanwhile", damaged, items, n, err)
		}
		// The other writer kept the damaged copy aside (.0.bad); repair
		// added none.
		dir := filepath.Dir(fixture.ChunkPath(pdir, d))
		for n := range 2 {
			_, err := os.Stat(filepath.Join(dir, chunkstore.BadName(d, n)))
			if want := damaged && n == 0; want != (err == nil) {
				t.Errorf("damaged %v: %s there: %v, want %v", damaged, chunkstore.BadName(d, n), err == nil, want)
			}
		}
	}
}

// downMirror is a mirror that cannot be reached.
type downMirror struct{ chunkstore.Store }

func (downMirror) ReadChunk(ctx context.Context, d crypto.Digest, buf []byte, limit int) ([]byte, error) {
	return nil, chunkstore.ErrUnavailable
}

// TestRepairMirrorDown: a chunk no mirror could serve because one could
// not be read is no proof that no good copy exists: it fails (exit 3),
// it is not "no good copy" (exit 1).
func TestRepairMirrorDown(t *testing.T) {
	ctx := context.Background()
	data := fixture.Build(8, fixture.Region{Kind: fixture.Random, Len: 4096})
	var nokey *crypto.Config
	d := nokey.ChunkDigest(data)
	dir := fixture.NewStore(t)
	primary, err := chunkstore.OpenLocal(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	other := fixture.OpenStore(t, fixture.NewStore(t))
	r := repair.New(primary, []chunkstore.Store{other, downMirror{other}}, repair.Options{})
	items, n, err := r.Run(ctx, []repair.Chunk{{Digest: d, Length: len(data)}})
	if err != nil || len(items) != 1 || items[0].Action != repair.ActionFailed || n.Failed != 1 || n.NoCopy != 0 || len(items[0].Tried) != 2 {
		t.Fatalf("items %+v, counts %+v, %v; want failed", items, n, err)
	}
}
