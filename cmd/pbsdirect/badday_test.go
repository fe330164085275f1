package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/restore"
)

// badDayEnv is a 2 MiB random image backed up with 256 KiB chunks (8 data
// chunks) into versitygw (s3://bkt/store) and fake-gcs-server
// (gs://gbkt/store).
type badDayEnv struct {
	data []byte
	s3   *testenv.S3Server
	gcs  *testenv.GCSServer
}

func newBadDayEnv(t *testing.T) *badDayEnv {
	e := &badDayEnv{data: fixture.Build(5, fixture.Region{Kind: fixture.Random, Len: 2 << 20})}
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", e.data)
	e.s3 = testenv.StartS3(t)
	e.s3.Bucket(t, "bkt")
	e.gcs = testenv.StartGCS(t, "gbkt")
	bktSetEnv(t, strings.TrimPrefix(e.gcs.URL, "http://"))
	for _, st := range [][]string{{"--store", "s3://bkt/store", "--s3-endpoint", e.s3.Endpoint}, {"--store", "gs://gbkt/store"}} {
		mustOK(t, append(append([]string{"backup"}, st...), "--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str,
			"--chunk-size", "256", "drive-scsi0.img:"+img)...)
	}
	return e
}

// restoreThrough restores snap0 from backend ("s3" or "gcs") through a
// proxy made by mk, with extra flags, checks the image byte for byte and
// returns the summary and the time taken.
func (e *badDayEnv) restoreThrough(t *testing.T, backend string, p *faultproxy.Proxy, flags ...string) (restore.Summary, time.Duration) {
	t.Helper()
	args := []string{"restore", "--output-format", "json"}
	if backend == "s3" {
		args = append(args, "--store", "s3://bkt/store", "--s3-endpoint", p.URL)
	} else {
		t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(p.URL, "http://"))
		args = append(args, "--store", "gs://gbkt/store")
	}
	target := filepath.Join(t.TempDir(), "restored.raw")
	args = append(append(args, flags...), snap0, "drive-scsi0", target)
	start := time.Now()
	r := pbs(t, args...)
	el := time.Since(start)
	if r.code != 0 {
		t.Fatalf("restore failed after %v: %v", el, r)
	}
	fixture.Equal(t, target, e.data)
	var s restore.Summary
	if err := json.Unmarshal([]byte(r.out), &s); err != nil || s.Requests == nil {
		t.Fatalf("restore JSON: %v\n%s", err, r.out)
	}
	return s, el
}

// chunkGETs matches the chunk downloads of both backends (S3 "/.chunks/",
// GCS "%2F.chunks%2F").
func chunkGETs(r faultproxy.Rule) faultproxy.Rule {
	r.Method, r.PathContains = "GET", ".chunks"
	return r
}

// TestBadDayBuckets: a bucket restore survives a slow link, a stalled
// transfer and a throttling window, on S3 (versitygw) and GCS
// (fake-gcs-server), byte for byte, and its summary counts what happened.
func TestBadDayBuckets(t *testing.T) {
	if testing.Short() {
		t.Skip("slow link and throttling window take seconds")
	}
	e := newBadDayEnv(t)
	for _, backend := range []string{"s3", "gcs"} {
		target := e.s3.Endpoint
		if backend == "gcs" {
			target = e.gcs.URL
		}
		// 2 MiB over 400 KiB/s: 5 s, while each of the 8 downloads in flight
		// takes about that long, five times --io-timeout: transfers that keep
		// moving are never cut.
		t.Run(backend+"/400KiBps-link", func(t *testing.T) {
			p := bktProxy(t, target, 0)
			p.SetBandwidth(400 << 10)
			s, el := e.restoreThrough(t, backend, p, "--io-timeout", "1s")
			if el < 4*time.Second || s.Requests.Stalls != 0 || s.Retries != 0 {
				t.Errorf("took %v with %d stalls, %d retries; want about 5 s and none", el, s.Requests.Stalls, s.Retries)
			}
		})
		// A body that stops after 1000 bytes is cut after --io-timeout and
		// fetched again.
		t.Run(backend+"/stalled-body", func(t *testing.T) {
			p := bktProxy(t, target, 0, chunkGETs(faultproxy.Rule{Times: 1, Stall: true, StallAfter: 1000}))
			s, el := e.restoreThrough(t, backend, p, "--io-timeout", "1s")
			// (The GCS library resumes a cut download itself, without a
			// retry of the policy.)
			if p.Faults() != 1 || s.Requests.Stalls != 1 || (backend == "s3" && s.Retries < 1) || el < time.Second {
				t.Errorf("%d stalls injected, summary: %d stalls, %d retries, %v", p.Faults(), s.Requests.Stalls, s.Retries, el)
			}
		})
		// Headers, then nothing: the wait for the first byte of the body is
		// judged the same way.
		t.Run(backend+"/stalled-headers", func(t *testing.T) {
			p := bktProxy(t, target, 0, chunkGETs(faultproxy.Rule{Times: 2, Stall: true}))
			s, _ := e.restoreThrough(t, backend, p, "--io-timeout", "1s")
			if s.Requests.Stalls != 2 {
				t.Errorf("summary: %d stalls, want 2", s.Requests.Stalls)
			}
		})
		// After two chunks, every request is answered 503 SlowDown with
		// Retry-After: 1 for 4 s (the 60 s window is run by
		// bench/badday.sh): ridden out, fewer GETs in flight meanwhile.
		t.Run(backend+"/slowdown-window", func(t *testing.T) {
			const window = 4 * time.Second
			p := bktProxy(t, target, 0, chunkGETs(faultproxy.Rule{After: 2, For: window, Status: 503, Code: "SlowDown", RetryAfter: time.Second}))
			s, el := e.restoreThrough(t, backend, p, "--fetchers", "8", "--retry-for", "30s")
			q := s.Requests
			if el < window || q.Throttled == 0 || q.LimitDecreases == 0 || q.MinLimit >= 8 || s.Retries == 0 {
				t.Errorf("took %v; requests %+v, %d retries: want the window ridden out, throttling counted, the limit lowered", el, *q, s.Retries)
			}
		})
	}
}
