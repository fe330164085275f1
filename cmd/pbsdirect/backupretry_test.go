package main

import (
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// TestRetryProgressLinesBackup: a backup to a bucket whose requests are
// being retried says so with --progress, as restore does: what is
// retried, why and until when, every interval, both before its progress
// report starts (every request failing) and while the chunks are written
// (chunk uploads failing; the bar alone would show the source read
// through).
func TestRetryProgressLinesBackup(t *testing.T) {
	fixture.SkipIfShort(t)
	s3 := testenv.StartS3(t)
	s3.Bucket(t, "bkt")
	bktSetEnv(t, "127.0.0.1:1")
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", fixture.Build(29, fixture.Region{Kind: fixture.Random, Len: 4 << 16}))
	p := bktProxy(t, s3.Endpoint, 0)
	for _, c := range []struct {
		name string
		rule faultproxy.Rule
		want string
	}{
		{"everything-500", faultproxy.Rule{Status: 500}, "backup: retrying "},
		{"chunk-put-500", faultproxy.Rule{Method: "PUT", PathContains: "/.chunks/", Status: 500}, "backup: retrying PUT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p.SetRules(c.rule)
			r := pbs(t, "backup", "--store", "s3://bkt/store", "--s3-endpoint", p.URL, "--backup-type", "vm", "--backup-id", "100",
				"--chunk-size", "64", "--retry-for", "2s", "--progress", "lines", "--progress-interval", "200ms", "drive-scsi0.img:"+img)
			if r.code != 3 {
				t.Fatalf("want exit 3: %v", r)
			}
			var notes int
			for _, l := range strings.Split(r.err, "\n") {
				if strings.HasPrefix(l, c.want) && strings.Contains(l, "(500 Internal Server Error) until ") {
					if notes == 0 {
						t.Log(l)
					}
					notes++
				}
			}
			// About 2s of retries at 200ms: several lines, whatever the load.
			if notes < 2 {
				t.Errorf("%d lines %q… (500 Internal Server Error) until …, want several: %v", notes, c.want, r)
			}
		})
	}
}
