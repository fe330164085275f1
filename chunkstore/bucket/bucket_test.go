package bucket

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in, bucket, prefix string
		ok                 bool
	}{
		{"s3://b", "b", "", true},
		{"s3://b/", "b", "", true},
		{"s3://b/store", "b", "store", true},
		{"s3://b/a/b/c/", "b", "a/b/c", true},
		{"s3://", "", "", false},
		{"s3:///x", "", "", false},
		{"gs://b/x", "", "", false},
		{"s3://b/a//c", "", "", false},
		{"s3://b/a/../c", "", "", false},
	} {
		b, p, err := ParseURL("s3", tc.in)
		if (err == nil) != tc.ok || b != tc.bucket || p != tc.prefix {
			t.Errorf("ParseURL(%q) = %q, %q, %v", tc.in, b, p, err)
		}
		// Keys.URL is the inverse, in canonical form (no trailing '/').
		if want := strings.TrimSuffix(tc.in, "/"); tc.ok && (Keys{Prefix: p}).URL("s3", b) != want {
			t.Errorf("Keys{%q}.URL(s3, %q) = %q, want %q", p, b, (Keys{Prefix: p}).URL("s3", b), want)
		}
	}
}

func TestKeys(t *testing.T) {
	d := crypto.Digest{0xbb, 0x9f}
	for _, tc := range []struct {
		k                   Keys
		chunk, content      string
		relOK, relBad, relN string
	}{
		{Keys{"", LayoutPlain}, ".chunks/bb9f/" + d.String(), "vm/1/owner", "vm/1/owner", ".chunks/bb9f/x", "vm/.chunks/x"},
		{Keys{"s", LayoutPBS4}, "s/.chunks/bb9f/" + d.String(), "s/.cnt/vm/1/owner", "s/.cnt/vm/1/owner", "s/vm/1/owner", "s/.cnt/vm/1/"},
		{Keys{"a/b", LayoutPlain}, "a/b/.chunks/bb9f/" + d.String(), "a/b/vm/1/owner", "a/b/vm/1/owner", "a/b/.chunks/0000/x", "a/b/vm/1/"},
	} {
		if got := tc.k.Chunk(d); got != tc.chunk {
			t.Errorf("%+v Chunk = %q", tc.k, got)
		}
		if got, err := tc.k.Content("vm/1/owner"); err != nil || got != tc.content {
			t.Errorf("%+v Content = %q, %v", tc.k, got, err)
		}
		if rel, ok := tc.k.RelFromKey(tc.relOK); !ok || rel != "vm/1/owner" {
			t.Errorf("%+v RelFromKey(%q) = %q, %v", tc.k, tc.relOK, rel, ok)
		}
		for _, bad := range []string{tc.relBad, tc.relN} {
			if rel, ok := tc.k.RelFromKey(bad); ok {
				t.Errorf("%+v RelFromKey(%q) = %q, want skipped", tc.k, bad, rel)
			}
		}
	}
	// A PBS4 namespace marker is listed: it is how an empty namespace is seen.
	if rel, ok := (Keys{"s", LayoutPBS4}).RelFromKey("s/.cnt/ns/a/.namespace"); !ok || rel != "ns/a/.namespace" {
		t.Errorf("RelFromKey(namespace marker) = %q, %v, want ns/a/.namespace", rel, ok)
	}
	for _, bad := range []string{"", "/", "/vm", "vm//1", "vm/../x", "..", ".chunks", ".chunks/ab", ".cnt/vm"} {
		if c, err := CleanRel(bad); err == nil {
			t.Errorf("CleanRel(%q) = %q, want error", bad, c)
		}
	}
	if c, err := CleanRel("vm/1/"); err != nil || c != "vm/1" {
		t.Errorf("CleanRel(vm/1/) = %q, %v", c, err)
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Min: 10 * time.Millisecond, Max: 80 * time.Millisecond}
	for retry, want := range map[int]time.Duration{1: 10, 2: 20, 3: 40, 4: 80, 10: 80, 1000: 80} {
		want *= time.Millisecond
		for range 50 {
			if d := b.Delay(retry); d < want/2 || d > want {
				t.Fatalf("Delay(%d) = %v, want in [%v, %v]", retry, d, want/2, want)
			}
		}
	}
}

func TestParseLayout(t *testing.T) {
	for in, want := range map[string]Layout{"": LayoutAuto, "auto": LayoutAuto, "pbs4-s3": LayoutPBS4, "PBS4": LayoutPBS4, "plain": LayoutPlain} {
		if got, err := ParseLayout(in); err != nil || got != want {
			t.Errorf("ParseLayout(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseLayout("flat"); err == nil {
		t.Error("ParseLayout(flat) succeeded")
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, refused := net.Dial("tcp", addr)
	if refused == nil {
		t.Skip("port unexpectedly open")
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused", fmt.Errorf("request send failed: %w", refused), true},
		{"unknown host", &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}, true},
		{"https to http", errors.New(`Get "https://x/": http: server gave HTTP response to HTTPS client`), true},
		{"temporary dns", &net.DNSError{Err: "timeout", Name: "x", IsTimeout: true}, false},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), false},
		{"other", errors.New("503 Slow Down"), false},
	} {
		if got := Unreachable(tc.err); got != tc.want {
			t.Errorf("%s: Unreachable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
