package main

// End-to-end tests of the CLI against S3 providers that do not answer by
// the book, reproduced by internal/quirkproxy in front of versitygw (see
// docs/BUCKETS.md): listings truncated without a token or ignoring it,
// downloads without Content-Length or gzip-encoded, a snapshot pruned
// between listing and reading, a client clock 20 minutes off, a bucket in
// another region, a self-signed CN-only certificate pinned by fingerprint.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/quirkproxy"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// quirkEnv is a PBS 4 store s3://quirks/ds in versitygw with four snapshots of
// vm/508, each of another image, and 1000-odd unfinished-snapshot files
// sorting before them, so that S3's first 1000-key page ends inside vm/508:
// its two newest snapshots are on the second page.
type quirkEnv struct {
	s3     *testenv.S3Server
	snaps  []string // vm/508/<time>, oldest first
	images [][]byte // image of each snapshot
}

func newQuirkEnv(t *testing.T) *quirkEnv {
	t.Helper()
	e := &quirkEnv{s3: testenv.StartS3(t)}
	e.s3.Bucket(t, "quirks")
	bktSetEnv(t, "")
	for i, day := range []int{8, 15, 22, 30} {
		btime := fmt.Sprintf("2026-10-%02dT02:00:00Z", day)
		data := fixture.Mixed(200<<10+int64(i), uint64(500+i))
		img := fixture.WriteFile(t, t.TempDir(), "disk.raw", data)
		mustOK(t, "backup", "--store", "s3://quirks/ds", "--s3-endpoint", e.s3.Endpoint, "--backup-type", "vm", "--backup-id", "508",
			"--backup-time", btime, "--chunk-size", "64", "drive-scsi0.img:"+img)
		e.snaps = append(e.snaps, "vm/508/"+btime)
		e.images = append(e.images, data)
	}
	// Files per snapshot directory, to put the page boundary after the
	// second snapshot.
	ents, err := os.ReadDir(filepath.Join(e.s3.Root, "quirks", "ds", ".cnt", filepath.FromSlash(e.snaps[0])))
	if err != nil || len(ents) == 0 {
		t.Fatalf("snapshot directory in the bucket: %v", err)
	}
	per := len(ents)
	for i := 0; i < 1000-2*per; i++ {
		e.s3.PutFile(t, "quirks", fmt.Sprintf("ds/.cnt/vm/100/2026-01-01T00:00:00Z/extra-%04d.blob", i), []byte("x"))
	}
	return e
}

func (e *quirkEnv) proxy(t *testing.T, q quirkproxy.Quirks) *quirkproxy.Proxy {
	t.Helper()
	q.AccessKey, q.Secret = testenv.S3AccessKey, testenv.S3SecretKey
	p, err := quirkproxy.Start(e.s3.Endpoint, q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// restoreLatest restores vm/508 (the latest) through endpoint and checks it
// is the newest snapshot, byte for byte.
func (e *quirkEnv) restoreLatest(t *testing.T, flags ...string) {
	t.Helper()
	target := filepath.Join(t.TempDir(), "r.raw")
	s := restoreJSON(t, append([]string{"--store", "s3://quirks/ds", "vm/508", "drive-scsi0", target}, flags...)...)
	if want := e.snaps[len(e.snaps)-1]; s.Snapshot != want {
		t.Fatalf("vm/508 resolved to %s, want the latest %s", s.Snapshot, want)
	}
	fixture.Equal(t, target, e.images[len(e.images)-1])
}

func TestProviderQuirks(t *testing.T) {
	fixture.SkipIfShort(t)
	e := newQuirkEnv(t)
	// Without quirks: the page boundary is where it should be.
	plain := e.proxy(t, quirkproxy.Quirks{})
	if got := bktNames(bktList(t, "s3://quirks/ds", "--s3-endpoint", plain.URL)); !reflect.DeepEqual(got, e.snaps) {
		t.Fatalf("snapshots: %v, want %v", got, e.snaps)
	}

	t.Run("truncated-without-token", func(t *testing.T) {
		p := e.proxy(t, quirkproxy.Quirks{StripToken: true})
		ep := []string{"--s3-endpoint", p.URL}
		if got := bktNames(bktList(t, "s3://quirks/ds", ep...)); !reflect.DeepEqual(got, e.snaps) {
			t.Errorf("snapshots: %v, want all of %v", got, e.snaps)
		}
		e.restoreLatest(t, ep...)
		if code, rep := bktVerify(t, append([]string{"--store", "s3://quirks/ds"}, ep...)...); code != 0 || len(rep.Snapshots) != len(e.snaps) {
			t.Errorf("verify: exit %d, %d snapshots", code, len(rep.Snapshots))
		}
	})

	t.Run("url-encoded-keys", func(t *testing.T) {
		// Keys percent-encoded ("…T02%3A00%3A00Z") with EncodingType url
		// although not asked for (Apache Ozone, DigitalOcean Spaces, HCP),
		// on both pages of vm/.
		p := e.proxy(t, quirkproxy.Quirks{URLEncodeKeys: true})
		ep := []string{"--s3-endpoint", p.URL}
		if got := bktNames(bktList(t, "s3://quirks/ds", ep...)); !reflect.DeepEqual(got, e.snaps) {
			t.Errorf("snapshots: %v, want all of %v", got, e.snaps)
		}
		e.restoreLatest(t, ep...)
	})

	t.Run("token-ignored", func(t *testing.T) {
		p := e.proxy(t, quirkproxy.Quirks{IgnoreToken: true})
		got := bktNames(bktList(t, "s3://quirks/ds", "--s3-endpoint", p.URL))
		if !reflect.DeepEqual(got, e.snaps) {
			t.Errorf("snapshots: %v, want all of %v", got, e.snaps)
		}
		// Open: 1 listing; vm/: 3 (page 1, page 1 again, start-after);
		// ct/, host/: 1 each. Never the same page over and over: the
		// count at the proxy shows it, not the time the listing took.
		if n := p.Lists(); n > 8 {
			t.Errorf("%d listing requests", n)
		}
		e.restoreLatest(t, "--s3-endpoint", p.URL)
	})

	for _, tc := range []struct {
		name string
		q    quirkproxy.Quirks
	}{
		{"chunked", quirkproxy.Quirks{ChunkedObjects: true}},
		{"gzip", quirkproxy.Quirks{GzipObjects: true}},
		{"gzip-chunks-only", quirkproxy.Quirks{GzipObjects: true, OnlyChunks: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := e.proxy(t, tc.q)
			e.restoreLatest(t, "--s3-endpoint", p.URL)
			if code, rep := bktVerify(t, "--store", "s3://quirks/ds", "--s3-endpoint", p.URL, e.snaps[0]); code != 0 || !rep.OK {
				t.Errorf("verify: exit %d: %+v", code, rep)
			}
			if p.ObjectGets() == 0 {
				t.Errorf("no object download went through the proxy")
			}
		})
	}

	// A body shorter than its Content-Length (a gateway cutting responses)
	// on every attempt: the transport failed, not the data: exit 3, and
	// the message says the object came short.
	t.Run("short-body", func(t *testing.T) {
		p := e.proxy(t, quirkproxy.Quirks{ShortBody: 10, OnlyChunks: true})
		r := pbs(t, "restore", "--store", "s3://quirks/ds", "--s3-endpoint", p.URL, "--retry-for", "2s", "vm/508", "drive-scsi0", filepath.Join(t.TempDir(), "r.raw"))
		if r.code != 3 || !strings.Contains(r.err, "shorter than its announced") {
			t.Errorf("restore with every chunk body cut short: %v", r)
		}
	})

	t.Run("pruned-mid-listing", func(t *testing.T) {
		// The oldest snapshot's objects answer 404 once Open's listing and
		// the vm/ listing were served: a prune between listing and reading.
		p := e.proxy(t, quirkproxy.Quirks{Vanish: "ds/.cnt/" + e.snaps[0] + "/", VanishAfterLists: 2})
		code, rep := bktVerify(t, "--store", "s3://quirks/ds", "--s3-endpoint", p.URL)
		if code != 0 || !rep.OK || len(rep.Snapshots) != len(e.snaps)-1 || !reflect.DeepEqual(rep.Skipped, []string{e.snaps[0]}) {
			t.Errorf("verify: exit %d, ok %v, %d verified, skipped %v", code, rep.OK, len(rep.Snapshots), rep.Skipped)
		}
		l := bktNames(bktList(t, "s3://quirks/ds", "--s3-endpoint", p.URL))
		if !reflect.DeepEqual(l, e.snaps[1:]) {
			t.Errorf("snapshots: %v, want %v", l, e.snaps[1:])
		}
		// Named explicitly and pruned after its manifest was read (two
		// reads: resolving, loading), it is reported as removed, not as
		// damaged.
		for _, cmd := range [][]string{
			{"verify", e.snaps[1]},
			{"restore", e.snaps[1], "drive-scsi0", filepath.Join(t.TempDir(), "r.raw")},
		} {
			p := e.proxy(t, quirkproxy.Quirks{Vanish: "ds/.cnt/" + e.snaps[1] + "/", VanishAfterReads: 2})
			r := pbs(t, append([]string{cmd[0], "--store", "s3://quirks/ds", "--s3-endpoint", p.URL}, cmd[1:]...)...)
			if r.code != 1 || !strings.Contains(r.out+r.err, "removed while running") || strings.Contains(r.out+r.err, "damaged") {
				t.Errorf("%s of a snapshot pruned while running: %v", cmd[0], r)
			}
		}
	})

	t.Run("clock-skew-1200s", func(t *testing.T) {
		p := e.proxy(t, quirkproxy.Quirks{Skew: 1200 * time.Second})
		e.restoreLatest(t, "--s3-endpoint", p.URL)
		if p.Injected() == 0 {
			t.Errorf("no request was refused as skewed: the proxy did not act")
		}
	})

	t.Run("region", func(t *testing.T) {
		for _, status := range []int{301, 400} {
			p := e.proxy(t, quirkproxy.Quirks{BucketRegion: "eu-central-1", RegionError: status})
			e.restoreLatest(t, "--s3-endpoint", p.URL, "--s3-region", "eu-west-1")
			if r := pbs(t, "snapshots", "--store", "s3://quirks/ds", "--s3-endpoint", p.URL, "--s3-region", "eu-west-1"); r.code != 0 || !strings.Contains(r.err, "--s3-region eu-central-1") {
				t.Errorf("no note naming the region followed: %v", r)
			}
			e.restoreLatest(t, "--s3-endpoint", p.URL, "--s3-region", "eu-central-1")
			// A server that names the region the requests were already
			// signed for: a loop, exit 3, one message saying so.
			p = e.proxy(t, quirkproxy.Quirks{BucketRegion: "eu-central-1", RegionError: status, RegionLoop: true})
			for _, region := range []string{"eu-west-1", "eu-central-1"} {
				r := pbs(t, "restore", "--store", "s3://quirks/ds", "--s3-endpoint", p.URL, "--s3-region", region, "vm/508", "drive-scsi0", filepath.Join(t.TempDir(), "r.raw"))
				if r.code != 3 || !strings.Contains(r.err, "redirect loop") || strings.Contains(r.err, "give --s3-region") {
					t.Errorf("%d region loop, signed for %s: %v", status, region, r)
				}
			}
		}
	})

	t.Run("cn-only-certificate", func(t *testing.T) {
		cert, fp := cnOnlyCert(t, "localhost")
		p := e.proxy(t, quirkproxy.Quirks{TLS: &cert})
		ep := []string{"--s3-endpoint", "https://localhost:" + p.Port}
		target := filepath.Join(t.TempDir(), "r.raw")
		mustFail(t, 3, []string{"--s3-fingerprint"}, append([]string{"restore", "--store", "s3://quirks/ds", "vm/508", "drive-scsi0", target}, ep...)...)
		e.restoreLatest(t, append(ep, "--s3-fingerprint", fp)...)
		other := strings.Repeat("ab:", 31) + "ab"
		r := pbs(t, append([]string{"restore", "--store", "s3://quirks/ds", "--s3-fingerprint", other, "vm/508", "drive-scsi0", target}, ep...)...)
		if r.code == 0 || !strings.Contains(r.err, "does not match --s3-fingerprint") {
			t.Errorf("wrong fingerprint: %v", r)
		}
	})
}

// cnOnlyCert makes a self-signed certificate whose name is only in the
// subject CN, as 'openssl req -x509 -subj /CN=host' does, and returns it
// with its SHA-256 fingerprint as PBS writes it ("AA:BB:…").
func cnOnlyCert(t *testing.T, cn string) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IsCA:         true,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	var parts []string
	for _, b := range sum {
		parts = append(parts, fmt.Sprintf("%02X", b))
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, strings.Join(parts, ":")
}

// TestGzipBombMemory: a gateway answering every chunk GET with
// Content-Encoding gzip of 1 GiB of zeros (about 1 MiB on the wire) is
// decoded only up to the chunk's own limit (its length from the index plus
// the blob header), so a restore with 32 fetchers stays small (it was
// bounded only by the 128 MiB blob maximum per fetcher: 5.6 GiB).
func TestGzipBombMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and versitygw")
	}
	store := fixture.NewStore(t)
	backupImage(t, store, fixture.Mixed(4<<20, 33), "--chunk-size", "64") // 64 chunks of 64 KiB
	root := t.TempDir()
	fixture.CopyDir(t, store, filepath.Join(root, "bkt", "ds"))
	s3 := testenv.StartS3Dir(t, root)
	bktSetEnv(t, "")
	p, err := quirkproxy.Start(s3.Endpoint, quirkproxy.Quirks{GzipBomb: 1 << 30, OnlyChunks: true,
		AccessKey: testenv.S3AccessKey, Secret: testenv.S3SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	pr := pbsProc(t, nil, "restore", "--fetchers", "32", "--store", "s3://bkt/ds", "--s3-endpoint", p.URL,
		snap0, "drive-scsi0", filepath.Join(t.TempDir(), "out"))
	r, rss := pr.result, pr.maxRSS
	if rss == 0 {
		t.Fatalf("no peak RSS reported: %v", r)
	}
	t.Logf("peak RSS %d MiB: %s", rss>>20, r.err)
	if r.code == 0 || !strings.Contains(r.err, "larger than allowed") {
		t.Errorf("restore through a gzip bomb: %v", r)
	}
	if p.ObjectGets() == 0 {
		t.Errorf("no chunk download went through the proxy")
	}
	if rss > 300<<20 {
		t.Errorf("peak RSS %d MiB with 32 fetchers, want under 300 MiB", rss>>20)
	}
}
