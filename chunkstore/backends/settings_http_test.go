package backends_test

import (
	"errors"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/chunkstore/bucket"
)

// TestSettingsHTTP: --bucket-http reaches the request policy of both
// bucket backends; a value that does not parse is a SettingError naming
// it.
func TestSettingsHTTP(t *testing.T) {
	for in, want := range map[string]bucket.HTTPVersion{"": bucket.HTTPAuto, "auto": bucket.HTTPAuto, "1.1": bucket.HTTP1, "2": bucket.HTTP2} {
		opts, err := backends.Settings{HTTP: in}.Options(false, 4)
		if err != nil || opts.Policy.HTTP != want {
			t.Errorf("--bucket-http %q: %v, %v; want %v", in, opts.Policy.HTTP, err, want)
		}
	}
	_, err := backends.Settings{HTTP: "3"}.Options(false, 4)
	var se *backends.SettingError
	if !errors.As(err, &se) || se.Setting != "--bucket-http" {
		t.Errorf("--bucket-http 3: %v, want a SettingError for --bucket-http", err)
	}
}
