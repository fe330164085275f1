package ratelimit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in        string
		perSecond bool
		want      int64
		bad       string // a word of the error; "" for no error
	}{
		{"200MiB", true, 200 << 20, ""},
		{"200MiB/s", true, 200 << 20, ""},
		{"1G", false, 1e9, ""},
		{"1g", false, 1e9, ""},
		{"500M", true, 500e6, ""},
		{"500MB/s", true, 500e6, ""},
		{"1.5GiB", false, 3 << 29, ""},
		{"1.5 GiB", false, 3 << 29, ""},
		{"64Ki", false, 64 << 10, ""},
		{"4k", false, 4000, ""},
		{"1048576", false, 1 << 20, ""},
		{"10B", false, 10, ""},
		{"2TiB", false, 2 << 40, ""},
		{"200MiB/s", false, 0, "unknown unit"},
		{"10X", true, 0, "unknown unit"},
		{"MiB", true, 0, "want a number"},
		{"", true, 0, "want a number"},
		{"-1M", true, 0, "want a number"},
		{"0", true, 0, "at least 1 byte"},
		{"0.1", true, 0, "at least 1 byte"},
		{"1.2.3M", true, 0, "want a number"},
		{"99999999PiB", true, 0, "too large"},
		{"1e3", true, 0, "without an exponent"},
		{"2E+6", false, 0, "without an exponent"},
	} {
		got, err := ParseSize(c.in, c.perSecond)
		switch {
		case c.bad == "" && (err != nil || got != c.want):
			t.Errorf("ParseSize(%q, %v) = %d, %v; want %d", c.in, c.perSecond, got, err, c.want)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("ParseSize(%q, %v) = %d, %v; want an error saying %q", c.in, c.perSecond, got, err, c.bad)
		}
	}
}

func TestParseRequestRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64 // 0: an error
	}{
		{"10", 10}, {"10/s", 10}, {"0.5/s", 0.5}, {" 100 ", 100},
		{"0", 0}, {"-1", 0}, {"abc", 0}, {"", 0}, {"1e3", 0}, {"5E-1", 0}, {"Inf", 0}, {"NaN", 0}, {"10/min", 0}, {"0x10", 0},
	} {
		got, err := ParseRequestRate(c.in)
		if (c.want == 0) != (err != nil) || got != c.want {
			t.Errorf("ParseRequestRate(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestNew(t *testing.T) {
	if l, err := New(Limits{}); l != nil || err != nil {
		t.Errorf("New(no limits) = %v, %v; want nil, nil", l, err)
	}
	if _, err := New(Limits{Burst: 1 << 20}); err == nil {
		t.Error("a burst without a rate was taken")
	}
	if _, err := New(Limits{BytesPerSecond: MaxBytesPerSecond + 1}); err == nil || !strings.Contains(err.Error(), "1PiB/s") {
		t.Errorf("a rate above MaxBytesPerSecond: %v, want refused", err)
	}
	if _, err := New(Limits{BytesPerSecond: MaxBytesPerSecond}); err != nil {
		t.Errorf("a rate of MaxBytesPerSecond: %v", err)
	}
	if _, err := New(Limits{BytesPerSecond: -1}); err == nil {
		t.Error("a negative rate was taken")
	}
	l, err := New(Limits{BytesPerSecond: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Limits().Burst; got != DefaultBurst(8<<20) {
		t.Errorf("default burst %d, want %d", got, DefaultBurst(8<<20))
	}
	// A nil Limiter limits nothing and reports nothing.
	var none *Limiter
	if err := none.WaitBytes(context.Background(), 1<<30); err != nil || none.WaitRequest(context.Background()) != nil || none.Report() != nil {
		t.Error("a nil Limiter limited or reported")
	}
}

// TestBurstSmallerThanRead reads through a limiter whose burst is a
// fraction of each read: the reads wait in pieces and every byte arrives.
func TestBurstSmallerThanRead(t *testing.T) {
	l, err := New(Limits{BytesPerSecond: 4 << 20, Burst: 1000, RequestsPerSecond: 1000})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // 256 KiB
	if err := l.WaitBytes(context.Background(), 100_000); err != nil {
		t.Fatalf("WaitBytes of 100 bursts: %v", err)
	}
	got, err := io.ReadAll(l.Reader(context.Background(), io.NopCloser(bytes.NewReader(data))))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes through the limiter, %v; want %d", len(got), err, len(data))
	}
	if err := l.WaitRequest(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep := l.Report()
	if rep.Bytes != 100_000+int64(len(data)) || rep.Requests != 1 || rep.WaitSeconds <= 0 || rep.Burst != MinBurst {
		t.Errorf("report %+v", *rep)
	}
}

// callCounter is an endless body counting the Read calls made on it.
type callCounter struct{ calls *int }

func (c callCounter) Read(p []byte) (int, error) { *c.calls++; return len(p), nil }
func (callCounter) Close() error                 { return nil }

// TestTinyBurst: a burst below MinBurst (or above MaxBurst) is raised (or
// lowered) to it, and reported so; reads under a tiny burst still move in
// pieces of kilobytes, not byte by byte, so the rate, not the waits, sets
// the pace.
func TestTinyBurst(t *testing.T) {
	for _, c := range []struct{ burst, want int64 }{{1, MinBurst}, {MinBurst - 1, MinBurst}, {1 << 40, MaxBurst}, {1 << 20, 1 << 20}} {
		l, err := New(Limits{BytesPerSecond: 16 << 20, Burst: c.burst})
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Limits().Burst; got != c.want {
			t.Errorf("burst %d: in force %d, want %d", c.burst, got, c.want)
		}
		if got := l.Report().Burst; got != c.want {
			t.Errorf("burst %d: reported %d, want %d", c.burst, got, c.want)
		}
	}
	l, err := New(Limits{BytesPerSecond: 16 << 20, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	const size = 512 << 10
	if _, err := io.CopyN(io.Discard, l.Reader(context.Background(), callCounter{&calls}), size); err != nil {
		t.Fatal(err)
	}
	if calls > size/(4<<10) {
		t.Errorf("%d reads for %d bytes under --burst 1: want pieces of at least 4 KiB", calls, size)
	}
}

// TestWaitCancelled has reads wait far longer than the test runs: ending
// their context ends the waits at once with its error.
func TestWaitCancelled(t *testing.T) {
	l, err := New(Limits{BytesPerSecond: 1 << 10, RequestsPerSecond: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 3)
	go func() { errs <- l.WaitBytes(ctx, 1<<30) }()
	go func() { errs <- l.WaitRequest(ctx) }()
	go func() {
		_, err := io.ReadAll(l.Reader(ctx, io.NopCloser(bytes.NewReader(make([]byte, 1<<20)))))
		errs <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	for range 3 {
		select {
		case err := <-errs:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("a wait ended with %v, want context.Canceled", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("a wait did not end with its context")
		}
	}
}

// TestCountsOnlyGranted stops a run whose reads and requests wait for far
// more than the rate grants before it stops: the report counts what was
// granted, not everything that was asked for.
func TestCountsOnlyGranted(t *testing.T) {
	l, err := New(Limits{BytesPerSecond: 64 << 10, RequestsPerSecond: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	const waiters = 8
	errs := make(chan error, 3*waiters)
	var read atomic.Int64
	for range waiters {
		go func() { errs <- l.WaitRequest(ctx) }()
		go func() { errs <- l.WaitBytes(ctx, 1<<20) }()
		go func() {
			_, err := l.ReadFull(ctx, countingBody{&read}, make([]byte, 1<<20))
			errs <- err
		}()
	}
	for range 3 * waiters {
		<-errs
	}
	rep := l.Report()
	if rep.Requests >= waiters {
		t.Errorf("report counts %d requests, want only those granted (< %d asked)", rep.Requests, waiters)
	}
	if rep.Bytes >= 1<<20 {
		t.Errorf("report counts %d bytes, want only those granted (< 1 MiB)", rep.Bytes)
	}
	if got := read.Load(); got > rep.Bytes {
		t.Errorf("ReadFull read %d bytes, more than the %d granted", got, rep.Bytes)
	}
}

// TestFileReaderWaitsFirst reads an endless file through FileReader until
// the run stops: no byte was read from it that the rate had not granted
// (Reader, for a network body, reads a piece and then waits for it).
func TestFileReaderWaitsFirst(t *testing.T) {
	l, err := New(Limits{BytesPerSecond: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var read atomic.Int64
	rc := l.FileReader(ctx, countingBody{&read})
	if _, err := io.ReadAll(rc); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read until the deadline: %v", err)
	}
	rc.Close()
	if got, granted := read.Load(), l.Report().Bytes; got > granted || got == 0 {
		t.Errorf("read %d bytes from the file, %d granted: want some, none beyond the grant", got, granted)
	}
}
