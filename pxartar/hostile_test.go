package pxartar_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/pxar"
	"github.com/pbsdirect/pbsdirect/pxartar"
)

func node(name string, kind pxar.Kind, mode uint64, kids ...*pxar.Node) *pxar.Node {
	return &pxar.Node{Name: name, Kind: kind, Metadata: pxar.Metadata{Mode: mode, MTimeSec: 1700000000}, Children: kids}
}

func fileNode(name, data string) *pxar.Node {
	n := node(name, pxar.KindFile, 0o644)
	n.Data = []byte(data)
	return n
}

func symlinkNode(name, target string) *pxar.Node {
	n := node(name, pxar.KindSymlink, 0o777)
	n.LinkTarget = target
	return n
}

func hardlinkNode(name, target string) *pxar.Node {
	return &pxar.Node{Name: name, Kind: pxar.KindHardlink, LinkTarget: target}
}

// encodeBytes encodes root (legacy or split) and returns both streams.
func encodeBytes(t *testing.T, root *pxar.Node, split bool) (meta, payload []byte) {
	t.Helper()
	var m, p bytes.Buffer
	var pw io.Writer
	if split {
		pw = &p
	}
	if err := pxar.Encode(&m, pw, root); err != nil {
		t.Fatal(err)
	}
	return m.Bytes(), p.Bytes()
}

func open(t *testing.T, meta, payload []byte, split bool) *pxar.Archive {
	t.Helper()
	var pr io.ReaderAt
	if split {
		pr = bytes.NewReader(payload)
	}
	a, err := pxar.Open(bytes.NewReader(meta), int64(len(meta)), pr, int64(len(payload)))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// goodbyeHash is the goodbye table hash of name: the first item of the
// root's table in an archive holding only that name.
func goodbyeHash(t *testing.T, name string) uint64 {
	t.Helper()
	meta, _ := encodeBytes(t, node("", pxar.KindDir, 0o755, fileNode(name, "")), false)
	return binary.LittleEndian.Uint64(meta[len(meta)-48:])
}

// rename renames the entry named from (its only FILENAME item) to the
// same-length to, its goodbye table hash with it.
func rename(t *testing.T, m []byte, from, to string) {
	t.Helper()
	i := bytes.Index(m, []byte("\x00"+from+"\x00"))
	if i < 0 || len(from) != len(to) {
		t.Fatalf("no name %q", from)
	}
	copy(m[i+1:], to)
	h := binary.LittleEndian.AppendUint64(nil, goodbyeHash(t, from))
	j := bytes.LastIndex(m, h)
	if j < 0 {
		t.Fatalf("no goodbye item of %q", from)
	}
	binary.LittleEndian.PutUint64(m[j:], goodbyeHash(t, to))
}

// TestWriteRefusesHostile writes archives whose entries an extractor of
// the stream would follow out of its directory or link to what the
// archive does not hold: each is refused with an error matching
// pxar.ErrFormat naming the entry, and nothing of it or after it is in
// the stream.
func TestWriteRefusesHostile(t *testing.T) {
	cases := []struct {
		name  string
		tree  *pxar.Node
		patch func(t *testing.T, m []byte)
		want  string
		// entries the stream holds: those before the refused one
		written []string
	}{
		{name: "directory through a symlink",
			tree:  node("", pxar.KindDir, 0o755, symlinkNode("a", "/tmp/out"), node("b", pxar.KindDir, 0o755, fileNode("pwned", "x"))),
			patch: func(t *testing.T, m []byte) { rename(t, m, "b", "a") },
			want:  "named like the symlink", written: []string{"./", "./a"}},
		{name: "duplicate file name",
			tree:  node("", pxar.KindDir, 0o755, fileNode("dupa", "1"), fileNode("dupb", "2"), fileNode("z", "3")),
			patch: func(t *testing.T, m []byte) { rename(t, m, "dupb", "dupa") },
			want:  "two entries of this name", written: []string{"./", "./dupa"}},
		{name: "hardlink through a symlink",
			tree: node("", pxar.KindDir, 0o755, node("et", pxar.KindDir, 0o755, fileNode("passwd", "root")),
				hardlinkNode("h", "et/passwd"), symlinkNode("sl", "/etc")),
			patch: func(t *testing.T, m []byte) {
				i := bytes.Index(m, []byte("et/passwd\x00"))
				copy(m[i:], "sl")
			},
			want: `hardlink to "sl/passwd"`, written: []string{"./", "./et/", "./et/passwd"}},
		{name: "hardlink to a file not yet written",
			tree: node("", pxar.KindDir, 0o755, node("d", pxar.KindDir, 0o755, fileNode("f", "x")),
				hardlinkNode("h", "d/f"), node("z", pxar.KindDir, 0o755, fileNode("f", "y"))),
			patch: func(t *testing.T, m []byte) {
				i := bytes.Index(m, []byte("d/f\x00"))
				copy(m[i:], "z")
			},
			want: `hardlink to "z/f"`, written: []string{"./", "./d/", "./d/f"}},
	}
	for _, tc := range cases {
		for _, split := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: " legacy", true: " split"}[split], func(t *testing.T) {
				m, p := encodeBytes(t, tc.tree, split)
				m = bytes.Clone(m)
				tc.patch(t, m)
				var out bytes.Buffer
				_, err := pxartar.Write(context.Background(), &out, open(t, m, p, split), pxartar.Options{})
				var pe *pxar.Error
				if !errors.Is(err, pxar.ErrFormat) || !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err %v, want a refusal saying %q", err, tc.want)
				}
				t.Log(err)
				var got []string
				tr := tar.NewReader(&out)
				for {
					h, err := tr.Next()
					if err != nil {
						break
					}
					got = append(got, h.Name)
				}
				if strings.Join(got, " ") != strings.Join(tc.written, " ") {
					t.Errorf("stream holds %q, want %q", got, tc.written)
				}
			})
		}
	}
}

// TestHardlinkHeaderMetadata: a hardlink's tar header carries its target
// file's mode, owner and mtime (extractors other than GNU tar apply them
// to the shared inode).
func TestHardlinkHeaderMetadata(t *testing.T) {
	target := fileNode("file", "content")
	target.Metadata = pxar.Metadata{Mode: 0o4750, UID: 1234, GID: 567, MTimeSec: 1712345678, MTimeNsec: 123456789}
	root := node("", pxar.KindDir, 0o755, target, hardlinkNode("link", "file"))
	for _, split := range []bool{false, true} {
		m, p := encodeBytes(t, root, split)
		var out bytes.Buffer
		if _, err := pxartar.Write(context.Background(), &out, open(t, m, p, split), pxartar.Options{}); err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(&out)
		found := false
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Typeflag != tar.TypeLink {
				continue
			}
			found = true
			if h.Linkname != "./file" || h.Mode != 0o4750 || h.Uid != 1234 || h.Gid != 567 || !h.ModTime.Equal(time.Unix(1712345678, 123456789)) {
				t.Errorf("split %v: link header %q → %q mode %o uid %d gid %d mtime %v", split, h.Name, h.Linkname, h.Mode, h.Uid, h.Gid, h.ModTime)
			}
		}
		if !found {
			t.Errorf("split %v: no hardlink entry", split)
		}
	}
}
