package backends_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
	"github.com/pbsdirect/pbsdirect/chunkstore/s3store"
)

// TestStoreOptions: a bucket specification's query parameters are that
// store's own settings, applied over the command line's; what is not
// given keeps the command line's value; directories take "?" literally.
func TestStoreOptions(t *testing.T) {
	global := backends.Options{Concurrency: 9}
	global.S3.Endpoint, global.S3.Region = "https://global.example", "eu-west-1"
	cases := []struct {
		spec, base string
		check      func(o backends.Options) bool
	}{
		{"s3://b/p", "s3://b/p", func(o backends.Options) bool {
			return o.S3.Endpoint == "https://global.example" && o.S3.Region == "eu-west-1"
		}},
		{"s3://b/p?endpoint=https://acc.r2.cloudflarestorage.com&region=auto&path-style=true&profile=r2", "s3://b/p", func(o backends.Options) bool {
			return o.S3.Endpoint == "https://acc.r2.cloudflarestorage.com" && o.S3.Region == "auto" && o.S3.PathStyle == s3store.PathStyleOn && o.S3.Profile == "r2" && o.Concurrency == 9
		}},
		{"s3://b?region=us-west-2", "s3://b", func(o backends.Options) bool {
			return o.S3.Endpoint == "https://global.example" && o.S3.Region == "us-west-2"
		}},
		{"s3://b/p?path-style&env=MINIO", "s3://b/p", func(o backends.Options) bool {
			return o.S3.PathStyle == s3store.PathStyleOn && o.S3.EnvPrefix == "MINIO"
		}},
		{"s3://b/p?credentials-file=/etc/creds", "s3://b/p", func(o backends.Options) bool { return o.S3.CredentialsFile == "/etc/creds" }},
		{"s3://b/p?fingerprint=" + strings.Repeat("ab:", 31) + "ab", "s3://b/p", func(o backends.Options) bool { return o.S3.Fingerprint != "" }},
		{"gs://g/p?endpoint=http://127.0.0.1:4443&anonymous=true", "gs://g/p", func(o backends.Options) bool {
			return o.GCS.Endpoint == "http://127.0.0.1:4443" && o.GCS.NoAuth && o.S3.Endpoint == "https://global.example"
		}},
		{"gs://g?credentials-file=/etc/sa%20key.json", "gs://g", func(o backends.Options) bool { return o.GCS.CredentialsFile == "/etc/sa key.json" }},
		{"gs://g?credentials-file=/x.json&anonymous=false", "gs://g", func(o backends.Options) bool { return !o.GCS.NoAuth }},
		{"/mnt/ds?x=1", "/mnt/ds?x=1", func(o backends.Options) bool { return o.S3.Endpoint == "https://global.example" }},
	}
	for _, c := range cases {
		base, o, err := backends.StoreOptions(c.spec, global)
		if err != nil || base != c.base || !c.check(o) {
			t.Errorf("StoreOptions(%q) = %q, %+v, %v", c.spec, base, o, err)
		}
		if err := backends.CheckSpec(c.spec); err != nil {
			t.Errorf("CheckSpec(%q) = %v", c.spec, err)
		}
	}
	if global.S3.Profile != "" || global.S3.Region != "eu-west-1" {
		t.Errorf("the command line's options changed: %+v", global.S3)
	}
}

// TestStoreParamErrors: an unknown parameter, one given twice or a value
// that does not parse is a *ParamError naming the store and the
// parameter, and never prints the value of an unknown parameter (it may
// be a secret typed by mistake).
func TestStoreParamErrors(t *testing.T) {
	cases := []struct {
		spec, param, msg string
	}{
		{"s3://b/p?secret-key=hunter2", "secret-key", "unknown; s3:// stores take endpoint, region"},
		{"s3://b/p?region=a&region=b", "region", "given twice"},
		{"s3://b/p?path-style=maybe", "path-style", "invalid S3 path style"},
		{"s3://b/p?fingerprint=zz", "fingerprint", "invalid certificate fingerprint"},
		{"s3://b/p?env=R2-PROD", "env", "invalid environment variable prefix"},
		{"s3://b/p?endpoint=", "endpoint", "needs a value"},
		{"s3://b/p?endpoint=https://key:hunter2@host", "endpoint", "carries no credentials"},
		{"s3://b/p?endpoint=ftp://host", "endpoint", "http:// or https://"},
		{"s3://b/p?anonymous=true", "anonymous", "unknown"},
		{"gs://b/p?region=auto", "region", "gs:// stores take endpoint, credentials-file or anonymous"},
		{"gs://b/p?anonymous=perhaps", "anonymous", "want true or false"},
		{"s3://b/p?endpoint=%zz", "endpoint", "not URL-encoded"},
		{"s3://b/p?region=a/b", "region", "want a region"},
		{"s3://b/p?region=us%20east", "region", "want a region"},
		{"s3://b/p?region=%E2%80%AE", "region", "want a region"},
		{"s3://b/p?region=" + strings.Repeat("a", 64), "region", "want a region"},
		{"s3://b/p?endpoint=http://127.0.0.1:7071?x=1", "endpoint", "no query or fragment"},
		{"s3://b/p?endpoint=http://127.0.0.1:7071%23top", "endpoint", "no query or fragment"},
		{"gs://b/p?endpoint=http://h?", "endpoint", "no query or fragment"},
		{"s3://b/p?env=A&profile=x", "env", "not both"},
		{"s3://b/p?credentials-file=/x&env=A", "env", "not both"},
		{"gs://b/p?anonymous&credentials-file=/x.json", "anonymous", "not both"},
	}
	for _, c := range cases {
		_, _, err := backends.StoreOptions(c.spec, backends.Options{})
		var pe *backends.ParamError
		if !errors.As(err, &pe) || pe.Param != c.param || !strings.Contains(err.Error(), c.msg) || !strings.HasPrefix(pe.Store, c.spec[:7]) {
			t.Errorf("StoreOptions(%q) = %v, want a ParamError for %q saying %q", c.spec, err, c.param, c.msg)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("StoreOptions(%q): the error shows a secret: %v", c.spec, err)
		}
		if err := backends.CheckSpecFlag("--from", c.spec); err == nil || !strings.HasPrefix(err.Error(), "--from s3://b/p") && !strings.HasPrefix(err.Error(), "--from gs://b/p") {
			t.Errorf("CheckSpecFlag(%q) = %v, want an error naming --from and the store", c.spec, err)
		}
	}
}

// TestDisplaySpec: specifications print with the values of unknown
// parameters and URL passwords hidden, known settings as given.
func TestDisplaySpec(t *testing.T) {
	for spec, want := range map[string]string{
		"s3://b/p": "s3://b/p",
		"s3://b/p?endpoint=https://h:9000&region=auto&profile=r2": "s3://b/p?endpoint=https://h:9000&region=auto&profile=r2",
		"s3://b/p?secret-key=hunter2&region=x":                    "s3://b/p?secret-key=xxxxx&region=x",
		"s3://b/p?endpoint=https://key:hunter2@h&path-style":      "s3://b/p?endpoint=https://key:xxxxx@h&path-style",
		"gs://g?credentials-file=/etc/sa.json&anonymous=false":    "gs://g?credentials-file=/etc/sa.json&anonymous=false",
		"s3://b/p?endpoint=%zz&key=hunter2":                       "s3://b/p?xxxxx",
		"/mnt/ds?dir":                                             "/mnt/ds?dir",
		"s3://AKA:hunter2@pbs/store1?region=x":                    "s3://AKA:xxxxx@pbs/store1?region=x",
		"gs://u:hunter2@g/p@q":                                    "gs://u:xxxxx@g/p@q",
		"s3://b/p@q":                                              "s3://b/p@q",
	} {
		if got := backends.DisplaySpec(spec); got != want {
			t.Errorf("DisplaySpec(%q) = %q, want %q", spec, got, want)
		}
	}
}

// TestSameStoreEndpoints: two buckets of the same name and prefix behind
// different endpoints are different stores.
func TestSameStoreEndpoints(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"s3://b/p", "s3://b/p/", true},
		{"s3://b/p?region=x", "s3://b/p", true},
		{"s3://b/p?endpoint=https://one", "s3://b/p?endpoint=https://two", false},
		{"s3://b/p?endpoint=https://one", "s3://b/p", false},
		{"s3://b/p?endpoint=https://one&profile=a", "s3://b/p?profile=b&endpoint=https://one", true},
	} {
		if got := backends.SameStore(c.a, c.b); got != c.same {
			t.Errorf("SameStore(%q, %q) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// TestBucketUserinfoRefused: credentials written before a bucket's name
// are refused before anything is opened, the password hidden in the
// error; an "@" in the prefix is an ordinary character.
func TestBucketUserinfoRefused(t *testing.T) {
	for _, spec := range []string{
		"s3://AKA:hunter2@pbs/store1?endpoint=http://127.0.0.1:1",
		"s3://AKA:hunter2@pbs",
		"gs://u:hunter2@pbs/p",
	} {
		err := backends.CheckSpecFlag("--store", spec)
		if err == nil || !strings.Contains(err.Error(), ":xxxxx@pbs") || !strings.Contains(err.Error(), "carries no credentials") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("CheckSpecFlag(%q) = %v, want a refusal without the password", spec, err)
		}
		if _, err := backends.Open(t.Context(), spec, backends.Options{}); err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q) = %v, want a refusal without the password", spec, err)
		}
	}
	if err := backends.CheckSpec("s3://b/p@q"); err != nil {
		t.Errorf("CheckSpec(s3://b/p@q) = %v", err)
	}
}
