package chunkstore

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// TestNamesLocation: a location is named by a *LocatedError or an
// *fs.PathError anywhere in an error's tree (wrapped, joined), never by
// text that merely contains it.
func TestNamesLocation(t *testing.T) {
	const loc = "/ds/.chunks/abcd/abcdef"
	located := &LocatedError{Location: loc, Err: ErrEmpty}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"located", located, true},
		{"located, wrapped", fmt.Errorf("chunk x: %w", located), true},
		{"path error", fmt.Errorf("chunk x: %w", &fs.PathError{Op: "open", Path: loc, Err: fs.ErrNotExist}), true},
		{"joined, second", JoinErrors(errors.New("a"), fmt.Errorf("m: %w", located)), true},
		{"errors.Join", errors.Join(ErrNotFound, located), true},
		{"another location", &LocatedError{Location: loc + ".0.bad", Err: ErrEmpty}, false},
		{"prefix directory", &fs.PathError{Op: "open", Path: "/ds/.chunks/abcd", Err: fs.ErrNotExist}, false},
		{"only in the text", errors.New("the server says: " + loc), false},
		{"only in a %v", fmt.Errorf("chunk x: %v", located), false},
	} {
		if got := NamesLocation(c.err, loc); got != c.want {
			t.Errorf("%s: NamesLocation(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
	if msg := located.Error(); msg != loc+": "+ErrEmpty.Error() || !errors.Is(located, ErrEmpty) || !Damaged(fmt.Errorf("%w", located)) {
		t.Errorf("LocatedError: %q, Is ErrEmpty %v", msg, errors.Is(located, ErrEmpty))
	}
}
