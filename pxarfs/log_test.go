package pxarfs_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/pbsdirect/pbsdirect/fusefs"
	"github.com/pbsdirect/pbsdirect/pxar"
	"github.com/pbsdirect/pbsdirect/pxarfs"
)

func logDir(name string, kids ...*pxar.Node) *pxar.Node {
	return &pxar.Node{Name: name, Kind: pxar.KindDir, Metadata: pxar.Metadata{Mode: 0o755}, Children: kids}
}

func openLegacy(t *testing.T, meta []byte) *pxar.Archive {
	t.Helper()
	a, err := pxar.Open(bytes.NewReader(meta), int64(len(meta)), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func encodeLegacy(t *testing.T, root *pxar.Node) []byte {
	t.Helper()
	var m bytes.Buffer
	if err := pxar.Encode(&m, nil, root); err != nil {
		t.Fatal(err)
	}
	return m.Bytes()
}

// logLines collects a tree's log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) log(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }

// TestBrowseLogsOnce: a directory holding two entries of one name lists
// the first only; each problem met while browsing (the second entry, a
// directory nested deeper than the limit) is logged once however often
// it is met, its names quoted, and the error returned is marked logged
// (fusefs.LoggedError) so that the mount does not log it again.
func TestBrowseLogsOnce(t *testing.T) {
	t.Run("duplicate name", func(t *testing.T) {
		link := &pxar.Node{Name: "a", Kind: pxar.KindSymlink, LinkTarget: "/tmp/out", Metadata: pxar.Metadata{Mode: 0o777}}
		meta := bytes.Clone(encodeLegacy(t, logDir("", link, logDir("b", &pxar.Node{Name: "f\n", Kind: pxar.KindFile, Data: []byte("x")}))))
		// Rename b to a, its goodbye hash with it.
		hash := func(name string) uint64 {
			m := encodeLegacy(t, logDir("", &pxar.Node{Name: name, Kind: pxar.KindFile}))
			return binary.LittleEndian.Uint64(m[len(m)-48:])
		}
		copy(meta[bytes.Index(meta, []byte("\x00b\x00"))+1:], "a")
		i := bytes.LastIndex(meta, binary.LittleEndian.AppendUint64(nil, hash("b")))
		binary.LittleEndian.PutUint64(meta[i:], hash("a"))
		var l logLines
		root := pxarfs.NewRoot(openLegacy(t, meta), pxarfs.Options{Log: l.log})
		for range 3 {
			ents, err := root.ReadDir()
			if err != nil {
				t.Fatal(err)
			}
			if len(ents) != 1 || ents[0].Name != "a" {
				t.Fatalf("listing %v, want a once", ents)
			}
			if _, ok := ents[0].Node.(fusefs.SymlinkNode); !ok {
				t.Errorf("a is shown as %T, want the first entry, the symlink", ents[0].Node)
			}
		}
		if len(l.lines) != 1 || !strings.Contains(l.lines[0], `"a"`) || !strings.Contains(l.lines[0], "second entry of this name") {
			t.Errorf("log %q, want one line on the second a", l.lines)
		}
	})
	t.Run("deeper than the limit", func(t *testing.T) {
		root := logDir("")
		cur := root
		for range pxar.MaxDepth + 1 {
			n := logDir("d\n")
			cur.Children = []*pxar.Node{n}
			cur = n
		}
		var l logLines
		d := pxarfs.NewRoot(openLegacy(t, encodeLegacy(t, root)), pxarfs.Options{Log: l.log})
		var err error
		for depth := 0; depth <= pxar.MaxDepth+1; depth++ {
			var ents []fusefs.DirEntry
			if ents, err = d.ReadDir(); err != nil {
				break
			}
			d = ents[0].Node.(fusefs.DirNode)
		}
		if err == nil {
			t.Fatal("no error below the depth limit")
		}
		_, err2 := d.ReadDir()
		_, err3 := d.Lookup("d\n")
		for _, e := range []error{err, err2, err3} {
			var le fusefs.LoggedError
			if !errors.As(e, &le) || !le.Logged() || !errors.Is(e, pxar.ErrFormat) {
				t.Errorf("error %.200v is not marked logged", e)
			}
		}
		if len(l.lines) != 1 || !strings.Contains(l.lines[0], "deeper than") || strings.Contains(l.lines[0], "\n") {
			t.Errorf("%d log lines, want one, escaped, on the depth: %.300q", len(l.lines), l.lines)
		}
	})
}
