package backends_test

import (
	"errors"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
)

// TestSettings: settings parse into Options; one that does not is a
// SettingError naming it; --retry-for 0 means no retries.
func TestSettings(t *testing.T) {
	opts, err := backends.Settings{Layout: "plain", S3PathStyle: "true", IOTimeout: time.Second}.Options(true, 7)
	if err != nil || opts.Layout != backends.LayoutPlain || !opts.Create || opts.Concurrency != 7 || opts.Policy.RetryFor != -1 || opts.Policy.IOTimeout != time.Second {
		t.Errorf("options: %+v, %v", opts, err)
	}
	for _, c := range []struct {
		s    backends.Settings
		name string
	}{
		{backends.Settings{Layout: "flat"}, "--bucket-layout"},
		{backends.Settings{S3PathStyle: "maybe"}, "--s3-path-style"},
		{backends.Settings{S3Fingerprint: "zz"}, "--s3-fingerprint"},
	} {
		_, err := c.s.Options(false, 1)
		var se *backends.SettingError
		if !errors.As(err, &se) || se.Setting != c.name {
			t.Errorf("%+v: %v, want a SettingError for %s", c.s, err, c.name)
		}
	}
}

// TestCheckSpec: malformed bucket URLs are refused, directories and
// bucket URLs pass.
func TestCheckSpec(t *testing.T) {
	for spec, ok := range map[string]bool{
		"/mnt/ds": true, "ds": true, "s3://b/p": true, "gs://b": true, "./s3:x": true,
		"s3:/b": false, "S3://b": false, "gs:b": false, "s3://": false,
	} {
		if err := backends.CheckSpec(spec); (err == nil) != ok {
			t.Errorf("CheckSpec(%q) = %v, want ok %v", spec, err, ok)
		}
	}
}
