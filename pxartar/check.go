package pxartar

import (
	"fmt"
	"path"

	"github.com/pbsdirect/pbsdirect/pxar"
)

// checker refuses the entries of an archive that a tar stream must not
// carry, as the extractor refuses them: a second entry of one name in a
// directory (a directory named like an earlier symlink would send what
// follows through it), and a hardlink whose target is not a regular file
// written earlier in the stream (an extractor would link to whatever is
// at that path: a file through a symlink, or one outside the archive).
// It keeps the names of the directories open in the walk and the paths
// of the regular files written.
type checker struct {
	a     *pxar.Archive
	open  []openDir
	files map[string]struct{}
}

// openDir is a directory of the walk whose entries are not all written:
// its path and the kinds of the names met in it so far.
type openDir struct {
	path  string
	names map[string]pxar.Kind
}

func newChecker(a *pxar.Archive) *checker {
	return &checker{a: a, files: map[string]struct{}{}}
}

// refused is an error matching pxar.ErrFormat naming entry e.
func refused(e *pxar.Entry, format string, args ...any) error {
	return &pxar.Error{Path: e.Path, Stream: pxar.StreamMeta, Offset: e.Offset(),
		Err: fmt.Errorf("%w: %s", pxar.ErrFormat, fmt.Sprintf(format, args...))}
}

// check admits entry e, next in archive order, or refuses it (an error
// matching pxar.ErrFormat). For a hardlink it returns its target file.
func (c *checker) check(e *pxar.Entry) (*pxar.Entry, error) {
	if e.Path == "." || e.Path == "" {
		c.open = append(c.open[:0], openDir{path: ".", names: map[string]pxar.Kind{}})
		return nil, nil
	}
	parent := path.Dir(e.Path)
	for len(c.open) > 0 && c.open[len(c.open)-1].path != parent {
		c.open = c.open[:len(c.open)-1]
	}
	if len(c.open) == 0 {
		return nil, refused(e, "entry outside the directories walked")
	}
	names := c.open[len(c.open)-1].names
	if k, dup := names[e.Name]; dup {
		if k == pxar.KindSymlink {
			return nil, refused(e, "a %s named like the symlink written before it in its directory (what follows would go through the symlink)", e.Kind)
		}
		return nil, refused(e, "the directory holds two entries of this name (a %s, then a %s)", k, e.Kind)
	}
	names[e.Name] = e.Kind
	switch e.Kind {
	case pxar.KindDir:
		c.open = append(c.open, openDir{path: e.Path, names: map[string]pxar.Kind{}})
	case pxar.KindFile:
		c.files[e.Path] = struct{}{}
	case pxar.KindHardlink:
		if _, ok := c.files[e.LinkTarget]; !ok {
			return nil, refused(e, "hardlink to %q, which is no regular file written before it", e.LinkTarget)
		}
		return c.a.HardlinkTarget(e)
	}
	return nil, nil
}
