package nbd_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/nbd"
)

// needTools skips the test without the NBD clients (fails it when CI is set).
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI is set, not skipping: %s missing (apt-get install libnbd-bin qemu-utils)", tool)
			}
			t.Skipf("%s missing (apt-get install libnbd-bin qemu-utils)", tool)
		}
	}
}

// memExport serves data; [zeroOff, zeroOff+zeroLen) is a zero extent, and
// reads touching [badOff, badOff+badLen) fail.
type memExport struct {
	data            []byte
	zeroOff, zeroLn int64
	badOff, badLen  int64
	badErr          error // errBad when nil
}

var errBad = errors.New("damaged")

// loggedErr is a read error its Data logged.
type loggedErr struct{ error }

func (loggedErr) Logged() bool { return true }

func (m *memExport) ReadAt(p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	if m.badLen > 0 && off < m.badOff+m.badLen && end > m.badOff {
		n := max(m.badOff-off, 0)
		copy(p[:n], m.data[off:])
		if m.badErr != nil {
			return int(n), m.badErr
		}
		return int(n), errBad
	}
	return copy(p, m.data[off:]), nil
}

func (m *memExport) extents(off, length int64) []nbd.Extent {
	var out []nbd.Extent
	end := off + length
	add := func(a, b int64, zero bool) {
		a, b = max(a, off), min(b, end)
		if a < b {
			out = append(out, nbd.Extent{Offset: a, Length: b - a, Zero: zero})
		}
	}
	add(0, m.zeroOff, false)
	add(m.zeroOff, m.zeroOff+m.zeroLn, true)
	add(m.zeroOff+m.zeroLn, int64(len(m.data)), false)
	return out
}

// serve starts a server of exports on a Unix socket and returns its path.
func serve(t *testing.T, s *nbd.Server) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nbd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return sock
}

func testExport() *memExport {
	rng := rand.New(rand.NewPCG(1, 1))
	data := make([]byte, 8<<20+1234)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	clear(data[1<<20 : 3<<20])
	return &memExport{data: data, zeroOff: 1 << 20, zeroLn: 2 << 20}
}

func newServer(m *memExport) *nbd.Server {
	return &nbd.Server{Exports: []nbd.Export{
		{Name: "disk", Description: "test disk", Size: int64(len(m.data)), Data: m, Extents: m.extents, PreferredBlockSize: 1 << 20},
		{Name: "small", Size: 4096, Data: bytes.NewReader(make([]byte, 4096))},
	}}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestClients: real NBD clients list the exports, see the size and block
// size hints, map the zero extent as a hole, and copy the export byte-exact
// (nbdcopy over several connections, qemu-img convert).
func TestClients(t *testing.T) {
	needTools(t, "nbdinfo", "nbdcopy", "qemu-img")
	m := testExport()
	sock := serve(t, newServer(m))
	uri := "nbd+unix:///disk?socket=" + sock

	list := run(t, "nbdinfo", "--list", "nbd+unix://?socket="+sock)
	for _, w := range []string{"export=\"disk\"", "export=\"small\"", "test disk", "is_read_only: true"} {
		if !strings.Contains(list, w) {
			t.Errorf("nbdinfo --list lacks %q:\n%s", w, list)
		}
	}
	info := run(t, "nbdinfo", uri)
	for _, w := range []string{"export-size: 8389842", "block_size_preferred: 1048576", "can_multi_conn: true", "is_read_only: true", "base:allocation"} {
		if !strings.Contains(info, w) {
			t.Errorf("nbdinfo lacks %q:\n%s", w, info)
		}
	}
	mp := run(t, "nbdinfo", "--map", uri)
	want := "         0     1048576    0  data\n   1048576     2097152    3  hole,zero\n   3145728     5244114    0  data\n"
	if mp != want {
		t.Errorf("nbdinfo --map:\n%s\nwant:\n%s", mp, want)
	}

	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
	}{
		{"nbdcopy", []string{"nbdcopy", "--connections=4", "--requests=8", uri, filepath.Join(dir, "nbdcopy.raw")}},
		{"nbdcopy-1", []string{"nbdcopy", "--connections=1", "--request-size=65536", uri, filepath.Join(dir, "nbdcopy1.raw")}},
		{"qemu-img", []string{"qemu-img", "convert", "-f", "raw", "-O", "raw", uri, filepath.Join(dir, "qemu.raw")}},
	} {
		run(t, c.args[0], c.args[1:]...)
		got, err := os.ReadFile(c.args[len(c.args)-1])
		if err != nil {
			t.Fatal(err)
		}
		if c.name == "qemu-img" && len(got) > len(m.data) {
			// QEMU rounds sizes up to 512-byte sectors; the tail reads as zeros.
			if tail := got[len(m.data):]; len(tail) >= 512 || !bytes.Equal(tail, make([]byte, len(tail))) {
				t.Errorf("qemu-img: %d bytes past the end", len(tail))
			}
			got = got[:len(m.data)]
		}
		if sha256.Sum256(got) != sha256.Sum256(m.data) {
			t.Logf("%s: %d bytes, want %d", c.name, len(got), len(m.data))
			t.Errorf("%s: copy differs from the export", c.name)
		}
	}
}

// TestReadError: a read that fails gets EIO for that request only; reads
// elsewhere keep working on the same connection, and writes are refused.
// The failure is logged unless the export's Data logged it itself.
func TestReadError(t *testing.T) {
	needTools(t, "qemu-io")
	for _, c := range []struct {
		name    string
		err     error
		wantLog bool
	}{
		{"plain", nil, true},
		{"logged-by-data", fmt.Errorf("chunk: %w", loggedErr{errors.New("damaged, logged")}), false},
	} {
		t.Run(c.name, func(t *testing.T) { testReadError(t, c.err, c.wantLog) })
	}
}

func testReadError(t *testing.T, badErr error, wantLog bool) {
	m := testExport()
	m.badOff, m.badLen, m.badErr = 5<<20, 4096, badErr
	var (
		mu     sync.Mutex
		logged []string
	)
	s := newServer(m)
	s.Log = func(msg string) {
		mu.Lock()
		logged = append(logged, msg)
		mu.Unlock()
	}
	sock := serve(t, s)
	uri := "nbd+unix:///disk?socket=" + sock
	out, _ := exec.Command("qemu-io", "-r", "-f", "raw",
		"-c", "read -P 0 1M 4k",
		"-c", "read 5M 4k",
		"-c", "read 4M 4k",
		"-c", "read 6M 64k", uri).CombinedOutput()
	o := string(out)
	if strings.Count(o, "read 4096/4096 bytes") != 2 || !strings.Contains(o, "read 65536/65536 bytes") || !strings.Contains(o, "Input/output error") {
		t.Errorf("qemu-io: want three good reads and one EIO:\n%s", o)
	}
	mu.Lock()
	n := 0
	for _, l := range logged {
		n += strings.Count(l, "damaged")
	}
	if wantLog && n != 1 || !wantLog && n != 0 {
		t.Errorf("failed read logged %d times, want %d: %q", n, map[bool]int{true: 1}[wantLog], logged)
	}
	mu.Unlock()
	out, err := exec.Command("qemu-io", "-f", "raw", "-c", "write 0 4k", uri).CombinedOutput()
	if err == nil && !strings.Contains(string(out), "error") && !strings.Contains(string(out), "read-only") {
		t.Errorf("write accepted:\n%s", out)
	}
}

// rawClient speaks the protocol by hand, for cases real clients never send.
type rawClient struct {
	t *testing.T
	c net.Conn
}

func dial(t *testing.T, sock string) *rawClient {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rawClient{t: t, c: c}
	hello := rc.read(18)
	if binary.BigEndian.Uint64(hello) != 0x4e42444d41474943 || binary.BigEndian.Uint64(hello[8:]) != 0x49484156454F5054 {
		t.Fatalf("bad greeting %x", hello)
	}
	rc.write(binary.BigEndian.AppendUint32(nil, 3)) // fixed newstyle, no zeroes
	return rc
}

func (rc *rawClient) read(n int) []byte {
	rc.t.Helper()
	b := make([]byte, n)
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(rc.c, b); err != nil {
		rc.t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

func (rc *rawClient) write(b []byte) {
	rc.t.Helper()
	if _, err := rc.c.Write(b); err != nil {
		rc.t.Fatal(err)
	}
}

// option sends an option and returns the type and data of the first reply.
func (rc *rawClient) option(opt uint32, data []byte) (uint32, []byte) {
	rc.t.Helper()
	b := binary.BigEndian.AppendUint64(nil, 0x49484156454F5054)
	b = binary.BigEndian.AppendUint32(b, opt)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	rc.write(append(b, data...))
	h := rc.read(20)
	return binary.BigEndian.Uint32(h[12:]), rc.read(int(binary.BigEndian.Uint32(h[16:])))
}

// goExport sends NBD_OPT_GO for name and reads replies up to the final one.
func (rc *rawClient) goExport(name string) uint32 {
	rc.t.Helper()
	d := binary.BigEndian.AppendUint32(nil, uint32(len(name)))
	d = append(d, name...)
	d = binary.BigEndian.AppendUint16(d, 0)
	typ, _ := rc.option(7, d)
	for typ == 3 { // NBD_REP_INFO
		h := rc.read(20)
		typ = binary.BigEndian.Uint32(h[12:])
		rc.read(int(binary.BigEndian.Uint32(h[16:])))
	}
	return typ
}

// request sends a command and returns the simple reply's error.
func (rc *rawClient) request(typ uint16, off uint64, length uint32, payload []byte) uint32 {
	rc.t.Helper()
	b := binary.BigEndian.AppendUint32(nil, 0x25609513)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint16(b, typ)
	b = binary.BigEndian.AppendUint64(b, 42)
	b = binary.BigEndian.AppendUint64(b, off)
	b = binary.BigEndian.AppendUint32(b, length)
	rc.write(append(b, payload...))
	h := rc.read(16)
	if binary.BigEndian.Uint32(h) != 0x67446698 || binary.BigEndian.Uint64(h[8:]) != 42 {
		rc.t.Fatalf("bad simple reply %x", h)
	}
	return binary.BigEndian.Uint32(h[4:])
}

// TestProtocolEdges: unknown exports and options are refused with the
// right replies, and in transmission writes get EPERM, reads past the end
// EINVAL and block status without a meta context EINVAL, while the
// connection keeps serving.
func TestProtocolEdges(t *testing.T) {
	m := testExport()
	sock := serve(t, newServer(m))
	rc := dial(t, sock)
	if typ, _ := rc.option(99, nil); typ != 1<<31+1 {
		t.Errorf("unknown option: reply %#x, want NBD_REP_ERR_UNSUP", typ)
	}
	if typ, _ := rc.option(5, nil); typ != 1<<31+2 {
		t.Errorf("STARTTLS: reply %#x, want NBD_REP_ERR_POLICY", typ)
	}
	meta := binary.BigEndian.AppendUint32(nil, 4)
	meta = append(meta, "disk"...)
	meta = binary.BigEndian.AppendUint32(meta, 1)
	meta = binary.BigEndian.AppendUint32(meta, uint32(len("base:allocation")))
	meta = append(meta, "base:allocation"...)
	if typ, _ := rc.option(10, meta); typ != 1<<31+3 {
		t.Errorf("SET_META_CONTEXT before STRUCTURED_REPLY: reply %#x, want NBD_REP_ERR_INVALID", typ)
	}
	if typ := rc.goExport("nosuch"); typ != 1<<31+6 {
		t.Errorf("GO of an unknown export: reply %#x, want NBD_REP_ERR_UNKNOWN", typ)
	}
	if typ := rc.goExport("disk"); typ != 1 {
		t.Fatalf("GO disk: reply %#x, want NBD_REP_ACK", typ)
	}
	size := uint64(len(m.data))
	if e := rc.request(1, 0, 4096, make([]byte, 4096)); e != 1 {
		t.Errorf("write: error %d, want EPERM", e)
	}
	if e := rc.request(0, size-10, 20, nil); e != 22 {
		t.Errorf("read past the end: error %d, want EINVAL", e)
	}
	if e := rc.request(7, 0, 4096, nil); e != 22 {
		t.Errorf("block status without a meta context: error %d, want EINVAL", e)
	}
	if e := rc.request(0, size-10, 10, nil); e != 0 {
		t.Fatalf("read of the last 10 bytes: error %d", e)
	}
	if got := rc.read(10); !bytes.Equal(got, m.data[size-10:]) {
		t.Errorf("last 10 bytes: %x, want %x", got, m.data[size-10:])
	}
}
