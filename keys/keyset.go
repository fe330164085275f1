package keys

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/pbsdirect/pbsdirect/crypto"
)

// Fingerprint returns the key fingerprint the key file (or paper key) at
// path carries, read without its passphrase: ok is false for a file that
// carries none (only opening it tells its key). It does not prove the
// claim: opening the file does (crypto.KeyFile.Open). Errors are Load's,
// and an ErrUsage error naming path for a fingerprint that does not parse.
func Fingerprint(path string) (fp crypto.Fingerprint, ok bool, err error) {
	kf, err := Load(path)
	if err != nil {
		return fp, false, err
	}
	if kf.Fingerprint == "" {
		return fp, false, nil
	}
	if fp, err = crypto.ParseFingerprint(kf.Fingerprint); err != nil {
		return fp, false, &classError{class: ErrUsage, msg: fmt.Sprintf("key file %s: fingerprint: %v", path, err), err: err}
	}
	return fp, true, nil
}

// DirFiles returns the key files of the directory dir: its regular files
// that parse as key files or paper keys (Load), in name order. Symbolic
// links and subdirectories are not followed, so that a directory of keys
// cannot name a file outside it; they and the files that are not key
// files are returned in skipped, one line each ("name: why", the name in dir) for a note.
// A directory that holds no key file, or one that cannot be read, is an
// ErrUsage error naming it.
func DirFiles(dir string) (files, skipped []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, notThereUsage(fmt.Errorf("key directory: %w", err))
	}
	for _, e := range ents { // os.ReadDir sorts by name
		p := filepath.Join(dir, e.Name())
		if !e.Type().IsRegular() {
			skipped = append(skipped, fmt.Sprintf("%s: not a regular file (links and subdirectories are not followed)", e.Name()))
			continue
		}
		if _, err := Load(p); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: not a key file (%v)", e.Name(), err))
			continue
		}
		files = append(files, p)
	}
	if len(files) == 0 {
		return nil, skipped, usagef("key directory %s holds no key file", dir)
	}
	return files, skipped, nil
}
