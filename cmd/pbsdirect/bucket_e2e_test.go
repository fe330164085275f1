package main

// End-to-end tests of the CLI against buckets: the same snapshots restored
// byte-identically from a datastore directory, S3 and GCS in both bucket
// layouts; faults injected by faultproxy (latency, 503/429, connection
// resets, a missing chunk, persistent failures); listing beyond one page;
// backups into buckets (dedup, manifest written last).
//
// Every S3 bucket is served by one versitygw over a temporary directory, so
// objects can be inspected and removed on disk; GCS is fake-gcs-server
// in-process, reached through STORAGE_EMULATOR_HOST as users would, and
// through a faultproxy that only injects faults into buckets named gf*.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/faultproxy"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/verify"
)

const (
	bktChunkKiB = "128"                         // chunk size of the bucket tests' backups: ~40 chunks
	bktSnapEnc  = "vm/100/2026-11-29T11:00:00Z" // encrypted snapshot next to snap0 (plain)
	bktTimeEnc  = "2026-11-29T11:00:00Z"
	bktImgSize  = 5251072
	// failBound is how long a request failing persistently may take to be
	// given up (7 retries, backoff from 100 ms doubling to at most 6.4 s:
	// at most 12.7 s of waits) plus generous slack for a loaded machine.
	failBound = 40 * time.Second
)

// bktImage is a 5251072-byte image: random, a zero run spanning several
// 128 KiB chunks, text-like, random.
func bktImage() []byte {
	r1, z, tx := int64(1<<20+5), int64(1<<20), int64(3<<19)
	return fixture.Build(77,
		fixture.Region{Kind: fixture.Random, Len: r1},
		fixture.Region{Kind: fixture.Zero, Len: z},
		fixture.Region{Kind: fixture.Text, Len: tx},
		fixture.Region{Kind: fixture.Random, Len: bktImgSize - r1 - z - tx})
}

// bucketEnv is the shared setup of TestBucketE2E.
type bucketEnv struct {
	data    []byte
	img     string // image file
	keyfile string
	local   string // local datastore with snap0 (plain) and bktSnapEnc (encrypted)
	s3      *testenv.S3Server
	s3flags []string // --s3-endpoint of versitygw itself
	gcs     *testenv.GCSServer
	gproxy  *faultproxy.Proxy // STORAGE_EMULATOR_HOST; faults only for buckets gf*
}

// keyArgs returns --keyfile for the encrypted snapshots (backed up at
// hh:00:00 with an odd hour hh).
func (e *bucketEnv) keyArgs(snap string) []string {
	if bktIsEncSnap(snap) {
		return []string{"--keyfile", e.keyfile}
	}
	return nil
}

// bktIsEncSnap tells the encrypted snapshots of these tests, backed up at an
// odd hour, from the plain ones.
func bktIsEncSnap(snap string) bool {
	var h int
	i := strings.LastIndex(snap, "T")
	fmt.Sscanf(snap[i+1:], "%d", &h)
	return h%2 == 1
}

// backup backs up the image into store at time btime (encrypted with
// encrypt) and returns the JSON summary.
func (e *bucketEnv) backup(t *testing.T, store string, flags []string, btime string, encrypt bool) backupSummary {
	t.Helper()
	args := []string{"backup", "--store", store, "--output-format", "json", "--backup-type", "vm", "--backup-id", "100",
		"--backup-time", btime, "--chunk-size", bktChunkKiB}
	args = append(args, flags...)
	if encrypt {
		args = append(args, "--keyfile", e.keyfile)
	}
	r := mustOK(t, append(args, "drive-scsi0.img:"+e.img)...)
	var s backupSummary
	if err := json.Unmarshal([]byte(r.out), &s); err != nil {
		t.Fatalf("backup JSON: %v\n%s", err, r.out)
	}
	return s
}

// restoreOK restores snap from store, checks the target byte for byte and
// returns the summary.
func (e *bucketEnv) restoreOK(t *testing.T, store string, flags []string, snap string) restore.Summary {
	t.Helper()
	target := filepath.Join(t.TempDir(), "restored.raw")
	args := append(append([]string{"--store", store}, flags...), e.keyArgs(snap)...)
	s := restoreJSON(t, append(args, snap, "drive-scsi0", target)...)
	fixture.Equal(t, target, e.data)
	if s.Size != uint64(len(e.data)) || s.ChunksFetched == 0 || s.ZeroChunks == 0 {
		t.Errorf("summary: size %d, %d chunks fetched, %d zero chunks", s.Size, s.ChunksFetched, s.ZeroChunks)
	}
	return s
}

// bktList runs snapshots --output-format json.
func bktList(t *testing.T, store string, flags ...string) []snapshotEntry {
	t.Helper()
	r := mustOK(t, append([]string{"snapshots", "--store", store, "--output-format", "json"}, flags...)...)
	var l []snapshotEntry
	if err := json.Unmarshal([]byte(r.out), &l); err != nil {
		t.Fatalf("snapshots JSON: %v\n%s", err, r.out)
	}
	return l
}

func bktNames(l []snapshotEntry) []string {
	var out []string
	for _, e := range l {
		out = append(out, e.Snapshot)
	}
	return out
}

// bktVerify runs verify --output-format json and returns its exit code and report.
func bktVerify(t *testing.T, args ...string) (int, verify.Report) {
	t.Helper()
	r := pbs(t, append([]string{"verify", "--output-format", "json"}, args...)...)
	var rep verify.Report
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("verify JSON: %v\n%v", err, r)
	}
	if (r.code == 0) != rep.OK || (r.code != 0 && r.code != 1) {
		t.Errorf("verify exit %d with ok=%v: %v", r.code, rep.OK, r)
	}
	return r.code, rep
}

// bktConcurrently runs fn for every case as a subtest, all at once. It does
// not use t.Parallel, whose limit (-parallel, GOMAXPROCS by default) would
// serialize cases that mostly wait for retry backoffs.
func bktConcurrently[C any](t *testing.T, cases []C, name func(C) string, fn func(*testing.T, C)) {
	t.Helper()
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(name(c), func(t *testing.T) { fn(t, c) })
		}()
	}
	wg.Wait()
}

// bktProxy starts a faultproxy in front of target, closed at cleanup.
func bktProxy(t *testing.T, target string, latency time.Duration, rules ...faultproxy.Rule) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start("127.0.0.1:0", target, latency, rules...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// bktCopyGCS copies the objects below prefix of bucket from into bucket to
// (created) below toPrefix, leaving out the object named skip.
func bktCopyGCS(t *testing.T, srv *fakestorage.Server, from, to, prefix, toPrefix, skip string) {
	t.Helper()
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: to})
	objs, _, err := srv.ListObjectsWithOptions(from, fakestorage.ListOptions{Prefix: prefix})
	if err != nil || len(objs) == 0 {
		t.Fatalf("listing gs://%s/%s: %d objects, %v", from, prefix, len(objs), err)
	}
	for _, a := range objs {
		if a.Name == skip {
			continue
		}
		o, err := srv.GetObject(from, a.Name)
		if err != nil {
			t.Fatal(err)
		}
		srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: to, Name: toPrefix + strings.TrimPrefix(a.Name, prefix)}, Content: o.Content})
	}
}

// bktUploadGCS uploads the tree below dir as objects "<prefix>/<rel>".
func bktUploadGCS(t *testing.T, srv *fakestorage.Server, bucket, prefix, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		srv.CreateObject(fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{BucketName: bucket, Name: prefix + "/" + filepath.ToSlash(rel)}, Content: b})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// bktDataDigest returns a non-zero chunk's digest of the fixed index at fidx.
func bktDataDigest(t *testing.T, fidx string, encrypted bool) crypto.Digest {
	t.Helper()
	h, ds := fixture.Digests(t, fidx)
	var cc *crypto.Config
	if encrypted {
		_, cc = fixture.Key(t, 9)
	}
	zero := fixture.ZeroDigest(int(h.ChunkSize), cc)
	for _, d := range ds {
		if d != zero {
			return d
		}
	}
	t.Fatal("index has no data chunk")
	return crypto.Digest{}
}

// bktSetEnv points the AWS SDK and the GCS client at the test servers, and
// away from anything configured on the machine.
func bktSetEnv(t *testing.T, gcsHost string) {
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":              testenv.S3AccessKey,
		"AWS_SECRET_ACCESS_KEY":          testenv.S3SecretKey,
		"AWS_REGION":                     testenv.S3Region,
		"AWS_SESSION_TOKEN":              "",
		"AWS_PROFILE":                    "",
		"AWS_CONFIG_FILE":                filepath.Join(t.TempDir(), "none"),
		"AWS_SHARED_CREDENTIALS_FILE":    filepath.Join(t.TempDir(), "none"),
		"AWS_EC2_METADATA_DISABLED":      "true",
		"AWS_ENDPOINT_URL":               "",
		"AWS_ENDPOINT_URL_S3":            "",
		"STORAGE_EMULATOR_HOST":          gcsHost,
		"GOOGLE_APPLICATION_CREDENTIALS": filepath.Join(t.TempDir(), "none.json"),
		"PBSDIRECT_STORE":                "",
	} {
		t.Setenv(k, v)
		if v == "" {
			os.Unsetenv(k) // restored by t.Setenv's cleanup
		}
	}
}

// TestBucketE2E runs the CLI against a local datastore, S3 (versitygw) and
// GCS (fake-gcs-server), in both bucket layouts, with and without faults.
// Subtests share the servers and the base snapshots and run concurrently
// (most of the time of the failing cases is spent waiting for retries).
func TestBucketE2E(t *testing.T) {
	fixture.SkipIfShort(t)
	e := &bucketEnv{data: bktImage()}
	e.img = fixture.WriteFile(t, t.TempDir(), "disk.raw", e.data)
	key, _ := fixture.Key(t, 9)
	e.keyfile = fixture.KeyFile(t, t.TempDir(), "key.json", key, crypto.KDFNone, "")

	// (i) the local datastore, then its plain copy in the S3 bucket plainbkt.
	e.local = fixture.NewStore(t)
	e.backup(t, e.local, nil, t0str, false)
	e.backup(t, e.local, nil, bktTimeEnc, true)
	root := t.TempDir()
	fixture.CopyDir(t, e.local, filepath.Join(root, "plainbkt", "ds"))
	e.s3 = testenv.StartS3Dir(t, root)
	e.s3.Bucket(t, "bkt")
	e.s3.Bucket(t, "pages")
	e.s3.AdoptFiles(t)
	e.s3flags = []string{"--s3-endpoint", e.s3.Endpoint}

	e.gcs = testenv.StartGCS(t, "gbkt")
	e.gproxy = bktProxy(t, e.gcs.URL, 0, bktGCSFaultRules()...)
	bktSetEnv(t, strings.TrimPrefix(e.gproxy.URL, "http://"))

	// (ii) S3, PBS 4 layout, written by the CLI.
	for _, enc := range []bool{false, true} {
		btime := map[bool]string{false: t0str, true: bktTimeEnc}[enc]
		s := e.backup(t, "s3://bkt/store", e.s3flags, btime, enc)
		if s.Uploaded == 0 || s.Existing != 0 {
			t.Fatalf("first backup into s3://bkt/store: %d chunks uploaded, %d existing", s.Uploaded, s.Existing)
		}
		// (iii) GCS, PBS 4 layout.
		e.backup(t, "gs://gbkt/store", nil, btime, enc)
	}
	// (iv) GCS, plain layout: the datastore tree uploaded below a prefix.
	bktUploadGCS(t, e.gcs.Server, "gbkt", "plain/ds", e.local)

	t.Run("places", e.testPlaces)
	t.Run("pagination", e.testPagination)
	// The fault cases read what testBackup adds to: set them up first.
	gone := e.prepareFaults(t)
	bktConcurrently(t, []string{"faults", "backup"}, func(s string) string { return s }, func(t *testing.T, s string) {
		if s == "faults" {
			e.testFaults(t, gone)
		} else {
			e.testBackup(t)
		}
	})
}

// testPlaces restores, lists and verifies the same two snapshots from every
// place and layout.
func (e *bucketEnv) testPlaces(t *testing.T) {
	want := bktList(t, e.local)
	if got := bktNames(want); !reflect.DeepEqual(got, []string{snap0, bktSnapEnc}) {
		t.Fatalf("local snapshots: %v", got)
	}
	type place struct {
		name, store string
		flags       []string
		layout      string
	}
	places := []place{
		{"local", e.local, nil, ""},
		{"s3-pbs4", "s3://bkt/store", e.s3flags, "pbs4-s3"},
		{"gcs-pbs4", "gs://gbkt/store", nil, "pbs4-s3"},
		{"s3-plain", "s3://plainbkt/ds", e.s3flags, "plain"},
		{"gcs-plain", "gs://gbkt/plain/ds", nil, "plain"},
	}
	bktConcurrently(t, places, func(p place) string { return p.name }, func(t *testing.T, tc place) {
		got := bktList(t, tc.store, tc.flags...)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("snapshots differ from the local datastore's:\n got %+v\nwant %+v", got, want)
		}
		for _, snap := range []string{snap0, bktSnapEnc} {
			s := e.restoreOK(t, tc.store, tc.flags, snap)
			if s.Layout != tc.layout {
				t.Errorf("%s: bucket-layout %q, want %q", snap, s.Layout, tc.layout)
			}
			if s.Encrypted != bktIsEncSnap(snap) {
				t.Errorf("%s: encrypted %v", snap, s.Encrypted)
			}
		}
		code, rep := bktVerify(t, append([]string{"--store", tc.store, "--keyfile", e.keyfile}, tc.flags...)...)
		if code != 0 || len(rep.Snapshots) != 2 || rep.Bytes != 2*bktImgSize {
			t.Errorf("verify: exit %d, %d snapshots, %d bytes: %+v", code, len(rep.Snapshots), rep.Bytes, rep)
		}
		if tc.layout == "" {
			return
		}
		// Forcing the other layout finds no snapshot: the layout decides
		// where content is looked up.
		other := map[string]string{"plain": "pbs4-s3", "pbs4-s3": "plain"}[tc.layout]
		r := pbs(t, append([]string{"snapshots", "--store", tc.store, "--output-format", "json", "--bucket-layout", other}, tc.flags...)...)
		var l []snapshotEntry
		if r.code == 0 && (json.Unmarshal([]byte(r.out), &l) != nil || len(l) != 0) {
			t.Errorf("--bucket-layout %s on a %s store lists %v", other, tc.layout, r)
		}
		// Forcing the right one works like detection.
		if s := e.restoreOK(t, tc.store, append([]string{"--bucket-layout", tc.layout}, tc.flags...), snap0); s.Layout != tc.layout {
			t.Errorf("forced layout: %q", s.Layout)
		}
	})
}

// testPagination lists a PBS 4 store whose content prefix holds more than
// one listing page (1000 keys for S3) of objects, with finished snapshots
// on both sides of the page boundary.
func (e *bucketEnv) testPagination(t *testing.T) {
	small := fixture.Mixed(300<<10+3, 5)
	img := fixture.WriteFile(t, t.TempDir(), "small.raw", small)
	var want []string
	for _, hour := range []int{0, 2, 4, 6} {
		btime := fmt.Sprintf("2026-11-29T%02d:00:00Z", hour)
		mustOK(t, append([]string{"backup", "--store", "s3://pages/p", "--backup-type", "vm", "--backup-id", "100",
			"--backup-time", btime, "--chunk-size", "64", "drive-scsi0.img:" + img}, e.s3flags...)...)
		want = append(want, "vm/100/"+btime)
	}
	// 1100 files in an unfinished snapshot directory sorting between the
	// first and the second snapshot, and 1100 in a group sorting before
	// vm/100: the later snapshots are on the second or third page.
	for i := 0; i < 1100; i++ {
		e.s3.PutFile(t, "pages", fmt.Sprintf("p/.cnt/vm/100/2026-11-29T01:00:00Z/extra-%04d.blob", i), []byte("x"))
		e.s3.PutFile(t, "pages", fmt.Sprintf("p/.cnt/vm/099/2026-11-29T01:00:00Z/extra-%04d.blob", i), []byte("y"))
	}
	// Count continuation requests through a proxy, to be sure the listing
	// did page.
	p := bktProxy(t, e.s3.Endpoint, 0, faultproxy.Rule{Method: "GET", QueryContains: "continuation-token"})
	got := bktNames(bktList(t, "s3://pages/p", "--s3-endpoint", p.URL))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("snapshots: %v, want %v", got, want)
	}
	if n := p.Matched()[0]; n < 2 {
		t.Errorf("%d continuation requests: the listing did not page", n)
	}
	// The last snapshot (on the last page) is found by "latest" and restores.
	target := filepath.Join(t.TempDir(), "r.raw")
	s := restoreJSON(t, append([]string{"--store", "s3://pages/p", "vm/100", "drive-scsi0", target}, e.s3flags...)...)
	fixture.Equal(t, target, small)
	if s.Snapshot != want[len(want)-1] {
		t.Errorf("latest of vm/100 is %s, want %s", s.Snapshot, want[len(want)-1])
	}
	if code, rep := bktVerify(t, append([]string{"--store", "s3://pages/p"}, e.s3flags...)...); code != 0 || len(rep.Snapshots) != len(want) {
		t.Errorf("verify: exit %d, %d snapshots", code, len(rep.Snapshots))
	}
}

// bktGCSFaultRules are the rules of the GCS proxy: each acts on one gf* bucket
// only (set up in testFaults), so other GCS traffic passes untouched.
// Downloads (XML API) have escaped paths "/BUCKET/PREFIX%2F.chunks%2F…",
// JSON API paths contain "/b/BUCKET/".
func bktGCSFaultRules() []faultproxy.Rule {
	return []faultproxy.Rule{
		{Method: "GET", PathContains: "/gf503/s%2F.chunks%2F", Every: 3, Status: 503},
		{Method: "GET", PathContains: "/gf429/s%2F.chunks%2F", Every: 4, Status: 429},
		{Method: "GET", PathContains: "/gfreset/s%2F.chunks%2F", Every: 3, Reset: true, ResetAfter: 3000},
		{Method: "GET", PathContains: "/gfdead/s%2F.chunks%2F", After: 3, Status: 503},
		{PathContains: "/gfdown/", Status: 503},
		// Counter (no fault): ranged chunk downloads from gfreset, which is
		// how the GCS library resumes a download cut mid-body.
		{Method: "GET", PathContains: "/gfreset/s%2F.chunks%2F", Header: "Range"},
	}
}

// bktGCSResumes is the index in bktGCSFaultRules of the counter of resumed
// gfreset downloads.
const bktGCSResumes = 5

// prepareFaults makes copies of the PBS 4 stores for testFaults: in S3
// (bkt/gone) and GCS (gfgone/s) without one data chunk, whose digest it
// returns, and in GCS buckets gf* (prefix s) whose traffic bktGCSFaultRules
// disturb.
func (e *bucketEnv) prepareFaults(t *testing.T) crypto.Digest {
	encFidx := filepath.Join(e.s3.Root, "bkt", "store", ".cnt", filepath.FromSlash(bktSnapEnc), "drive-scsi0.img.fidx")
	gone := bktDataDigest(t, encFidx, true)
	fixture.CopyDir(t, filepath.Join(e.s3.Root, "bkt", "store"), filepath.Join(e.s3.Root, "bkt", "gone"))
	remove(t, filepath.Join(e.s3.Root, "bkt", "gone", filepath.FromSlash(chunkstore.ChunkRelPath(gone))))
	e.s3.AdoptFiles(t)
	for _, b := range []string{"gf503", "gf429", "gfreset", "gfdead", "gfdown"} {
		bktCopyGCS(t, e.gcs.Server, "gbkt", b, "store/", "s/", "")
	}
	bktCopyGCS(t, e.gcs.Server, "gbkt", "gfgone", "store/", "s/", "store/"+chunkstore.ChunkRelPath(gone))
	return gone
}

// testFaults restores through faultproxy: transient faults must be retried
// to a byte-exact result; a missing chunk and persistent faults must fail
// with exit 1, no target file left and a message naming what failed. gone
// is the chunk missing from bkt/gone and gfgone/s.
func (e *bucketEnv) testFaults(t *testing.T, gone crypto.Digest) {
	type tc struct {
		name    string
		store   string
		snap    string
		latency time.Duration
		rules   []faultproxy.Rule // S3 only; GCS faults are bktGCSFaultRules
		// fail: restore must fail with these strings in stderr.
		fail     []string
		retries  bool // success needs retries > 0
		verify   bool // also verify the snapshot through the proxy
		fastFail bool // failure expected without retries (well under failBound)
		gcsRule  int  // 1 + index of the bktGCSFaultRules rule that must have acted during the restore
		resumed  bool // GCS: a download cut mid-body must have been resumed (ranged GET)
	}
	chunkGET := func(r faultproxy.Rule) faultproxy.Rule {
		r.Method, r.PathContains = "GET", "/.chunks/"
		return r
	}
	goneKey := chunkstore.ChunkRelPath(gone)
	cases := []tc{
		{name: "s3-latency", store: "s3://bkt/store", snap: bktSnapEnc, latency: 20 * time.Millisecond, verify: true},
		{name: "s3-503", store: "s3://bkt/store", snap: snap0, rules: []faultproxy.Rule{chunkGET(faultproxy.Rule{Every: 3, Status: 503})}, retries: true, verify: true},
		{name: "s3-429", store: "s3://bkt/store", snap: bktSnapEnc, rules: []faultproxy.Rule{chunkGET(faultproxy.Rule{Every: 4, Status: 429})}, retries: true},
		{name: "s3-503-content", store: "s3://bkt/store", snap: bktSnapEnc, rules: []faultproxy.Rule{
			{Method: "GET", PathContains: "/.cnt/", Every: 2, Times: 3, Status: 503},
			{Method: "GET", QueryContains: "list-type", Times: 1, Status: 503}}, retries: true},
		{name: "s3-reset-chunks", store: "s3://bkt/store", snap: snap0, rules: []faultproxy.Rule{chunkGET(faultproxy.Rule{Every: 3, Reset: true, ResetAfter: 3000})}, retries: true, verify: true},
		{name: "s3-reset-index", store: "s3://bkt/store", snap: bktSnapEnc, rules: []faultproxy.Rule{
			{Method: "GET", PathContains: ".fidx", Times: 1, Reset: true, ResetAfter: 4200}}, retries: true},
		{name: "s3-reset-chunks-and-latency", store: "s3://bkt/store", snap: bktSnapEnc, latency: 5 * time.Millisecond,
			rules: []faultproxy.Rule{chunkGET(faultproxy.Rule{Every: 5, Reset: true, ResetAfter: 100}), chunkGET(faultproxy.Rule{Every: 7, Status: 503})}, retries: true},
		{name: "s3-missing-chunk", store: "s3://bkt/gone", snap: bktSnapEnc, fastFail: true,
			fail: []string{gone.String(), "s3://bkt/gone/" + goneKey, "kept", "--resume"}},
		{name: "s3-persistent-503-chunks", store: "s3://bkt/store", snap: snap0, rules: []faultproxy.Rule{chunkGET(faultproxy.Rule{After: 3, Status: 503})},
			fail: []string{"s3://bkt/store/.chunks/", "503"}},
		{name: "s3-persistent-503", store: "s3://bkt/store", snap: snap0, rules: []faultproxy.Rule{{Status: 503}}, fail: []string{"s3://bkt/store", "503"}},
		{name: "gcs-503", store: "gs://gf503/s", snap: snap0, retries: true, verify: true, gcsRule: 1},
		{name: "gcs-429", store: "gs://gf429/s", snap: bktSnapEnc, retries: true, gcsRule: 2},
		// The GCS library resumes a download cut mid-body itself (ranged
		// re-read), so these resets do not show in the retry count: the
		// proxy counts the resumed downloads instead.
		{name: "gcs-reset-chunks", store: "gs://gfreset/s", snap: bktSnapEnc, verify: true, gcsRule: 3, resumed: true},
		{name: "gcs-missing-chunk", store: "gs://gfgone/s", snap: bktSnapEnc, fastFail: true,
			fail: []string{gone.String(), "gs://gfgone/s/" + goneKey}},
		{name: "gcs-persistent-503-chunks", store: "gs://gfdead/s", snap: snap0, fail: []string{"gs://gfdead/s/.chunks/", "503"}},
		{name: "gcs-persistent-503", store: "gs://gfdown/s", snap: snap0, fail: []string{"gs://gfdown/s", "503"}},
	}
	bktConcurrently(t, cases, func(c tc) string { return c.name }, func(t *testing.T, c tc) {
		var flags []string
		var proxy *faultproxy.Proxy
		if strings.HasPrefix(c.store, "s3://") {
			proxy = bktProxy(t, e.s3.Endpoint, c.latency, c.rules...)
			flags = []string{"--s3-endpoint", proxy.URL}
		}
		target := filepath.Join(t.TempDir(), "restored.raw")
		args := append(append([]string{"restore", "--output-format", "json", "--store", c.store}, flags...), e.keyArgs(c.snap)...)
		if strings.Contains(c.name, "persistent") {
			// A store that keeps failing is given up on after --retry-for.
			args = append(args, "--retry-for", "3s")
		}
		args = append(args, c.snap, "drive-scsi0", target)
		acted0, matched0 := e.gproxy.Acted(), e.gproxy.Matched()
		start := time.Now()
		r := pbs(t, args...)
		el := time.Since(start)
		if c.gcsRule > 0 {
			// Each gf* bucket is used by this case only: the counts'
			// growth is this restore's.
			if n := e.gproxy.Acted()[c.gcsRule-1] - acted0[c.gcsRule-1]; n == 0 {
				t.Errorf("GCS fault rule %d never acted during the restore", c.gcsRule)
			}
		}
		if c.resumed {
			if n := e.gproxy.Matched()[bktGCSResumes] - matched0[bktGCSResumes]; n == 0 {
				t.Errorf("downloads were cut but none was resumed (no ranged GET)")
			}
		}
		if c.fail == nil {
			// Never a wrong byte: success means the exact image.
			if r.code != 0 {
				t.Fatalf("want success despite faults: %v", r)
			}
			fixture.Equal(t, target, e.data)
			var s restore.Summary
			if err := json.Unmarshal([]byte(r.out), &s); err != nil {
				t.Fatalf("restore JSON: %v\n%s", err, r.out)
			}
			if c.retries && s.Retries == 0 {
				t.Errorf("faults injected but the summary reports 0 retries: %+v", s)
			}
			if proxy != nil && len(c.rules) > 0 && proxy.Faults() == 0 {
				t.Errorf("no fault was injected")
			}
			if c.verify {
				vargs := append(append([]string{"--store", c.store, "--keyfile", e.keyfile}, flags...), c.snap)
				if code, rep := bktVerify(t, vargs...); code != 0 {
					t.Errorf("verify through faults: %+v", rep)
				}
			}
			return
		}
		// A missing chunk is missing data (1); a store that keeps
		// failing is outside the data (3).
		wantCode := 1
		if strings.Contains(c.name, "503") {
			wantCode = 3
		}
		if r.code != wantCode {
			if r.code == 0 {
				// A success must still be byte-exact, but is not what
				// this case wants.
				fixture.Equal(t, target, e.data)
			}
			t.Fatalf("want exit %d, got %v", wantCode, r)
		}
		for _, w := range c.fail {
			if !strings.Contains(r.err, w) {
				t.Errorf("stderr lacks %q: %v", w, r)
			}
		}
		if strings.Contains(r.out, "verified and synced") || strings.Contains(r.out, `"retries"`) || !strings.Contains(r.out, `"ok":false`) {
			t.Errorf("failed restore printed a summary: %v", r)
		}
		noFile(t, target)
		if el > failBound || (c.fastFail && el > 10*time.Second) {
			t.Errorf("failure took %v", el)
		}
		t.Logf("failed as wanted in %v", el.Round(time.Millisecond))
		if c.fastFail {
			// verify names the damaged chunk and where it should be.
			vargs := append(append([]string{"--store", c.store, "--keyfile", e.keyfile}, flags...), c.snap)
			code, rep := bktVerify(t, vargs...)
			var found bool
			for _, s := range rep.Snapshots {
				for _, a := range s.Archives {
					for _, d := range a.Damaged {
						found = found || (d.Digest == gone.String() && strings.HasSuffix(d.Location, goneKey))
					}
				}
			}
			if code != 1 || !found {
				t.Errorf("verify: exit %d, damaged chunk %s not listed: %+v", code, gone, rep)
			}
		}
	})
}

// testBackup backs up into buckets: a second backup uploads no chunk; a
// backup failing midway leaves no manifest, so no snapshot is listed, and
// can be run again.
func (e *bucketEnv) testBackup(t *testing.T) {
	type bc struct {
		name  string
		store string
		flags []string
		dir   string            // on-disk datastore of an S3 store ("": GCS)
		rules []faultproxy.Rule // failing backup through a proxy with these rules
	}
	cases := []bc{
		{name: "dedup-s3", store: "s3://bkt/store", flags: e.s3flags, dir: filepath.Join(e.s3.Root, "bkt", "store")},
		{name: "dedup-gcs", store: "gs://gbkt/store"},
		{name: "fail-503-after-some-puts", rules: []faultproxy.Rule{{Method: "PUT", After: 6, Status: 503}}},
		{name: "fail-503-index", rules: []faultproxy.Rule{{Method: "PUT", PathContains: ".fidx", Status: 503}}},
		{name: "fail-503-manifest", rules: []faultproxy.Rule{{Method: "PUT", PathContains: "index.json.blob", Status: 503}}},
	}
	bktConcurrently(t, cases, func(c bc) string { return c.name }, func(t *testing.T, tc bc) {
		if tc.rules != nil {
			e.failingBackup(t, tc.name, tc.rules)
			return
		}
		for _, enc := range []bool{false, true} {
			btime := map[bool]string{false: "2026-11-29T12:00:00Z", true: "2026-11-29T13:00:00Z"}[enc]
			s := e.backup(t, tc.store, tc.flags, btime, enc)
			if s.Uploaded != 0 || s.Existing == 0 || s.UploadedBytes != 0 {
				t.Errorf("second backup (encrypted %v): %d chunks uploaded (%d bytes), %d existing; want all existing",
					enc, s.Uploaded, s.UploadedBytes, s.Existing)
			}
			snap := "vm/100/" + btime
			if rs := e.restoreOK(t, tc.store, tc.flags, snap); rs.Encrypted != enc {
				t.Errorf("%s: encrypted %v", snap, rs.Encrypted)
			}
			if tc.dir != "" {
				for _, f := range []string{"drive-scsi0.img.fidx", "index.json.blob"} {
					if _, err := os.Stat(filepath.Join(tc.dir, ".cnt", filepath.FromSlash(snap), f)); err != nil {
						t.Errorf("%s not written: %v", f, err)
					}
				}
			}
		}
	})
}

// failingBackup backs up into a new prefix of bkt through a proxy whose
// rules make it fail, checks that no snapshot was finished, then runs the
// backup again without faults.
func (e *bucketEnv) failingBackup(t *testing.T, name string, rules []faultproxy.Rule) {
	prefix := "bf-" + name
	store := "s3://bkt/" + prefix
	p := bktProxy(t, e.s3.Endpoint, 0, rules...)
	start := time.Now()
	r := mustFail(t, 3, []string{"no snapshot written", "503"}, "backup", "--retry-for", "2s", "--store", store, "--s3-endpoint", p.URL,
		"--backup-type", "vm", "--backup-id", "100", "--backup-time", t0str, "--chunk-size", bktChunkKiB, "drive-scsi0.img:"+e.img)
	el := time.Since(start)
	t.Logf("failed as wanted in %v", el.Round(time.Millisecond))
	if el > failBound {
		t.Errorf("failing backup took %v", el)
	}
	if p.Faults() == 0 {
		t.Fatalf("no fault injected: %v", r)
	}
	snapDir := filepath.Join(e.s3.Root, "bkt", prefix, ".cnt", filepath.FromSlash(snap0))
	if _, err := os.Stat(filepath.Join(snapDir, "index.json.blob")); err == nil {
		t.Errorf("failed backup left a manifest")
	}
	pbs4 := append([]string{"--bucket-layout", "pbs4-s3"}, e.s3flags...)
	if l := bktList(t, store, pbs4...); len(l) != 0 {
		t.Errorf("failed backup is listed: %v", bktNames(l))
	}
	mustFail(t, 1, []string{"no such snapshot"}, append([]string{"restore", "--store", store, snap0, "drive-scsi0", filepath.Join(t.TempDir(), "x")}, pbs4...)...)
	// Running the backup again (no faults) finishes the snapshot, reusing
	// the chunks that were stored.
	s := e.backup(t, store, pbs4, t0str, false)
	if s.Existing == 0 {
		t.Errorf("rerun uploaded every chunk again: %+v", s)
	}
	if got := bktNames(bktList(t, store, e.s3flags...)); !reflect.DeepEqual(got, []string{snap0}) {
		t.Errorf("after the rerun: %v", got)
	}
	e.restoreOK(t, store, e.s3flags, snap0)
}
