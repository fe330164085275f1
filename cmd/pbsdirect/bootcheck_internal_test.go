package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

// failingReader fails every read at or past off with err.
type failingReader struct {
	off int64
	err error
}

func (f failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.off {
		return 0, f.err
	}
	return len(p), nil
}

// TestReadWatch: the export's first failed read cancels the boot with
// that error (kept as its cause, so a store outage stays exit 3 and a
// damaged chunk exit 1); reads that succeed, a read after the boot ended,
// and a short read at the end do not.
func TestReadWatch(t *testing.T) {
	outage := fmt.Errorf("chunk 0123: %w", chunkstore.ErrUnavailable)
	ctx, fail := context.WithCancelCause(context.Background())
	w := &readWatch{ReaderAt: failingReader{off: 4096, err: outage}, name: "drive-scsi0.img.fidx", ctx: ctx, fail: fail}
	buf := make([]byte, 512)
	if _, err := w.ReadAt(buf, 0); err != nil || ctx.Err() != nil {
		t.Fatalf("good read: %v, ctx %v", err, ctx.Err())
	}
	if _, err := w.ReadAt(buf, 8192); !errors.Is(err, outage) {
		t.Fatalf("bad read: %v", err)
	}
	cause := context.Cause(ctx)
	if !errors.Is(cause, chunkstore.ErrUnavailable) || exitCode(cause) != exitOutside ||
		!strings.Contains(cause.Error(), "drive-scsi0.img.fidx at offset 8192") {
		t.Fatalf("cause %v (exit %d)", cause, exitCode(cause))
	}
	// Later errors keep the first.
	w.ReaderAt = failingReader{err: errors.New("other")}
	w.ReadAt(buf, 0)
	if context.Cause(ctx) != cause {
		t.Fatalf("cause changed to %v", context.Cause(ctx))
	}
	// EOF with a full read is no failure.
	ctx2, fail2 := context.WithCancelCause(context.Background())
	defer fail2(nil)
	w2 := &readWatch{ReaderAt: eofReader{}, name: "x", ctx: ctx2, fail: fail2}
	if _, err := w2.ReadAt(buf, 0); !errors.Is(err, io.EOF) || ctx2.Err() != nil {
		t.Fatalf("EOF read: %v, ctx %v", err, ctx2.Err())
	}
}

type eofReader struct{}

func (eofReader) ReadAt(p []byte, off int64) (int, error) { return len(p), io.EOF }
