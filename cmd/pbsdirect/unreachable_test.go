package main

import (
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestUnreachableFailsAtOnce: a bucket endpoint that cannot be reached as
// configured (connection refused; TLS spoken to a plain HTTP server) fails
// the command with exit 3 (a cause outside the data) after one attempt,
// without the retries and backoff (about 13 s by default) that transient
// faults get, and leaves no target.
func TestUnreachableFailsAtOnce(t *testing.T) {
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	// A plain TCP server answering every connection with an HTTP error,
	// counting connections: each attempt of a TLS client is one.
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := plain.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			c.Close()
		}
	}()

	for _, c := range []struct {
		name    string
		gcsHost string // STORAGE_EMULATOR_HOST
		store   string
		flags   []string
		oneConn bool // exactly one connection to the plain server
	}{
		{"s3-refused", "", "s3://bkt/ds", []string{"--s3-endpoint", "http://" + refused}, false},
		{"gcs-refused", refused, "gs://bkt/ds", nil, false},
		{"s3-tls-to-plain-http", "", "s3://bkt/ds", []string{"--s3-endpoint", "https://" + plain.Addr().String()}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			bktSetEnv(t, c.gcsHost)
			before := conns.Load()
			target := filepath.Join(t.TempDir(), "out.raw")
			start := time.Now()
			r := pbs(t, append(append([]string{"restore", "--store", c.store}, c.flags...), snap0, "drive-scsi0", target)...)
			el := time.Since(start)
			if r.code != 3 {
				t.Errorf("want exit 3 (outside the data), got %v", r)
			}
			// Retrying would go on for --retry-for (10 minutes by
			// default): a minute is far from both.
			if el > time.Minute {
				t.Errorf("took %v: retried an endpoint that cannot be reached", el)
			}
			if n := conns.Load() - before; c.oneConn && n != 1 {
				t.Errorf("%d connections to the endpoint, want 1 (no retries)", n)
			}
			noFile(t, target)
		})
	}
}
