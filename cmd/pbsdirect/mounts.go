package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pbsdirect/pbsdirect/fsutil/mountpoint"
)

// checkNewDatastore is called before a backup into the directory dir: when
// dir holds no datastore yet (no .chunks), it refuses (exit 3, as a store
// that is not there) when dir is at or below a configured mount point
// (/etc/fstab, a systemd mount unit) where nothing is mounted, and
// otherwise says on stderr that a new datastore is made. A dir that is not
// a directory is a usage error.
func checkNewDatastore(dir string, stderr io.Writer) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if st, err := os.Stat(abs); err == nil && !st.IsDir() {
		return usagef("--store %s: not a directory", dir)
	}
	if _, err := os.Stat(filepath.Join(abs, ".chunks")); err == nil {
		return nil
	}
	if p := mountpoint.Unmounted(abs); p != "" {
		return &storeMissingError{fmt.Errorf("%s: no datastore there, and %s is a configured mount point with nothing mounted: not creating one on the file system below it", dir, p)}
	}
	fmt.Fprintf(stderr, "pbsdirect: note: %s holds no datastore: creating a new one\n", dir)
	return nil
}
