// Package quirkproxy is an HTTP proxy for tests that stands in front of an
// S3 server (versitygw) or a GCS server (fake-gcs-server) and answers the
// way real providers and the gateways in front of them do, not by the book:
// listings truncated without a continuation token or ignoring it, object
// downloads without Content-Length or gzip-encoded, a server clock far from
// the client's, a bucket in another region, a snapshot pruned between
// listing and reading, TLS with a self-signed certificate. See Quirks for
// each behaviour and the public reports it stands for (docs/BUCKETS.md).
// It is the Go counterpart of the repro set's s3quirk.py, sibling of
// internal/faultproxy (which injects transient faults).
//
// Test support only: imported by tests and by the other packages under
// internal/, never by a non-test package outside internal/ (TestLayout in
// the module root's layout_test.go checks this).
package quirkproxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/klauspost/compress/gzip"
)

// Quirks selects the behaviours. The zero value forwards everything as is.
type Quirks struct {
	// StripToken keeps listing pages truncated but removes their
	// continuation token (S3 NextContinuationToken; Ceph RGW before 14.2.5
	// and other servers without a working ListObjectsV2).
	StripToken bool
	// IgnoreToken answers a listing request that carries a continuation
	// token (S3 continuation-token, GCS pageToken) with the first page
	// again, token included (Ceph RGW bug #40728).
	IgnoreToken bool
	// GzipObjects answers object downloads gzip-compressed
	// (Content-Encoding: gzip, Transfer-Encoding: chunked) although the
	// client asked for identity (compressing gateways, CDNs).
	GzipObjects bool
	// ChunkedObjects answers object downloads with Transfer-Encoding:
	// chunked and no Content-Length (body unchanged).
	ChunkedObjects bool
	// ShortBody answers object downloads with their real Content-Length
	// but this many bytes fewer, then closes the connection (a gateway or
	// load balancer cutting responses short).
	ShortBody int
	// GzipBomb answers object downloads with Content-Encoding: gzip of
	// this many zero bytes instead of the object (a hostile or broken
	// gateway: a few MiB on the wire that decode to GiB).
	GzipBomb int64
	// OnlyChunks limits GzipObjects, ChunkedObjects, ShortBody and
	// GzipBomb to chunk objects
	// (keys containing "/.chunks/" or starting with ".chunks/").
	OnlyChunks bool
	// Skew puts the server's clock this far ahead: S3 requests whose
	// X-Amz-Date is more than 15 minutes off get 403 RequestTimeTooSkewed,
	// every response carries the server's Date, and accepted requests are
	// re-signed with the real time for the target (needs Secret).
	Skew time.Duration
	// BucketRegion puts the bucket in that region: S3 requests signed for
	// another region get 301 PermanentRedirect with x-amz-bucket-region
	// (RegionError 400: 400 AuthorizationHeaderMalformed "expecting
	// '<region>'"); accepted ones are re-signed for TargetRegion.
	BucketRegion string
	RegionError  int
	// RegionQuoted makes the RegionError 400 answer quote the regions in
	// double quotes (`expecting "<region>"`, as S3 clones and gateways
	// do) and leave out the x-amz-bucket-region header: the message is
	// all that names the region.
	RegionQuoted bool
	// RegionLoop answers the region error even to requests signed for
	// BucketRegion (a misconfigured endpoint or gateway: a redirect loop).
	RegionLoop bool
	// Vanish makes objects whose key (below the bucket) starts with this
	// prefix answer 404 once VanishAfterLists listing responses and
	// VanishAfterReads requests for such objects were served: a prune
	// between listing (or the first reads) and reading.
	Vanish                             string
	VanishAfterLists, VanishAfterReads int
	// URLEncodeKeys answers S3 listings with their Key, Prefix and
	// StartAfter percent-encoded (form encoding, '/' kept) and
	// <EncodingType>url</EncodingType> in the body although the client did
	// not ask for it (Apache Ozone's S3 gateway before HDDS-7710,
	// DigitalOcean Spaces, HCP). The element goes first in the answer; an
	// EncodingType the server wrote itself (versitygw: an empty one, last)
	// stays, as a gateway rewriting the answer would leave it.
	URLEncodeKeys bool
	// URLEncodeSkip, with URLEncodeKeys, sends the keys that contain it
	// as they are, not encoded (a gateway that forgets some): a key with
	// a '%' of its own then carries a percent-escape that does not decode.
	URLEncodeSkip string
	// AccessKey, Secret and TargetRegion are the credentials and region of
	// the target, for re-signing (Skew, BucketRegion). TargetRegion ""
	// means "us-east-1".
	AccessKey, Secret, TargetRegion string
	// TLS serves HTTPS with this certificate instead of HTTP.
	TLS *tls.Certificate
}

// Proxy is a running quirk proxy. Its methods are safe for concurrent use.
type Proxy struct {
	// URL is the proxy's base URL, "http://127.0.0.1:PORT" (https with TLS).
	URL string
	// Port is the listening port.
	Port string

	q      Quirks
	target *url.URL
	ln     net.Listener
	srv    *http.Server
	tr     *http.Transport

	mu         sync.Mutex
	firstPages map[string][]byte // by prefix: the first listing page served

	lists, requests, objectGets, injected, vanishReads atomic.Int64
}

// Start listens on 127.0.0.1 (any port) and forwards to target, a base URL
// such as "http://127.0.0.1:7070".
func Start(target string, q Quirks) (*Proxy, error) {
	tu, err := url.Parse(target)
	if err != nil || tu.Host == "" {
		return nil, fmt.Errorf("quirkproxy: invalid target %q", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p := &Proxy{
		q: q, target: tu, ln: ln, Port: port, URL: "http://127.0.0.1:" + port,
		tr:         &http.Transport{Proxy: nil, DisableCompression: true, MaxIdleConnsPerHost: 64},
		firstPages: map[string][]byte{},
	}
	if p.q.TargetRegion == "" {
		p.q.TargetRegion = "us-east-1"
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	if q.TLS != nil {
		p.URL = "https://127.0.0.1:" + port
		p.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*q.TLS}}
		go p.srv.ServeTLS(ln, "", "")
	} else {
		go p.srv.Serve(ln)
	}
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	p.tr.CloseIdleConnections()
	return err
}

// Lists returns how many listing requests were answered.
func (p *Proxy) Lists() int64 { return p.lists.Load() }

// Requests returns how many requests arrived.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

// ObjectGets returns how many object downloads were answered with a body.
func (p *Proxy) ObjectGets() int64 { return p.objectGets.Load() }

// Injected returns how many requests got an answer made up by the proxy
// (403 skew, 301/400 region, 404 vanished, a repeated first page).
func (p *Proxy) Injected() int64 { return p.injected.Load() }

func (p *Proxy) now() time.Time { return time.Now().Add(p.q.Skew) }

// request is what ServeHTTP knows about one request.
type request struct {
	list     bool   // a listing (S3 ListObjectsV2 or GCS objects.list)
	gcs      bool   // GCS JSON API
	token    string // its continuation token
	prefix   string
	key      string // object key below the bucket ("" for a listing)
	auth     *sigAuth
	download bool
}

var authRE = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]+)`)

type sigAuth struct{ ak, region string }

func classify(r *http.Request) request {
	var rq request
	q := r.URL.Query()
	path := r.URL.Path
	if m := authRE.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		rq.auth = &sigAuth{ak: m[1], region: m[3]}
	}
	switch {
	case strings.HasPrefix(path, "/storage/v1/b/") && strings.HasSuffix(path, "/o") && r.Method == http.MethodGet:
		rq.list, rq.gcs, rq.token, rq.prefix = true, true, q.Get("pageToken"), q.Get("prefix")
	case strings.HasPrefix(path, "/storage/v1/") || strings.HasPrefix(path, "/upload/"):
	case r.Method == http.MethodGet && q.Get("list-type") == "2":
		rq.list, rq.token, rq.prefix = true, q.Get("continuation-token"), q.Get("prefix")
	default:
		_, key, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		rq.key = key
		// The AWS SDK adds x-id=GetObject; other sub-resources are no
		// object downloads.
		rq.download = r.Method == http.MethodGet && key != "" && (len(q) == 0 || (len(q) == 1 && q.Get("x-id") == "GetObject"))
	}
	return rq
}

func (p *Proxy) reply(w http.ResponseWriter, status int, code, msg, extra string, hdr ...string) {
	p.injected.Add(1)
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message>%s<RequestId>quirkproxy</RequestId></Error>", code, msg, extra)
	for i := 0; i+1 < len(hdr); i += 2 {
		w.Header().Set(hdr[i], hdr[i+1])
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// ServeHTTP answers one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	if p.q.Skew != 0 {
		w.Header().Set("Date", p.now().UTC().Format(http.TimeFormat))
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	rq := classify(r)
	if p.q.Skew != 0 && rq.auth != nil {
		t, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
		if err != nil || t.Sub(p.now()).Abs() > 15*time.Minute {
			p.reply(w, http.StatusForbidden, "RequestTimeTooSkewed", "The difference between the request time and the current time is too large.",
				fmt.Sprintf("<RequestTime>%s</RequestTime><ServerTime>%s</ServerTime><MaxAllowedSkewMilliseconds>900000</MaxAllowedSkewMilliseconds>",
					r.Header.Get("X-Amz-Date"), p.now().UTC().Format(time.RFC3339)))
			return
		}
	}
	if p.q.BucketRegion != "" && rq.auth != nil && (rq.auth.region != p.q.BucketRegion || p.q.RegionLoop) {
		bkt, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if p.q.RegionError == http.StatusBadRequest && p.q.RegionQuoted {
			p.reply(w, http.StatusBadRequest, "AuthorizationHeaderMalformed",
				fmt.Sprintf("The authorization header is malformed; the region %q is wrong; expecting %q", rq.auth.region, p.q.BucketRegion), "")
			return
		}
		if p.q.RegionError == http.StatusBadRequest {
			p.reply(w, http.StatusBadRequest, "AuthorizationHeaderMalformed",
				fmt.Sprintf("The authorization header is malformed; the region '%s' is wrong; expecting '%s'", rq.auth.region, p.q.BucketRegion),
				"<Region>"+p.q.BucketRegion+"</Region>", "X-Amz-Bucket-Region", p.q.BucketRegion)
			return
		}
		p.reply(w, http.StatusMovedPermanently, "PermanentRedirect",
			"The bucket you are attempting to access must be addressed using the specified endpoint.",
			fmt.Sprintf("<Bucket>%s</Bucket><Endpoint>%s.s3.%s.amazonaws.com</Endpoint>", bkt, bkt, p.q.BucketRegion),
			"X-Amz-Bucket-Region", p.q.BucketRegion)
		return
	}
	if p.q.Vanish != "" && !rq.list && rq.key != "" && strings.HasPrefix(rq.key, p.q.Vanish) {
		if p.lists.Load() >= int64(p.q.VanishAfterLists) && p.vanishReads.Add(1) > int64(p.q.VanishAfterReads) {
			p.reply(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.", "")
			return
		}
	}
	if p.q.IgnoreToken && rq.list && rq.token != "" {
		p.mu.Lock()
		first := p.firstPages[rq.prefix]
		p.mu.Unlock()
		if first != nil {
			p.lists.Add(1)
			p.injected.Add(1)
			w.Header().Set("Content-Type", contentType(rq))
			w.Header().Set("Content-Length", fmt.Sprint(len(first)))
			w.Write(first)
			return
		}
	}

	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target.Scheme+"://"+p.target.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	out.ContentLength = int64(len(body))
	if rq.auth != nil && (p.q.Skew != 0 || p.q.BucketRegion != "") {
		if err := p.resign(out); err != nil {
			p.reply(w, http.StatusInternalServerError, "QuirkProxyResign", err.Error(), "")
			return
		}
	}
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if rq.list && resp.StatusCode == http.StatusOK {
		p.lists.Add(1)
		data = p.rewriteListing(rq, data)
		if rq.token == "" {
			p.mu.Lock()
			if p.firstPages[rq.prefix] == nil {
				p.firstPages[rq.prefix] = data
			}
			p.mu.Unlock()
		}
	}
	for k, vs := range resp.Header {
		switch strings.ToLower(k) {
		case "content-length", "transfer-encoding", "connection", "date":
			continue
		}
		w.Header()[k] = vs
	}
	isChunk := strings.HasPrefix(rq.key, ".chunks/") || strings.Contains(rq.key, "/.chunks/")
	recode := rq.download && resp.StatusCode == http.StatusOK && (!p.q.OnlyChunks || isChunk)
	if recode && (p.q.GzipObjects || p.q.ChunkedObjects) && resp.Header.Get("Content-Encoding") != "" {
		// Already encoded (an object stored compressed): a gateway passes
		// it on as it is, only without Content-Length.
		p.objectGets.Add(1)
		writeChunked(w, resp.StatusCode, data)
		return
	}
	switch {
	case recode && p.q.GzipBomb > 0:
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Del("Content-Length")
		w.WriteHeader(resp.StatusCode)
		p.objectGets.Add(1)
		// Gzip members of 64 MiB of zeros, one after the other (a
		// multi-member stream decodes to their concatenation).
		member := bombMember()
		for n := p.q.GzipBomb; n > 0; n -= bombMemberSize {
			if _, err := w.Write(member); err != nil {
				return // the client stopped reading
			}
		}
	case recode && p.q.ShortBody > 0:
		p.objectGets.Add(1)
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.WriteHeader(resp.StatusCode)
		w.Write(data[:max(len(data)-p.q.ShortBody, 0)])
	case recode && p.q.GzipObjects:
		var zb bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&zb, gzip.BestSpeed)
		zw.Write(data)
		zw.Close()
		w.Header().Set("Content-Encoding", "gzip")
		p.objectGets.Add(1)
		writeChunked(w, resp.StatusCode, zb.Bytes())
	case recode && p.q.ChunkedObjects:
		p.objectGets.Add(1)
		writeChunked(w, resp.StatusCode, data)
	default:
		if rq.download && resp.StatusCode == http.StatusOK {
			p.objectGets.Add(1)
		}
		if r.Method == http.MethodHead {
			w.Header().Set("Content-Length", resp.Header.Get("Content-Length"))
			w.WriteHeader(resp.StatusCode)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.WriteHeader(resp.StatusCode)
		w.Write(data)
	}
}

func contentType(rq request) string {
	if rq.gcs {
		return "application/json; charset=UTF-8"
	}
	return "application/xml"
}

// bombMemberSize is the decoded size of bombMember.
const bombMemberSize = 64 << 20

// bombMember is one gzip member holding bombMemberSize zero bytes (about
// 64 KiB), made once.
var bombMember = sync.OnceValue(func() []byte {
	var zb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zb, gzip.BestCompression)
	zw.Write(make([]byte, bombMemberSize))
	zw.Close()
	return zb.Bytes()
})

// writeChunked sends data without Content-Length, in pieces flushed one by
// one, so net/http uses Transfer-Encoding: chunked.
func writeChunked(w http.ResponseWriter, status int, data []byte) {
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	for len(data) > 0 {
		n := min(len(data), 64<<10)
		w.Write(data[:n])
		rc.Flush()
		data = data[n:]
	}
}

var (
	s3TokenRE  = regexp.MustCompile(`<NextContinuationToken>[^<]*</NextContinuationToken>`)
	gcsTokenRE = regexp.MustCompile(`"nextPageToken"\s*:\s*"[^"]*"\s*,?`)
)

func (p *Proxy) rewriteListing(rq request, data []byte) []byte {
	if p.q.URLEncodeKeys && !rq.gcs {
		data = urlEncodeKeys(data, p.q.URLEncodeSkip)
	}
	if !p.q.StripToken {
		return data
	}
	if rq.gcs {
		return gcsTokenRE.ReplaceAll(data, nil)
	}
	return s3TokenRE.ReplaceAll(data, nil)
}

var (
	s3KeyRE    = regexp.MustCompile(`<(Key|Prefix|StartAfter)>([^<]*)</(?:Key|Prefix|StartAfter)>`)
	s3ResultRE = regexp.MustCompile(`<ListBucketResult[^>]*>`)
)

// urlEncodeKeys percent-encodes the keys of an S3 listing body and says so
// with EncodingType url (see Quirks.URLEncodeKeys); keys containing skip
// (if not "") are left as they are.
func urlEncodeKeys(data []byte, skip string) []byte {
	data = s3KeyRE.ReplaceAllFunc(data, func(m []byte) []byte {
		sub := s3KeyRE.FindSubmatch(m)
		var v string
		if err := xml.Unmarshal([]byte("<v>"+string(sub[2])+"</v>"), &v); err != nil {
			return m
		}
		if skip != "" && strings.Contains(v, skip) {
			return m
		}
		enc := strings.ReplaceAll(url.QueryEscape(v), "%2F", "/")
		return []byte("<" + string(sub[1]) + ">" + enc + "</" + string(sub[1]) + ">")
	})
	loc := s3ResultRE.FindIndex(data)
	if loc == nil {
		return data
	}
	return append(append(append([]byte(nil), data[:loc[1]]...), "<EncodingType>url</EncodingType>"...), data[loc[1]:]...)
}

// resign signs out again for the target: the real time and TargetRegion.
func (p *Proxy) resign(out *http.Request) error {
	hash := out.Header.Get("X-Amz-Content-Sha256")
	if hash == "" {
		sum := sha256.Sum256(nil)
		hash = hex.EncodeToString(sum[:])
	}
	out.Header.Del("Authorization")
	out.Header.Del("X-Amz-Date")
	// Headers the client did not sign may change on the way; sign only
	// what SigV4 requires plus the x-amz-* headers.
	for k := range out.Header {
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, "x-amz-") && lk != "content-type" && lk != "content-md5" && lk != "if-match" && lk != "if-none-match" && lk != "range" {
			out.Header.Del(k)
		}
	}
	creds := aws.Credentials{AccessKeyID: p.q.AccessKey, SecretAccessKey: p.q.Secret}
	return v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).
		SignHTTP(context.Background(), creds, out, hash, "s3", p.q.TargetRegion, time.Now())
}
