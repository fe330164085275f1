package main

import (
	"errors"
	"io/fs"
)

// dirArgProblem says what is wrong with a directory argument, given what
// os.Stat returned for it (err, and whether it is a directory when err is
// nil): "no such directory" when it does not exist, "not a directory" when
// it is something else, the stat error otherwise (permission denied); ""
// when it is a directory.
func dirArgProblem(err error, isDir bool) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such directory"
	case err != nil:
		return err.Error()
	case !isDir:
		return "not a directory"
	}
	return ""
}
