package s3store

import (
	"bytes"
	"context"
	"io"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// maxListingBody bounds what encodingProbe reads of a listing answer
// (bytes); a 1000-key page is well below 1 MiB.
const maxListingBody = 64 << 20

// urlEncodingRE finds the element of a ListObjectsV2 answer that says its
// keys are URL-encoded.
var urlEncodingRE = regexp.MustCompile(`(?i)<EncodingType>\s*url\s*</EncodingType>`)

// urlEncodedKey is the metadata key under which encodingProbe records that
// the answer says <EncodingType>url</EncodingType>.
type urlEncodedKey struct{}

// encodingProbe looks at the raw body of a listing answer for
// <EncodingType>url</EncodingType> before the SDK decodes it: an answer
// may carry the element more than once (a gateway adding it in front of
// the server's empty one), and the SDK keeps only the last.
type encodingProbe struct{}

// ID names the middleware in the SDK's stack.
func (encodingProbe) ID() string { return "pbsdirect/encodingProbe" }

// HandleDeserialize reads the raw answer, records whether it says its keys
// are URL-encoded and hands the same bytes on to the SDK's deserializer.
func (encodingProbe) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleDeserialize(ctx, in)
	if err != nil {
		return out, md, err
	}
	resp, ok := out.RawResponse.(*smithyhttp.Response)
	if !ok || resp.StatusCode != 200 || resp.Body == nil {
		return out, md, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxListingBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return out, md, err
	}
	if urlEncodingRE.Match(body) {
		md.Set(urlEncodedKey{}, true)
	}
	return out, md, nil
}

// withEncodingProbe adds encodingProbe to one ListObjectsV2 call.
func withEncodingProbe(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Deserialize.Add(encodingProbe{}, middleware.After)
	})
}

// keysURLEncoded reports whether a listing page says its keys are
// URL-encoded: in its EncodingType, or anywhere in its raw answer.
func keysURLEncoded(page *s3.ListObjectsV2Output) bool {
	if page.EncodingType == types.EncodingTypeUrl {
		return true
	}
	enc, _ := page.ResultMetadata.Get(urlEncodedKey{}).(bool)
	return enc
}
