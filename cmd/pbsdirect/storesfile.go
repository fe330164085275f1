package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
)

// defaultStoresFile is the stores file read for a named store (--store
// @NAME) without --stores-config: $XDG_CONFIG_HOME/pbsdirect/stores.conf,
// XDG_CONFIG_HOME defaulting to ~/.config (os.UserConfigDir); "" when
// neither is known.
func defaultStoresFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "pbsdirect", "stores.conf")
}

// expandStore returns the store specification that spec, given with flag
// (--store, --from), stands for: a named store ("@NAME[/PATH]") read from
// the stores file (--stores-config, else defaultStoresFile; read once per
// run), else spec itself. A stores file that is missing or does not parse
// and a name it does not have are usage errors naming flag and file.
func (s *storeFlags) expandStore(flag, spec string) (string, error) {
	if !backends.IsNamed(spec) {
		return spec, nil
	}
	if s.named == nil {
		path := s.storesConfig
		if path == "" {
			path = defaultStoresFile()
		}
		if path == "" {
			return "", usagef("%s %s: no stores file: give --stores-config FILE (no $XDG_CONFIG_HOME or $HOME to find the default)", flag, spec)
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return "", usagef("%s %s names a store of the stores file, and there is no %s (write one, see docs/BUCKETS.md, or give --stores-config FILE; a directory whose name starts with @ is written ./@…)", flag, spec, path)
		}
		if err != nil {
			return "", usageOf(err)
		}
		n, err := backends.ParseNamedStores(path, data)
		if err != nil {
			return "", usageOf(err)
		}
		s.named = n
	}
	out, err := s.named.Expand(spec)
	if err != nil {
		return "", usagef("%s %v", flag, err)
	}
	return out, nil
}
