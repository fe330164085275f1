package backup

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// slowAnswer is a directory store whose existence check answers only once
// the test lets it (gate), after saying it was asked (asked).
type slowAnswer struct {
	*chunkstore.Local
	asked, gate chan struct{}
}

func (s *slowAnswer) HasChunk(ctx context.Context, d crypto.Digest) (bool, error) {
	s.asked <- struct{}{}
	<-s.gate
	_, err := s.Local.StatChunk(ctx, d)
	return err == nil, nil
}

// TestPutEncodesWhileAsking: an encoder free before the store answers
// the existence check encodes the chunk meanwhile (the encoders never wait
// on a round trip); the answer then decides: a chunk not there is written,
// one there is read back and checked, its blob dropped, nothing written.
func TestPutEncodesWhileAsking(t *testing.T) {
	data := bytes.Repeat([]byte("pbsdirect encodes ahead of the answer "), 2000)
	d := (*crypto.Config)(nil).ChunkDigest(data)
	for _, stored := range []bool{false, true} {
		root := filepath.Join(t.TempDir(), "store")
		if err := os.MkdirAll(filepath.Join(root, ".chunks", "ffff"), 0o750); err != nil {
			t.Fatal(err)
		}
		l, err := chunkstore.OpenLocal(root, true)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if stored {
			enc, _ := chunkstore.NewEncoder()
			blob, _ := enc.Encode(data, nil, true)
			enc.Close()
			if _, err := l.WriteChunk(context.Background(), d, blob); err != nil {
				t.Fatal(err)
			}
		}
		s := &slowAnswer{Local: l, asked: make(chan struct{}, 1), gate: make(chan struct{})}
		var st Stats
		w := newWriter(s, Options{Jobs: 1, Encoders: 1}, &st, nil)
		done := make(chan error, 1)
		go func() { done <- w.put(context.Background(), d, data, false, nil) }()
		<-s.asked
		// The one encoder slot holds an encoder (not nil) once one was used.
		encoded := false
		for deadline := time.Now().Add(3 * time.Second); !encoded && time.Now().Before(deadline); {
			enc := <-w.encoders
			encoded = enc != nil
			w.encoders <- enc
			if !encoded {
				time.Sleep(time.Millisecond)
			}
		}
		close(s.gate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		w.close()
		if !encoded {
			t.Errorf("stored %v: the chunk was not encoded while the existence check was in flight", stored)
		}
		var want [3]uint64 // uploaded, found present, existing
		if stored {
			want = [3]uint64{0, 1, 1}
		} else {
			want = [3]uint64{1, 0, 0}
		}
		if got := [3]uint64{st.Uploaded.Load(), st.FoundPresent.Load(), st.Existing.Load()}; got != want {
			t.Errorf("stored %v: uploaded, found, existing %v; want %v", stored, got, want)
		}
	}
}
