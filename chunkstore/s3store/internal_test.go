package s3store

import (
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
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
