package backends_test

import (
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore/backends"
)

// TestNamedStores: a stores file names bucket stores with their settings;
// @NAME and @NAME/PATH expand to specifications that open as a --store
// with the same query would; errors name the file and line, never a
// value.
func TestNamedStores(t *testing.T) {
	file := `# stores
[r2]
url = s3://pbs/store1
endpoint = https://acc.r2.cloudflarestorage.com
region = auto
profile = r2

; a mirror
[gcs.copy]
url = gs://copy?anonymous=false
credentials-file = /etc/pbs dir/sa.json
`
	n, err := backends.ParseNamedStores("stores.conf", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	for spec, want := range map[string]string{
		"@r2":             "s3://pbs/store1?endpoint=https%3A%2F%2Facc.r2.cloudflarestorage.com&region=auto&profile=r2",
		"@r2/more/":       "s3://pbs/store1/more?endpoint=https%3A%2F%2Facc.r2.cloudflarestorage.com&region=auto&profile=r2",
		"@gcs.copy":       "gs://copy?anonymous=false&credentials-file=%2Fetc%2Fpbs+dir%2Fsa.json",
		"s3://plain/spec": "s3://plain/spec",
		// Parameters given with the name win over the section's.
		"@r2/more?region=us-east-1&path-style": "s3://pbs/store1/more?endpoint=https%3A%2F%2Facc.r2.cloudflarestorage.com&profile=r2&region=us-east-1&path-style",
		"@gcs.copy?endpoint=http://h:1":        "gs://copy?anonymous=false&credentials-file=%2Fetc%2Fpbs+dir%2Fsa.json&endpoint=http%3A%2F%2Fh%3A1",
	} {
		got, err := n.Expand(spec)
		if err != nil || got != want {
			t.Errorf("Expand(%q) = %q, %v, want %q", spec, got, err, want)
		}
	}
	base, o, err := backends.StoreOptions(must(n.Expand("@r2/more")), backends.Options{})
	if err != nil || base != "s3://pbs/store1/more" || o.S3.Endpoint != "https://acc.r2.cloudflarestorage.com" || o.S3.Region != "auto" || o.S3.Profile != "r2" {
		t.Errorf("@r2/more opens %q with %+v, %v", base, o.S3, err)
	}
	if _, o, _ := backends.StoreOptions(must(n.Expand("@gcs.copy")), backends.Options{}); o.GCS.CredentialsFile != "/etc/pbs dir/sa.json" || o.GCS.NoAuth {
		t.Errorf("@gcs.copy: %+v", o.GCS)
	}
	if _, err := n.Expand("@r2?region=%zz"); err == nil || !strings.Contains(err.Error(), "not URL-encoded") {
		t.Errorf("Expand(@r2?region=%%zz) = %v, want a ParamError", err)
	}
	if _, err := n.Expand("@nosuch"); err == nil || !strings.Contains(err.Error(), "stores.conf names only r2, gcs.copy") {
		t.Errorf("Expand(@nosuch) = %v", err)
	}

	for _, c := range []struct{ file, want string }{
		{"[a]\nurl = /mnt/ds\n", "stores.conf:2: [a]: want url = s3://"},
		{"[a]\nendpoint = x\n", "stores.conf:1: [a]: want url"},
		{"url = s3://b\n", "stores.conf:1: \"url\" before the first [NAME]"},
		{"[a b]\n", "stores.conf:1: want a section [NAME]"},
		{"[a]\nurl = s3://b\n[a]\n", "stores.conf:3: store \"a\" named twice"},
		{"[a]\nurl = s3://b\nurl = s3://c\n", "stores.conf:3: [a]: url given twice"},
		{"[a]\nurl s3://b\n", "stores.conf:2: want key = value"},
		{"# x\n[a]\nurl = s3://b\nregion = us east\n", `stores.conf:4: [a] s3://b?region=us+east: parameter "region": want a region`},
		{"[a]\nurl = s3://b\nsecret_access_key = hunter2\n", `stores.conf:3: [a] s3://b?secret_access_key=xxxxx: parameter "secret_access_key": unknown`},
		{"[a]\nurl = s3://b\nregion = x\nregion = y\n", `stores.conf:4: [a] s3://b?region=x&region=y: parameter "region": given twice`},
		{"[a]\nurl = s3://u:hunter2@b\n", "stores.conf:2: [a] s3://u:xxxxx@b: a bucket URL carries no credentials"},
	} {
		_, err := backends.ParseNamedStores("stores.conf", []byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseNamedStores(%q) = %v, want an error with %q", c.file, err, c.want)
		}
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}
