package s3store_test

import (
	"context"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/storetest"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// TestWriterStamps: objects pbsdirect PUTs (a chunk by conditional PUT and
// by the plain PUT after a 501, a content file) carry the writer's time,
// which HEAD gives back through a proxy, in order of writing; an object
// another tool put carries none.
func TestWriterStamps(t *testing.T) {
	srv := testenv.StartS3(t)
	f := newFixture(t, srv)
	s := f.open(t)
	ctx := context.Background()
	if _, st, err := s.ChunkStamp(ctx, f.digest); err != nil || st.Server.IsZero() || !st.Writer.IsZero() {
		t.Errorf("chunk put by another tool: %+v, %v; want a server time, no writer's time", st, err)
	}
	before := time.Now()
	d, blob := storetest.Chunk(t, []byte("stamped"))
	if _, err := s.WriteChunk(ctx, d, blob); err != nil {
		t.Fatal(err)
	}
	size, cst, err := s.ChunkStamp(ctx, d)
	if err != nil || size != int64(len(blob)) || cst.Writer.Before(before) || cst.Writer.After(time.Now()) {
		t.Fatalf("chunk written: size %d, %+v, %v; want %d bytes, a writer's time since %v", size, cst, err, len(blob), before)
	}
	if err := s.WriteFile(ctx, "vm/100/2026-11-01T00:00:00Z/index.json.blob", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	fst, err := s.FileStamp(ctx, "vm/100/2026-11-01T00:00:00Z/index.json.blob")
	if err != nil || !cst.Writer.Before(fst.Writer) || fst.Server.IsZero() {
		t.Errorf("file written after the chunk: %+v, %v; want a writer's time after the chunk's %v", fst, err, cst.Writer)
	}
	f.proxy.SetRules(faultproxy.Rule{Method: "PUT", Header: "If-None-Match", Status: 501})
	d2, blob2 := storetest.Chunk(t, []byte("stamped, unconditional"))
	if _, err := s.WriteChunk(ctx, d2, blob2); err != nil {
		t.Fatal(err)
	}
	if _, st, err := s.ChunkStamp(ctx, d2); err != nil || !fst.Writer.Before(st.Writer) {
		t.Errorf("chunk written by plain PUT: %+v, %v; want a writer's time after %v", st, err, fst.Writer)
	}
}
