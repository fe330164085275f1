package main

// End-to-end tests of instant access with real clients: serve-nbd read by
// nbdcopy, qemu-img, nbdinfo and qemu-io; mount loop-mounted read-only;
// restore to standard output. The image is a real ext4 file system (made
// with mkfs.ext4 -d) with a known file, backed up with the CLI into a
// datastore directory (plain and encrypted) and served from there and from
// a copy in an S3 bucket (versitygw).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

const (
	instSnapEnc = "vm/100/2026-11-29T11:00:00Z" // encrypted, next to snap0 (plain)
	instImgMiB  = 64                            // 16 chunks of 4 MiB
)

// instantEnv is the shared setup of TestInstantAccess.
type instantEnv struct {
	data    []byte // the image
	known   []byte // content of /etc/known.bin in it
	conf    []byte // qemu-server.conf
	keyfile string
	local   string // datastore with snap0 (plain) and instSnapEnc (encrypted)
	s3      *testenv.S3Server
	s3flags []string
}

// lockedBuffer is a bytes.Buffer safe for a command writing while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// needTools skips the test without the given programs (fails it when CI is set).
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			fixture.SkipOrFail(t, "%s not installed (.ci/run installs it: qemu-utils, libnbd-bin, fuse3, e2fsprogs)", tool)
		}
	}
}

// ext4Image makes a 64 MiB ext4 image with mkfs.ext4 -d from a tree of
// generated files, /etc/known.bin among them; the rest of the disk is
// unused and reads as zeros, as on a fresh guest.
func ext4Image(t *testing.T) (data, known []byte) {
	t.Helper()
	needTools(t, "mkfs.ext4")
	stage := t.TempDir()
	known = fixture.Mixed(3<<20+77, 42)
	files := map[string][]byte{
		"etc/known.bin":           known,
		"etc/hostname":            []byte("vm-100\n"),
		"usr/share/doc/a.txt":     fixture.Mixed(5<<20, 43),
		"usr/lib/b.bin":           fixture.Mixed(7<<20+5, 44),
		"var/log/syslog":          fixture.Mixed(2<<20, 45),
		"home/user/.bash_history": []byte("ls\n"),
	}
	for name, b := range files {
		p := filepath.Join(stage, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		fixture.WriteFile(t, filepath.Dir(p), filepath.Base(p), b)
	}
	img := filepath.Join(t.TempDir(), "disk.raw")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, instImgMiB<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-L", "vm-100-root", "-E", "lazy_itable_init=0,lazy_journal_init=0", "-d", stage, img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	data, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	return data, known
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func fileSHA(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha(b)
}

// running is a long-running command (serve-nbd, mount) started in-process.
type running struct {
	cancel   context.CancelFunc
	done     chan int
	out, err *lockedBuffer
	args     []string
}

// start runs pbsdirect args in-process until stop.
func start(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan int, 1), out: &lockedBuffer{}, err: &lockedBuffer{}, args: args}
	go func() { r.done <- run(ctx, args, r.out, r.err) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// waitFor polls ready until it holds, failing the test if the command
// exits first or 30 s pass.
func (r *running) waitFor(t *testing.T, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ready() {
		select {
		case code := <-r.done:
			r.done <- code
			t.Fatalf("pbsdirect %s exited %d before it was ready:\n%s\n%s", strings.Join(r.args, " "), code, r.out, r.err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("pbsdirect %s: not ready after 30 s:\n%s\n%s", strings.Join(r.args, " "), r.out, r.err)
		}
	}
}

// stop interrupts the command (as Ctrl-C does) and returns its exit code.
func (r *running) stop(t *testing.T) int {
	r.cancel()
	select {
	case code := <-r.done:
		r.done <- code
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("pbsdirect %s: still running 30 s after the interrupt", strings.Join(r.args, " "))
		return -1
	}
}

// serveNBD starts serve-nbd on a fresh Unix socket and returns the URI of
// the drive-scsi0 export.
func serveNBD(t *testing.T, args ...string) (*running, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pbsnbd") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	r := start(t, append([]string{"serve-nbd", "--socket", sock}, args...)...)
	r.waitFor(t, func() bool { return strings.Contains(r.out.String(), "nbd+unix:///drive-scsi0") })
	return r, "nbd+unix:///drive-scsi0?socket=" + sock
}

func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// wantMap is nbdinfo --map's output for the image: zero chunks of the
// index as holes, the rest data.
func wantMap(t *testing.T, store string) string {
	t.Helper()
	_, digests := fixture.Digests(t, filepath.Join(store, "vm", "100", t0str, "drive-scsi0.img.fidx"))
	zero := fixture.ZeroDigest(4<<20, nil)
	var lines strings.Builder
	var at, run int64
	runZero := false
	flush := func() {
		if run > 0 {
			kind := "0  data"
			if runZero {
				kind = "3  hole,zero"
			}
			fmt.Fprintf(&lines, "%10d  %10d    %s\n", at-run, run, kind)
		}
	}
	for _, d := range digests {
		z := d == zero
		if z != runZero {
			flush()
			run, runZero = 0, z
		}
		run += 4 << 20
		at += 4 << 20
	}
	flush()
	return lines.String()
}

// TestInstantAccess: the same snapshots read in place through NBD (from a
// directory and an S3 bucket), FUSE and standard output, byte-exact; zero
// chunks are holes; a damaged chunk fails only its range; an encrypted
// snapshot needs its key.
func TestInstantAccess(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	e := &instantEnv{}
	e.data, e.known = ext4Image(t)
	e.conf = []byte("boot: order=scsi0\nmemory: 2048\nscsi0: local:vm-100-disk-0,size=64M\n")
	img := fixture.WriteFile(t, t.TempDir(), "disk.raw", e.data)
	conf := fixture.WriteFile(t, t.TempDir(), "qemu.conf", e.conf)
	key, _ := fixture.Key(t, 9)
	e.keyfile = fixture.KeyFile(t, t.TempDir(), "key.json", key, crypto.KDFNone, "")
	e.local = fixture.NewStore(t)
	for _, enc := range []bool{false, true} {
		args := []string{"backup", "--store", e.local, "--backup-type", "vm", "--backup-id", "100",
			"--backup-time", map[bool]string{false: t0str, true: "2026-11-29T11:00:00Z"}[enc],
			"drive-scsi0.img:" + img, "qemu-server.conf:" + conf}
		if enc {
			args = append(args, "--keyfile", e.keyfile)
		}
		mustOK(t, args...)
	}
	want := sha(e.data)

	t.Run("nbd", func(t *testing.T) {
		needTools(t, "nbdcopy", "nbdinfo", "qemu-img")
		root := t.TempDir()
		fixture.CopyDir(t, e.local, filepath.Join(root, "bkt", "ds"))
		e.s3 = testenv.StartS3Dir(t, root)
		e.s3.AdoptFiles(t)
		bktSetEnv(t, "")
		for _, c := range []struct {
			name  string
			store []string
		}{
			{"directory", []string{"--store", e.local}},
			{"s3", []string{"--store", "s3://bkt/ds", "--s3-endpoint", e.s3.Endpoint}},
		} {
			t.Run(c.name, func(t *testing.T) {
				r, uri := serveNBD(t, append(c.store, snap0)...)
				dir := t.TempDir()
				runTool(t, "nbdcopy", "--connections=4", uri, filepath.Join(dir, "nbdcopy.raw"))
				if got := fileSHA(t, filepath.Join(dir, "nbdcopy.raw")); got != want {
					t.Errorf("nbdcopy: sha256 %s, want %s", got, want)
				}
				runTool(t, "qemu-img", "convert", "-f", "raw", "-O", "raw", uri, filepath.Join(dir, "qemu.raw"))
				if got := fileSHA(t, filepath.Join(dir, "qemu.raw")); got != want {
					t.Errorf("qemu-img convert: sha256 %s, want %s", got, want)
				}
				runTool(t, "qemu-img", "convert", "-f", "raw", "-O", "qcow2", uri, filepath.Join(dir, "out.qcow2"))
				runTool(t, "qemu-img", "compare", "-f", "qcow2", "-F", "raw", filepath.Join(dir, "out.qcow2"), filepath.Join(dir, "qemu.raw"))
				if got, w := runTool(t, "nbdinfo", "--map", uri), wantMap(t, e.local); got != w {
					t.Errorf("nbdinfo --map:\n%s\nwant (zero chunks as holes):\n%s", got, w)
				}
				if !strings.Contains(wantMap(t, e.local), "hole,zero") {
					t.Error("the image has no zero chunk: the map test proves nothing")
				}
				if code := r.stop(t); code != 0 {
					t.Errorf("serve-nbd exited %d after the interrupt:\n%s", code, r.err)
				}
			})
		}
		// A random 4 KiB read of a cold chunk costs one GET.
		t.Run("s3-one-get", func(t *testing.T) {
			needTools(t, "qemu-io")
			p := bktProxy(t, e.s3.Endpoint, 0)
			_, uri := serveNBD(t, "--store", "s3://bkt/ds", "--s3-endpoint", p.URL, snap0)
			before := p.Requests()
			runTool(t, "qemu-io", "-r", "-f", "raw", "-c", "read 17M 4k", uri)
			if n := p.Requests() - before; n != 1 {
				t.Errorf("a 4 KiB read of a cold chunk made %d requests, want 1 GET", n)
			}
			// Random reads of cold chunks at neighbouring positions (far
			// apart in bytes) start no read-ahead: one GET per chunk read,
			// none for the data chunks after them.
			_, digests := fixture.Digests(t, filepath.Join(e.local, "vm", "100", t0str, "drive-scsi0.img.fidx"))
			zero := fixture.ZeroDigest(4<<20, nil)
			seen := map[crypto.Digest]bool{zero: true, digests[17>>2]: true} // never fetched
			args := []string{"-r", "-f", "raw"}
			var want int64
			ahead := false // a data chunk after the pair read, for read-ahead to fetch
			for pos := 0; pos+1 < len(digests); pos++ {
				d0, d1 := digests[pos], digests[pos+1]
				if seen[d0] || seen[d1] || d0 == d1 {
					continue
				}
				seen[d0], seen[d1] = true, true
				want += 2
				args = append(args, "-c", fmt.Sprintf("read %d 4k", int64(pos)<<22+3<<20+512<<10),
					"-c", fmt.Sprintf("read %d 4k", int64(pos+1)<<22+256<<10))
				ahead = ahead || pos+2 < len(digests) && !seen[digests[pos+2]]
				pos++
			}
			if want == 0 || !ahead {
				t.Fatalf("no pair of neighbouring data chunks followed by data: the test proves nothing")
			}
			before = p.Requests()
			runTool(t, "qemu-io", append(args, uri)...)
			time.Sleep(time.Second) // read-ahead, if any, runs in the background
			if n := p.Requests() - before; n != want {
				t.Errorf("random 4 KiB reads of %d cold chunks made %d requests, want one GET each", want, n)
			}
		})
	})

	t.Run("tcp", func(t *testing.T) {
		needTools(t, "nbdcopy")
		mustFail(t, 2, []string{"not a loopback address", "--allow-remote"}, "serve-nbd", "--store", e.local, "--listen", "0.0.0.0:10809", snap0)
		r := start(t, "serve-nbd", "--store", e.local, "--listen", "127.0.0.1:0", snap0)
		r.waitFor(t, func() bool { return strings.Contains(r.out.String(), "nbd://127.0.0.1:") })
		uri := regexp.MustCompile(`nbd://127\.0\.0\.1:[0-9]+/drive-scsi0`).FindString(r.out.String())
		// Two clients at once, one of them with several connections.
		dir := t.TempDir()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() {
				out, err := exec.Command("nbdcopy", fmt.Sprintf("--connections=%d", 1+3*i), uri, filepath.Join(dir, fmt.Sprint(i))).CombinedOutput()
				if err != nil {
					errs[i] = fmt.Errorf("%v: %s", err, out)
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("client %d: %v", i, err)
			}
			if got := fileSHA(t, filepath.Join(dir, fmt.Sprint(i))); got != want {
				t.Errorf("client %d over TCP: sha256 %s, want %s", i, got, want)
			}
		}
	})

	t.Run("mount", func(t *testing.T) {
		needTools(t, "losetup", "mount", "umount")
		mnt := t.TempDir()
		r := start(t, "mount", "--store", e.local, snap0, mnt)
		r.waitFor(t, func() bool { return strings.Contains(r.out.String(), "mounted") })
		st, err := os.Stat(filepath.Join(mnt, "drive-scsi0.img"))
		if err != nil || st.Size() != int64(len(e.data)) {
			t.Fatalf("drive-scsi0.img: %v %v", st, err)
		}
		if got, err := os.ReadFile(filepath.Join(mnt, "qemu-server.conf")); err != nil || !bytes.Equal(got, e.conf) {
			t.Errorf("qemu-server.conf: %q %v", got, err)
		}
		dev := strings.TrimSpace(runTool(t, "losetup", "-f", "--show", "-r", filepath.Join(mnt, "drive-scsi0.img")))
		fsdir := t.TempDir()
		mounted := false
		func() {
			defer func() {
				if mounted {
					runTool(t, "umount", fsdir)
				}
				runTool(t, "losetup", "-d", dev)
			}()
			runTool(t, "mount", "-o", "ro", dev, fsdir)
			mounted = true
			if got := fileSHA(t, filepath.Join(fsdir, "etc", "known.bin")); got != sha(e.known) {
				t.Errorf("/etc/known.bin in the mounted image: sha256 %s, want %s", got, sha(e.known))
			}
		}()
		if code := r.stop(t); code != 0 || !strings.Contains(r.out.String(), "unmounted") {
			t.Errorf("mount exited %d after the interrupt:\n%s\n%s", code, r.out, r.err)
		}
		if b, _ := os.ReadFile("/proc/self/mounts"); strings.Contains(string(b), mnt) {
			t.Errorf("%s still mounted", mnt)
		}
	})

	// Interrupted while a loop device still uses it, mount detaches the
	// file system lazily and serves the loop device until it goes.
	t.Run("mount-busy", func(t *testing.T) {
		needTools(t, "losetup")
		mnt := t.TempDir()
		r := start(t, "mount", "--store", e.local, snap0, mnt)
		r.waitFor(t, func() bool { return strings.Contains(r.out.String(), "mounted") })
		dev := strings.TrimSpace(runTool(t, "losetup", "-f", "--show", "-r", filepath.Join(mnt, "drive-scsi0.img")))
		detached := false
		defer func() {
			if !detached {
				exec.Command("losetup", "-d", dev).Run()
			}
		}()
		r.cancel()
		r.waitFor(t, func() bool { return strings.Contains(r.err.String(), "detaching it lazily") })
		got, err := os.ReadFile(dev)
		if err != nil || sha(got) != want {
			t.Errorf("loop device after the interrupt: %d bytes, %v; want the image", len(got), err)
		}
		runTool(t, "losetup", "-d", dev)
		detached = true
		if code := r.stop(t); code != 0 || !strings.Contains(r.out.String(), "unmounted") {
			t.Errorf("mount exited %d:\n%s\n%s", code, r.out, r.err)
		}
	})

	t.Run("damaged", func(t *testing.T) {
		needTools(t, "qemu-io")
		store := fixture.CopyDir(t, e.local, filepath.Join(t.TempDir(), "ds"))
		_, digests := fixture.Digests(t, filepath.Join(store, "vm", "100", t0str, "drive-scsi0.img.fidx"))
		bad := digests[0] // bytes [0, 4 MiB): the superblock's chunk
		fixture.FlipByte(t, fixture.ChunkPath(store, bad), -1)
		r, uri := serveNBD(t, "--store", store, snap0)
		out, _ := exec.Command("qemu-io", "-r", "-f", "raw", "-c", "read 1M 4k", "-c", "read 4M 4k", "-c", "read 8M 64k", uri).CombinedOutput()
		o := string(out)
		if !strings.Contains(o, "Input/output error") || strings.Count(o, "bytes at offset") != 2 {
			t.Errorf("qemu-io: want EIO for the damaged chunk and the other two reads served:\n%s", o)
		}
		r.stop(t)
		if n := strings.Count(r.err.String(), "chunk "+bad.String()); n != 1 {
			t.Errorf("stderr names the damaged chunk %s %d times, want once:\n%s", bad, n, r.err)
		}
		if !strings.Contains(r.out.String(), "1 chunks missing or damaged, 1 chunk reads failed") {
			t.Errorf("summary does not count the failed read apart:\n%s", r.out)
		}

		// Through FUSE the kernel reads the damaged range several times
		// (its read-ahead, then the page): the chunk is still logged once.
		mnt := t.TempDir()
		r = start(t, "mount", "--store", store, snap0, mnt)
		r.waitFor(t, func() bool { return strings.Contains(r.out.String(), "mounted") })
		f, err := os.Open(filepath.Join(mnt, "drive-scsi0.img"))
		if err != nil {
			t.Fatal(err)
		}
		p := make([]byte, 4096)
		for range 2 {
			if _, err := f.ReadAt(p, 1<<20); !errors.Is(err, syscall.EIO) {
				t.Errorf("read of the damaged chunk through the mount: %v, want EIO", err)
			}
		}
		if _, err := f.ReadAt(p, 8<<20); err != nil {
			t.Errorf("read beside the damaged chunk through the mount: %v", err)
		}
		f.Close()
		r.stop(t)
		if n := strings.Count(r.err.String(), "chunk "+bad.String()); n != 1 {
			t.Errorf("mount: stderr names the damaged chunk %s %d times, want once:\n%s", bad, n, r.err)
		}
		if !strings.Contains(r.out.String(), "1 chunks missing or damaged") {
			t.Errorf("mount summary does not count the damaged chunk:\n%s", r.out)
		}
	})

	t.Run("encrypted", func(t *testing.T) {
		needTools(t, "nbdcopy")
		_, uri := serveNBD(t, "--store", e.local, "--keyfile", e.keyfile, instSnapEnc)
		out := filepath.Join(t.TempDir(), "enc.raw")
		runTool(t, "nbdcopy", uri, out)
		if got := fileSHA(t, out); got != want {
			t.Errorf("encrypted export: sha256 %s, want %s", got, want)
		}
		t.Setenv("HOME", t.TempDir()) // no default key file
		r := pbsWithin(t, 30*time.Second, "serve-nbd", "--store", e.local, "--socket", filepath.Join(t.TempDir(), "s"), instSnapEnc)
		// No key: not the data's fault (exit 3), the fingerprint named.
		if r.code != 3 || !strings.Contains(r.err, "missing key") || !strings.Contains(r.err, "--keyfile") {
			t.Errorf("serve-nbd of an encrypted snapshot without key: %v", r)
		}
		r = pbsWithin(t, 30*time.Second, "mount", "--store", e.local, instSnapEnc, t.TempDir())
		if r.code != 3 || !strings.Contains(r.err, "missing key") {
			t.Errorf("mount of an encrypted snapshot without key: %v", r)
		}
	})

	t.Run("stdout", func(t *testing.T) {
		for _, c := range []struct {
			snap, archive string
			want          []byte
			extra         []string
		}{
			{snap0, "drive-scsi0", e.data, nil},
			{instSnapEnc, "drive-scsi0.img", e.data, []string{"--keyfile", e.keyfile}},
			{snap0, "qemu-server.conf", e.conf, nil},
		} {
			r := mustOK(t, append([]string{"restore", "--store", e.local, c.snap, c.archive, "-"}, c.extra...)...)
			if sha([]byte(r.out)) != sha(c.want) {
				t.Errorf("restore %s %s -: %d bytes, sha256 differs", c.snap, c.archive, len(r.out))
			}
			if !strings.Contains(r.err, "to standard output") {
				t.Errorf("no summary on stderr: %v", r.err)
			}
		}
		mustFail(t, 2, []string{"json"}, "restore", "--output-format", "json", "--store", e.local, snap0, "drive-scsi0", "-")
		mustFail(t, 2, []string{"standard output"}, "drill", "--store", e.local, snap0, "drive-scsi0", "-")
	})
}
