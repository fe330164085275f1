package s3store

import "testing"

func TestPathStyle(t *testing.T) {
	for in, want := range map[string]PathStyle{"": PathStyleAuto, "auto": PathStyleAuto, "true": PathStyleOn, "on": PathStyleOn, "FALSE": PathStyleOff, "0": PathStyleOff} {
		if got, err := ParsePathStyle(in); err != nil || got != want {
			t.Errorf("ParsePathStyle(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParsePathStyle("maybe"); err == nil {
		t.Error("ParsePathStyle(maybe) succeeded")
	}
	for ep, want := range map[string]bool{
		"http://127.0.0.1:9000": true, "https://[::1]:443": true, "http://localhost:7070": true,
		"http://minio.localhost": true, "https://s3.amazonaws.com": false, "https://minio.lan:9000": false, "": false,
	} {
		if got := isLocalEndpoint(ep); got != want {
			t.Errorf("isLocalEndpoint(%q) = %v", ep, got)
		}
	}
}
