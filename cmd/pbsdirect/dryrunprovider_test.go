package main

import "testing"

// TestProviderOf: the price entry follows the store's endpoint (its own
// endpoint= over --s3-endpoint over AWS_ENDPOINT_URL_S3); an endpoint of
// no known provider is unknown, not priced as AWS S3.
func TestProviderOf(t *testing.T) {
	for _, c := range []struct{ spec, flag, env, want string }{
		{"/srv/ds", "", "", "local"},
		{"gs://b/p", "", "", "gcs"},
		{"s3://b/p", "", "", "aws-s3"},
		{"s3://b/p", "https://s3.eu-west-1.amazonaws.com", "", "aws-s3"},
		{"s3://b/p", "https://acc.r2.cloudflarestorage.com", "", "r2"},
		{"s3://b/p", "", "https://s3.us-west-004.backblazeb2.com", "b2"},
		{"s3://b/p", "http://127.0.0.1:7871", "", ""},
		{"s3://b/p", "", "http://minio.lan:9000", ""},
		{"s3://b/p?endpoint=https://s3.wasabisys.com", "http://127.0.0.1:1", "", "wasabi"},
		{"s3://b/p?endpoint=http://127.0.0.1:7871&env=GW", "", "", ""},
	} {
		if got := providerOf(c.spec, c.flag, c.env); got != c.want {
			t.Errorf("providerOf(%q, %q, %q) = %q, want %q", c.spec, c.flag, c.env, got, c.want)
		}
	}
}
