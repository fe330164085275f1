// Package bucket holds what the bucket backends (chunkstore/s3store,
// chunkstore/gcsstore) share: store URL parsing, the two datastore layouts
// in a bucket and their key mapping (FORMAT.md §1, §8.1), content-path
// validation, and the request policy: the stall watchdog (Transport),
// retries judged by time (Options.RetryFor) with Retry-After honoured, and
// the adaptive limit on GETs in flight (Policy).
package bucket

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
)

// Layout is how a datastore is laid out below a bucket prefix.
type Layout int

const (
	// LayoutAuto asks Open to detect the layout: PBS4 if any object exists
	// below "<prefix>/.cnt/", otherwise Plain (for a writer opening an empty
	// prefix: PBS4).
	LayoutAuto Layout = iota
	// LayoutPBS4 is the PBS 4 S3 datastore layout (§8.1): content files at
	// "<prefix>/.cnt/<rel>", chunks at "<prefix>/.chunks/<4hex>/<digest>".
	LayoutPBS4
	// LayoutPlain is a plain copy of a datastore directory (rclone/gsutil
	// sync of §1): content at "<prefix>/<rel>", chunks at "<prefix>/.chunks/…".
	LayoutPlain
)

// String returns "auto", "pbs4-s3" or "plain".
func (l Layout) String() string {
	switch l {
	case LayoutAuto:
		return "auto"
	case LayoutPBS4:
		return "pbs4-s3"
	case LayoutPlain:
		return "plain"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// Describe returns a one-line human description of the layout for CLI output.
func (l Layout) Describe() string {
	switch l {
	case LayoutPBS4:
		return "PBS 4 S3 datastore (content under .cnt/)"
	case LayoutPlain:
		return "plain copy of a datastore directory"
	}
	return l.String()
}

// ParseLayout parses "auto" (or ""), "pbs4-s3" (alias "pbs4") and "plain".
func ParseLayout(s string) (Layout, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return LayoutAuto, nil
	case "pbs4-s3", "pbs4", "s3":
		return LayoutPBS4, nil
	case "plain", "copy":
		return LayoutPlain, nil
	}
	return LayoutAuto, fmt.Errorf("unknown bucket layout %q (want auto, pbs4-s3 or plain)", s)
}

// ContentDir is the key component below which PBS 4 keeps content files.
const ContentDir = ".cnt"

// ParseURL splits a store URL "<scheme>://bucket[/prefix...]" into bucket
// and prefix (no leading or trailing '/', possibly empty, possibly
// multi-level). It fails for another scheme, an empty bucket name or a
// prefix with empty, "." or ".." components.
func ParseURL(scheme, u string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(u, scheme+"://")
	if !ok {
		return "", "", fmt.Errorf("store URL %q: want %s://bucket[/prefix]", u, scheme)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	prefix = strings.Trim(prefix, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("store URL %q: empty bucket name", u)
	}
	if prefix != "" {
		for _, c := range strings.Split(prefix, "/") {
			if c == "" || c == "." || c == ".." {
				return "", "", fmt.Errorf("store URL %q: invalid prefix component %q", u, c)
			}
		}
	}
	return bucket, prefix, nil
}

// Keys maps datastore-relative paths to object keys for one prefix and
// layout. The zero Keys is the plain layout at the bucket root.
type Keys struct {
	// Prefix is the datastore's key prefix without surrounding '/' ("" for
	// the bucket root).
	Prefix string
	// Layout is LayoutPBS4 or LayoutPlain.
	Layout Layout
}

func (k Keys) root() string {
	if k.Prefix == "" {
		return ""
	}
	return k.Prefix + "/"
}

// URL returns the datastore's URL, "<scheme>://<bucket>[/<prefix>]", the
// inverse of ParseURL.
func (k Keys) URL(scheme, bucket string) string {
	return strings.TrimSuffix(scheme+"://"+bucket+"/"+k.Prefix, "/")
}

// Chunk returns the key of the chunk for d: "<prefix>/.chunks/<4hex>/<hex>".
func (k Keys) Chunk(d crypto.Digest) string {
	return k.root() + chunkstore.ChunkRelPath(d)
}

// ContentBase returns the key prefix of content files, ending in '/' unless
// empty: "<prefix>/.cnt/" (PBS4) or "<prefix>/" (plain).
func (k Keys) ContentBase() string {
	if k.Layout == LayoutPBS4 {
		return k.root() + ContentDir + "/"
	}
	return k.root()
}

// Content returns the key of the content file rel after checking rel with
// CleanRel.
func (k Keys) Content(rel string) (string, error) {
	c, err := CleanRel(rel)
	if err != nil {
		return "", err
	}
	return k.ContentBase() + c, nil
}

// RelFromKey returns the datastore-relative path of a content key listed
// below ContentBase, and false for keys that are not content files: outside
// ContentBase, directory markers (ending in '/') and anything inside a
// ".chunks" directory. A PBS4 ".namespace" marker (§8.1) is a content file
// ("ns/a/.namespace"): it is how an empty namespace is seen (listings keep
// hidden files out of everything else).
func (k Keys) RelFromKey(key string) (string, bool) {
	rel, ok := strings.CutPrefix(key, k.ContentBase())
	if !ok || rel == "" || strings.HasSuffix(rel, "/") {
		return "", false
	}
	parts := strings.Split(rel, "/")
	for _, p := range parts[:len(parts)-1] {
		if p == ".chunks" {
			return "", false
		}
	}
	if parts[0] == ".chunks" {
		return "", false
	}
	return rel, true
}

// CleanRel checks a datastore-relative content path and returns it without a
// trailing '/'. It rejects empty paths, absolute or non-canonical ones
// ("a//b", "a/../b") and paths into ".chunks" or ".cnt".
func CleanRel(rel string) (string, error) {
	r := strings.TrimSuffix(rel, "/")
	clean := path.Clean("/" + r)[1:]
	if clean == "" || clean != r {
		return "", fmt.Errorf("invalid content path %q", rel)
	}
	first, _, _ := strings.Cut(clean, "/")
	if first == ".chunks" || first == ContentDir {
		return "", fmt.Errorf("invalid content path %q", rel)
	}
	return clean, nil
}

// Backoff computes retry delays: exponential from Min, doubling per retry,
// capped at Max, with "equal jitter" (a random delay in [d/2, d)).
type Backoff struct {
	Min, Max time.Duration
}

// Delay returns the wait before retry number retry (1 = first retry).
func (b Backoff) Delay(retry int) time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = time.Millisecond
	}
	if hi < lo {
		hi = lo
	}
	d := lo
	for i := 1; i < retry && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

// Sleep waits d or until ctx is done, returning ctx.Err() in the latter case.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Unreachable reports whether err says the endpoint cannot be reached as
// configured — connection refused, an unknown host, TLS spoken to a plain
// HTTP server or a certificate that does not verify. Retrying cannot fix
// those, so the backends fail at once instead of backing off.
func Unreachable(err error) bool {
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return true
	case errors.As(err, &dns) && dns.IsNotFound:
		return true
	case errors.As(err, &cert), errors.As(err, &unknownAuthority), errors.As(err, &hostname):
		return true
	}
	return strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}
