package s3store

import (
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/pbsdirect/pbsdirect/chunkstore"
)

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

// regionErr is an S3 answer as the SDK returns it: status, error code and
// message, and an x-amz-bucket-region header unless region is "".
func regionErr(status int, code, msg, region string) error {
	h := http.Header{}
	if region != "" {
		h.Set("X-Amz-Bucket-Region", region)
	}
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: h}},
		Err:      &smithy.GenericAPIError{Code: code, Message: msg},
	}}
}

func TestBucketRegion(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{regionErr(301, "PermanentRedirect", "must be addressed using the specified endpoint", "eu-central-1"), "eu-central-1"},
		{regionErr(400, "AuthorizationHeaderMalformed", "the region 'us-east-1' is wrong; expecting 'ap-south-1'", ""), "ap-south-1"},
		{regionErr(400, "AuthorizationHeaderMalformed", `The authorization header is malformed; the region "eu-west-1" is wrong; expecting "us-east-1"`, ""), "us-east-1"},
		{regionErr(301, "", "", "eu-west-3"), "eu-west-3"}, // HEAD: no body
		{regionErr(403, "AccessDenied", "expecting 'xx-1'", "eu-west-3"), ""},
		{regionErr(400, "InvalidArgument", "bad", ""), ""},
	} {
		if got := bucketRegion(tc.err); got != tc.want {
			t.Errorf("bucketRegion(%v) = %q, want %q", tc.err, got, tc.want)
		}
		if msg := mapErr(tc.err).Error(); tc.want != "" && !strings.Contains(msg, "--s3-region "+tc.want) {
			t.Errorf("mapErr: %s: names neither the region nor the flag", msg)
		}
		if chunkstore.Proven(mapErr(tc.err)) {
			t.Errorf("mapErr(%v): taken for damage", tc.err)
		}
	}
}

func TestParseFingerprint(t *testing.T) {
	want := "91a08e5ebef8a561000000000000000000000000000000000000000000000001"
	for _, in := range []string{want, strings.ToUpper(want), "91:A0:8E:5E:BE:F8:A5:61:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:01"} {
		fp, err := ParseFingerprint(in)
		if err != nil || hex.EncodeToString(fp[:]) != want {
			t.Errorf("ParseFingerprint(%q) = %x, %v", in, fp, err)
		}
	}
	for _, bad := range []string{"", "91:a0", want + "00", "zz" + want[2:]} {
		if _, err := ParseFingerprint(bad); err == nil {
			t.Errorf("ParseFingerprint(%q) accepted", bad)
		}
	}
}

// TestMapErrProvesNothing: S3 answers that say nothing about a chunk's
// bytes are never taken for damage; expired temporary credentials (a 400,
// not a 403) are refused credentials with a hint; a 404 is missing.
func TestMapErrProvesNothing(t *testing.T) {
	for _, tc := range []struct {
		err    error
		denied bool
	}{
		{regionErr(400, "ExpiredToken", "The provided token has expired.", ""), true},
		{regionErr(400, "SomeCodeNoOneKnows", "?", ""), false},
		{regionErr(401, "Unauthorized", "", ""), true},
		{regionErr(403, "RequesterPaysRequired", "", ""), true},
		{regionErr(400, "InvalidRequest", "bad", ""), false},
	} {
		err := mapErr(tc.err)
		if chunkstore.Proven(err) || errors.Is(err, chunkstore.ErrDenied) != tc.denied {
			t.Errorf("mapErr(%v) = %v: proven %v, denied %v (want not proven, denied %v)", tc.err, err, chunkstore.Proven(err), errors.Is(err, chunkstore.ErrDenied), tc.denied)
		}
	}
	if err := mapErr(regionErr(400, "ExpiredToken", "The provided token has expired.", "")); !strings.Contains(err.Error(), "--resume") {
		t.Errorf("expired token: no hint: %v", err)
	}
	if err := mapErr(regionErr(404, "NoSuchKey", "", "")); !chunkstore.Missing(err) {
		t.Errorf("404 NoSuchKey: not missing: %v", err)
	}
}

// TestWriterTime: the writer's time is read from its user metadata key in
// any case; a value absent, empty, too long, signed, not decimal or not
// after the epoch gives none.
func TestWriterTime(t *testing.T) {
	const ns = 1764756007123456789
	for _, c := range []struct {
		meta map[string]string
		want int64 // 0: none
	}{
		{map[string]string{writtenMeta: "1764756007123456789"}, ns},
		{map[string]string{"Pbsdirect-Written": "1764756007123456789"}, ns},
		{map[string]string{"other": "1"}, 0},
		{nil, 0},
		{map[string]string{writtenMeta: ""}, 0},
		{map[string]string{writtenMeta: "garbage"}, 0},
		{map[string]string{writtenMeta: "+1764756007123456789"}, 0},
		{map[string]string{writtenMeta: "-1"}, 0},
		{map[string]string{writtenMeta: "0"}, 0},
		{map[string]string{writtenMeta: " 17647560071"}, 0},
		{map[string]string{writtenMeta: "9999999999999999999"}, 0},
		{map[string]string{writtenMeta: "01764756007123456789"}, 0},
		{map[string]string{writtenMeta: strings.Repeat("1", 1<<20)}, 0},
	} {
		got := writerTime(c.meta)
		if (c.want == 0) != got.IsZero() || (c.want != 0 && got.UnixNano() != c.want) {
			t.Errorf("writerTime(%.40v) = %v, want %d", c.meta, got, c.want)
		}
	}
	if v := writerMeta()[writtenMeta]; writerTime(map[string]string{writtenMeta: v}).IsZero() {
		t.Errorf("writerMeta's value %q does not parse", v)
	}
}
