package s3store_test

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/chunkstore"
	"github.com/pbsdirect/pbsdirect/chunkstore/s3store"
	"github.com/pbsdirect/pbsdirect/internal/quirkproxy"
	"github.com/pbsdirect/pbsdirect/internal/testenv"
)

// TestHostNameEndpoint reaches versitygw by a host name, "minio.test",
// that resolves (by a dialer standing in for the name resolver) while the
// virtual-host name "<bucket>.minio.test" does not, as on a LAN: auto
// addressing falls back to path style; forced virtual-hosted addressing
// fails with the --s3-path-style hint.
func TestHostNameEndpoint(t *testing.T) {
	srv := testenv.StartS3(t)
	name := newBucket(t, srv)
	srv.PutFile(t, name, "ds/.cnt/vm/100/2026-11-29T10:00:00Z/index.json.blob", []byte("manifest"))
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.Endpoint, "http://"))
	var d net.Dialer
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, p, _ := net.SplitHostPort(addr)
		if host != "minio.test" {
			return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
		}
		return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", p))
	}
	for _, tc := range []struct {
		style   s3store.PathStyle
		wantErr string
	}{
		{s3store.PathStyleAuto, ""},
		{s3store.PathStyleOn, ""},
		{s3store.PathStyleOff, "--s3-path-style"},
	} {
		t.Run(tc.style.String(), func(t *testing.T) {
			o := testOptions(srv, fmt.Sprintf("http://minio.test:%s", port))
			o.PathStyle, o.DialContext = tc.style, dial
			s, err := s3store.Open(context.Background(), name, "ds", o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Open: %v, want an error naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			if got, err := chunkstore.ReadFile(context.Background(), s, "vm/100/2026-11-29T10:00:00Z/index.json.blob"); err != nil || string(got) != "manifest" {
				t.Fatalf("ReadFile: %q, %v", got, err)
			}
			if tc.style == s3store.PathStyleAuto && !strings.Contains(strings.Join(s.Followed(), ","), "path-style") {
				t.Errorf("Followed() = %v, want path-style addressing", s.Followed())
			}
		})
	}
}

// TestListingQuirks lists 1210 objects (two pages) through servers that
// drop or ignore continuation tokens: all of them, in few requests.
func TestListingQuirks(t *testing.T) {
	srv := testenv.StartS3(t)
	name := newBucket(t, srv)
	for i := range 1210 {
		srv.PutFile(t, name, fmt.Sprintf("ds/.cnt/vm/%04d/2026-11-29T10:00:00Z/index.json.blob", i), []byte("x"))
	}
	for _, tc := range []struct {
		name string
		q    quirkproxy.Quirks
	}{
		{"by-the-book", quirkproxy.Quirks{}},
		{"truncated-without-token", quirkproxy.Quirks{StripToken: true}},
		{"token-ignored", quirkproxy.Quirks{IgnoreToken: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := quirkproxy.Start(srv.Endpoint, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			s := open(t, name, "ds", testOptions(srv, p.URL))
			before := p.Lists()
			files, err := s.ListFiles(context.Background(), "vm")
			if err != nil {
				t.Fatalf("ListFiles: %v", err)
			}
			if len(files) != 1210 {
				t.Errorf("%d files, want 1210", len(files))
			}
			if n := p.Lists() - before; n > 4 {
				t.Errorf("%d listing requests for two pages", n)
			}
		})
	}
}

// TestURLEncodedKeysUndecodable lists through a service that says its keys
// are URL-encoded but sends some as they are: a key with a '%' of its own
// then does not decode. The keys that decode are listed decoded; the ones
// that do not are left out with one warning that counts them and names
// one, escaped; a key that decodes needs no warning.
func TestURLEncodedKeysUndecodable(t *testing.T) {
	srv := testenv.StartS3(t)
	name := newBucket(t, srv)
	good := []string{"vm/100/2026-11-29T10:00:00Z/index.json.blob", "vm/100/2026-11-29T11:00:00Z/index.json.blob"}
	for _, k := range good {
		srv.PutFile(t, name, "ds/.cnt/"+k, []byte("x"))
	}
	for _, k := range []string{"vm/100/50%zz/index.json.blob", "vm/100/%G1/index.json.blob"} {
		srv.PutFile(t, name, "ds/.cnt/"+k, []byte("x"))
	}
	for _, tc := range []struct {
		name string
		skip string
		want string // "": no warning
	}{
		{"all-encoded", "", ""},
		{"some-not-encoded", "%", `2 listed key(s) could not be decoded (the listing says EncodingType url), e.g. "ds/.cnt/vm/100/%G1/index.json.blob"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := quirkproxy.Start(srv.Endpoint, quirkproxy.Quirks{URLEncodeKeys: true, URLEncodeSkip: tc.skip})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			s := open(t, name, "ds", testOptions(srv, p.URL))
			var said []string
			s.WarnTo(func(msg string) { said = append(said, msg) })
			files, err := s.ListFiles(context.Background(), "vm")
			if err != nil {
				t.Fatalf("ListFiles: %v", err)
			}
			var got []string
			for _, f := range files {
				got = append(got, f.Path)
			}
			want := good
			if tc.skip == "" {
				want = []string{"vm/100/%G1/index.json.blob", good[0], good[1], "vm/100/50%zz/index.json.blob"}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("listed %q, want %q", got, want)
			}
			switch {
			case tc.want == "" && len(said) != 0:
				t.Errorf("warnings %q, want none", said)
			case tc.want != "" && (len(said) != 1 || !strings.Contains(said[0], tc.want)):
				t.Errorf("warnings %q, want one saying %q", said, tc.want)
			}
			for _, w := range said {
				if strings.ContainsAny(w, "\x1b\n\r") {
					t.Errorf("warning %q carries raw control characters", w)
				}
			}
		})
	}
}
