package repair_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/repair"
)

// refusingPrimary is a primary (a bucket with no cheap write probe) that
// refuses every write, counting them.
type refusingPrimary struct {
	chunkstore.WriteStore
	writes atomic.Int32
}

func (p *refusingPrimary) WriteChunk(ctx context.Context, d crypto.Digest, blob []byte) (bool, error) {
	p.writes.Add(1)
	return false, fmt.Errorf("chunk %s: PUT: %w", d, chunkstore.ErrDenied)
}

// TestRepairStopsAtFirstWriteFailure: a primary that refuses a write is
// not tried with every chunk: the first failure stops the run
// (Repairer.Stopped), the chunks not yet checked are counted unfinished.
func TestRepairStopsAtFirstWriteFailure(t *testing.T) {
	ctx := context.Background()
	open := func() *chunkstore.Local {
		s, err := chunkstore.OpenLocal(fixture.NewStore(t), true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	mirror := open()
	var chunks []repair.Chunk
	var nokey *crypto.Config
	for i := range 20 {
		data := fixture.Build(uint64(100+i), fixture.Region{Kind: fixture.Random, Len: 4096})
		d := nokey.ChunkDigest(data)
		if _, err := mirror.WriteChunk(ctx, d, fixture.Encode(t, data, nil, true)); err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, repair.Chunk{Digest: d, Length: len(data)})
	}
	p := &refusingPrimary{WriteStore: open()}
	r := repair.New(p, []chunkstore.Store{mirror}, repair.Options{Jobs: 1})
	items, n, err := r.Run(ctx, chunks)
	if err != nil || !errors.Is(r.Stopped(), chunkstore.ErrDenied) {
		t.Fatalf("Run: %v, stopped %v; want stopped with the refusal", err, r.Stopped())
	}
	if got := p.writes.Load(); got > 2 || n.Failed < 1 || n.Unfinished < len(chunks)-2 || len(items) != n.Failed {
		t.Errorf("%d writes tried, counts %+v, %d items; want the run stopped after the first", got, n, len(items))
	}
}
