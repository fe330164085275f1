package pxartar_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/pxar"
	"github.com/pbsdirect/pbsdirect/pxartar"
)

// gnuTar returns the path of GNU tar, skipping t when there is none or
// the test does not run as root (owners, devices, capabilities).
func gnuTar(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("extracting owners, devices and capabilities needs root")
	}
	p, err := exec.LookPath("tar")
	if err != nil {
		t.Skip("no tar")
	}
	out, _ := exec.Command(p, "--version").Output()
	if !strings.Contains(string(out), "GNU tar") {
		t.Skip("tar is not GNU tar")
	}
	if out, _ := exec.Command(p, "--help").Output(); !strings.Contains(string(out), "--acls") || !strings.Contains(string(out), "--xattrs") {
		t.Skip("GNU tar without --acls/--xattrs")
	}
	return p
}

func encode(t *testing.T, root *pxar.Node, split bool) *pxar.Archive {
	t.Helper()
	var m, p bytes.Buffer
	var pw io.Writer
	if split {
		pw = &p
	}
	if err := pxar.Encode(&m, pw, root); err != nil {
		t.Fatal(err)
	}
	var pr io.ReaderAt
	if split {
		pr = bytes.NewReader(p.Bytes())
	}
	a, err := pxar.Open(bytes.NewReader(m.Bytes()), int64(m.Len()), pr, int64(p.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestGNUTarExtracts writes a tree with every entry kind and attribute as
// a tar stream, legacy and split, extracts it with GNU tar and compares
// the result with the tree.
func TestGNUTarExtracts(t *testing.T) {
	tarBin := gnuTar(t)
	root := fixture.ExtractTree(3<<20 + 5)
	for _, split := range []bool{false, true} {
		name := map[bool]string{false: "legacy", true: "split"}[split]
		t.Run(name, func(t *testing.T) {
			a := encode(t, root, split)
			stream := filepath.Join(t.TempDir(), "a.tar")
			f, err := os.Create(stream)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := pxartar.Write(context.Background(), f, a, pxartar.Options{})
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			st, _ := os.Stat(stream)
			if rep.Written != st.Size() || rep.Sockets != 1 || rep.Hardlinks != 1 || rep.Files != 2000+7 {
				t.Errorf("report %+v (stream of %d bytes)", rep, st.Size())
			}
			dst := t.TempDir()
			cmd := exec.Command(tarBin, "--xattrs", "--xattrs-include=*", "--acls", "--numeric-owner", "-xpf", stream, "-C", dst)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("tar -x: %v\n%s", err, out)
			}
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if l != "" && !strings.Contains(l, "implausibly old time stamp") { // the 1960 mtime, restored
					t.Errorf("tar -x says: %s", l)
				}
			}
			fixture.CompareExtracted(t, dst, root, true)

			out, err = exec.Command(tarBin, "-tvf", stream).CombinedOutput()
			if err != nil {
				t.Fatalf("tar -tv: %v\n%s", err, out)
			}
			for _, want := range []string{"./plain", "./zz-hardlink link to ./with space", "./link -> ../target with space/é", "./many/f1999", strings.Repeat("r", 60)} {
				if !strings.Contains(string(out), want) {
					t.Errorf("tar -tv lists no %q", want)
				}
			}
		})
	}
}

// TestACLText checks the SCHILY.acl.* text GNU tar reads.
func TestACLText(t *testing.T) {
	g := uint64(4)
	acl := pxar.ACL{Users: []pxar.ACLEntry{{ID: 1001, Permissions: 6}}, Groups: []pxar.ACLEntry{{ID: 2001, Permissions: 5}}, GroupObj: &g,
		DefaultUsers: []pxar.ACLEntry{{ID: 7, Permissions: 1}}, Default: &pxar.ACLDefault{UserObj: 7, GroupObj: 5, Other: 0, Mask: pxar.ACLNoMask}}
	if got, want := pxartar.AccessACL(0o100750, &acl), "user::rwx\nuser:1001:rw-\ngroup::r--\ngroup:2001:r-x\nmask::r-x\nother::---\n"; got != want {
		t.Errorf("access %q, want %q", got, want)
	}
	if got, want := pxartar.DefaultACL(&acl), "user::rwx\nuser:7:--x\ngroup::r-x\nmask::r-x\nother::---\n"; got != want {
		t.Errorf("default %q, want %q", got, want)
	}
	if got := pxartar.AccessACL(0o644, &pxar.ACL{}); got != "" {
		t.Errorf("no ACL: %q", got)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// TestWriteErrors: an output error is a *WriteError naming the entry; a
// cancelled context stops the stream.
func TestWriteErrors(t *testing.T) {
	a := encode(t, fixture.ExtractTree(1<<20), true)
	_, err := pxartar.Write(context.Background(), &failWriter{n: 4096}, a, pxartar.Options{})
	var we *pxartar.WriteError
	if !errors.As(err, &we) || !pxartar.IsWriteError(err) {
		t.Fatalf("err %v, want a WriteError", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := pxartar.Write(ctx, io.Discard, a, pxartar.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}
