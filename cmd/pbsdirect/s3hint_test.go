package main

import (
	"net"
	"strings"
	"testing"
)

// TestS3EndpointHints: an S3 endpoint that refuses connections, or that
// speaks plain HTTP to an https:// (or scheme-less) --s3-endpoint, fails
// with exit 3 and a hint at the mistake, without the AWS SDK's empty
// "StatusCode: 0, RequestID: , HostID: " text.
func TestS3EndpointHints(t *testing.T) {
	bktSetEnv(t, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	go func() {
		for {
			c, err := plain.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			c.Close()
		}
	}()
	for _, c := range []struct{ endpoint, want string }{
		{"http://" + refused, "nothing listens at http://" + refused + ": check the host, port and scheme of --s3-endpoint"},
		{"https://" + plain.Addr().String(), "speaks plain HTTP, not HTTPS: write --s3-endpoint http://HOST:PORT"},
	} {
		r := mustFail(t, 3, []string{c.want}, "snapshots", "--store", "s3://b/p", "--s3-endpoint", c.endpoint)
		if strings.Contains(r.err, "StatusCode: 0") {
			t.Errorf("SDK noise in the message: %s", r.err)
		}
	}
}
