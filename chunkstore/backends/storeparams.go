package backends

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/pbsdirect/pbsdirect/chunkstore/s3store"
)

// Per-store settings. A bucket specification may carry settings of its own
// as URL query parameters, which win over Options (the command line's
// flags and the environment) for that store alone:
//
//	s3://bucket/prefix?endpoint=https://ACCOUNT.r2.cloudflarestorage.com&region=auto&profile=r2
//	gs://bucket/prefix?credentials-file=/etc/pbsdirect/gcs.json
//
// Each backend lists the parameters it takes in its scheme entry (params);
// a parameter it does not take, one given twice or a value that does not
// parse is a *ParamError. Local directories take none: "?" is an ordinary
// character of a path.

// ParamError is a query parameter of a store specification that is not
// known to its backend, given twice or whose value does not parse. Store
// is the specification as DisplaySpec prints it (no credential values),
// Param the parameter's name.
type ParamError struct {
	Store string
	Param string
	Err   error
}

// Error returns `STORE: parameter "NAME": why`.
func (e *ParamError) Error() string {
	return fmt.Sprintf("%s: parameter %q: %v", e.Store, e.Param, e.Err)
}

// Unwrap returns why.
func (e *ParamError) Unwrap() error { return e.Err }

// param is one per-store setting a backend takes as a query parameter.
type param struct {
	// name is the parameter's name ("endpoint").
	name string
	// set parses v into opts; an empty v is the bare parameter ("?path-style").
	set func(opts *Options, v string) error
}

// errNoValue is the error of a parameter that needs a value and has none.
var errNoValue = errors.New("needs a value (NAME=VALUE)")

// stringParam is a parameter that sets the string field at of Options.
func stringParam(name string, at func(*Options) *string, check func(string) error) param {
	return param{name: name, set: func(opts *Options, v string) error {
		if v == "" {
			return errNoValue
		}
		if check != nil {
			if err := check(v); err != nil {
				return err
			}
		}
		*at(opts) = v
		return nil
	}}
}

// s3Params are the per-store settings of s3:// stores; each stands for the
// flag or environment variable named in docs/BUCKETS.md.
func s3Params() []param {
	return []param{
		stringParam("endpoint", func(o *Options) *string { return &o.S3.Endpoint }, checkEndpoint),
		stringParam("region", func(o *Options) *string { return &o.S3.Region }, checkRegion),
		{name: "path-style", set: func(o *Options, v string) error {
			if v == "" {
				v = "true"
			}
			ps, err := s3store.ParsePathStyle(v)
			o.S3.PathStyle = ps
			return err
		}},
		stringParam("fingerprint", func(o *Options) *string { return &o.S3.Fingerprint }, func(v string) error {
			_, err := s3store.ParseFingerprint(v)
			return err
		}),
		stringParam("profile", func(o *Options) *string { return &o.S3.Profile }, nil),
		stringParam("credentials-file", func(o *Options) *string { return &o.S3.CredentialsFile }, nil),
		stringParam("env", func(o *Options) *string { return &o.S3.EnvPrefix }, s3store.CheckEnvPrefix),
	}
}

// gcsParams are the per-store settings of gs:// stores.
func gcsParams() []param {
	return []param{
		stringParam("endpoint", func(o *Options) *string { return &o.GCS.Endpoint }, checkEndpoint),
		stringParam("credentials-file", func(o *Options) *string { return &o.GCS.CredentialsFile }, nil),
		{name: "anonymous", set: func(o *Options, v string) error {
			if v == "" {
				v = "true"
			}
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("want true or false, not %q", v)
			}
			o.GCS.NoAuth = b
			return nil
		}},
	}
}

// checkEndpoint refuses an endpoint that is no URL with a host
// ("https://" is assumed without a scheme) or that carries a user name or
// password (credentials belong in a credentials source, not in a
// specification printed in reports).
func checkEndpoint(v string) error {
	ep := v
	if !strings.Contains(ep, "://") {
		ep = "https://" + ep
	}
	u, err := url.Parse(ep)
	switch {
	case err != nil || u.Host == "":
		return errors.New("want an endpoint URL, e.g. https://host:port")
	case u.User != nil:
		return errors.New("an endpoint URL carries no credentials; use profile, env or credentials-file")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("want an http:// or https:// URL, not %s://", u.Scheme)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(ep, "#"):
		return errors.New("an endpoint URL has no query or fragment (? or #); escape '&' in values as %26")
	}
	return nil
}

// maxRegionLen is the longest region a store takes: a DNS label's 63
// bytes, as the S3 signer puts the region into host names.
const maxRegionLen = 63

// checkRegion refuses a signing region that is not 1 to maxRegionLen
// ASCII letters, digits and '-' (as "us-east-1", "auto", "garage"): the
// S3 client refuses any other when it signs the first request.
func checkRegion(v string) error {
	ok := len(v) <= maxRegionLen && !strings.ContainsFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
	})
	if !ok {
		return fmt.Errorf("want a region of at most %d letters, digits and '-' (e.g. us-east-1, auto)", maxRegionLen)
	}
	return nil
}

// queryPair is one "name=value" of a specification's query, in order.
type queryPair struct {
	name, value string
	hasValue    bool
}

// splitQuery returns a bucket specification without its query, and the
// query's parameters in order (nil without a query). A query that does not
// decode is a *ParamError.
func splitQuery(spec string) (string, []queryPair, error) {
	base, q, ok := strings.Cut(spec, "?")
	if !ok {
		return spec, nil, nil
	}
	var pairs []queryPair
	for _, kv := range strings.Split(q, "&") {
		if kv == "" {
			continue
		}
		k, v, hasValue := strings.Cut(kv, "=")
		name, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return "", nil, &ParamError{Store: redactQuery(base, nil, nil), Param: strings.ToValidUTF8(k, "?"), Err: errors.New("not URL-encoded (escape '%', '&' and '+' in values as %25, %26 and %2B)")}
		}
		pairs = append(pairs, queryPair{name: name, value: value, hasValue: hasValue})
	}
	return base, pairs, nil
}

// settle returns spec without its query and opts with the query's
// settings applied: what opens the store spec names. A parameter b does
// not take, one given twice or one whose value does not parse is a
// *ParamError naming the store (DisplaySpec) and the parameter; a
// "user:password@" before the bucket an error naming the store, its
// password hidden.
func (b scheme) settle(spec string, opts Options) (string, Options, error) {
	if _, _, _, ok := bucketUserinfo(BaseSpec(spec)); ok {
		return "", opts, fmt.Errorf("%s: %w", DisplaySpec(spec), errBucketUserinfo)
	}
	base, pairs, err := splitQuery(spec)
	if err != nil || pairs == nil {
		return base, opts, err
	}
	table := b.params()
	seen := map[string]bool{}
	for _, p := range pairs {
		perr := func(err error) error {
			return &ParamError{Store: redactQuery(base, pairs, table), Param: p.name, Err: err}
		}
		i := slices.IndexFunc(table, func(d param) bool { return d.name == p.name })
		if i < 0 {
			return "", opts, perr(fmt.Errorf("unknown; %s:// stores take %s", b.name, paramNames(table)))
		}
		if seen[p.name] {
			return "", opts, perr(errors.New("given twice"))
		}
		seen[p.name] = true
		if err := table[i].set(&opts, p.value); err != nil {
			return "", opts, perr(err)
		}
	}
	if err := conflicting(b, seen, opts); err != nil {
		return "", opts, &ParamError{Store: redactQuery(base, pairs, table), Param: err.param, Err: err.err}
	}
	// An s3:// store's hints name its parameters (no effect on others).
	opts.S3.PerStore = true
	// A store at an endpoint of its own names it after its URL, so that
	// stores of the same bucket and prefix at other endpoints are told
	// apart (the label of the other backend is not used).
	if seen["endpoint"] {
		opts.S3.Label, opts.GCS.Label = endpointHost(opts.S3.Endpoint), endpointHost(opts.GCS.Endpoint)
	}
	return base, opts, nil
}

// endpointHost returns the host[:port] of the endpoint URL v (checked by
// checkEndpoint; "https://" assumed without a scheme), "" for "".
func endpointHost(v string) string {
	if v == "" {
		return ""
	}
	if !strings.Contains(v, "://") {
		v = "https://" + v
	}
	u, err := url.Parse(v)
	if err != nil {
		return ""
	}
	return u.Host
}

// paramConflict is a parameter that contradicts another of the same
// store, and why.
type paramConflict struct {
	param string
	err   error
}

// conflicting returns the first parameter of seen (the names given to a
// store of b) that contradicts another, with opts their settings: s3://
// credentials from the environment (env) and from a profile or file
// (profile, credentials-file) at once, or gs:// credentials-file with
// anonymous requests; nil when none does.
func conflicting(b scheme, seen map[string]bool, opts Options) *paramConflict {
	switch {
	case b.name == "s3" && seen["env"] && (seen["profile"] || seen["credentials-file"]):
		return &paramConflict{"env", errors.New("takes the credentials from the environment; give it or profile/credentials-file, not both")}
	case b.name == "gs" && opts.GCS.NoAuth && seen["anonymous"] && seen["credentials-file"]:
		return &paramConflict{"anonymous", errors.New("sends no credentials; give it or credentials-file, not both")}
	}
	return nil
}

// params returns the per-store settings b takes (none when it has no
// table).
func (b scheme) params() []param {
	if b.paramTable == nil {
		return nil
	}
	return b.paramTable()
}

// paramNames lists the names of table for an error ("a, b or c"), or
// "no parameters".
func paramNames(table []param) string {
	if len(table) == 0 {
		return "no parameters"
	}
	names := make([]string, len(table))
	for i, p := range table {
		names[i] = p.name
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// redactQuery writes base with the query pairs, the value of each
// parameter table does not know (it may be a credential typed by mistake)
// replaced by "xxxxx".
func redactQuery(base string, pairs []queryPair, table []param) string {
	if len(pairs) == 0 {
		return base
	}
	q := make([]string, 0, len(pairs))
	for _, p := range pairs {
		name := url.QueryEscape(p.name)
		i := slices.IndexFunc(table, func(d param) bool { return d.name == p.name })
		switch {
		case !p.hasValue:
			q = append(q, name)
		case i < 0:
			q = append(q, name+"=xxxxx")
		default:
			q = append(q, name+"="+displayValue(p.value))
		}
	}
	return base + "?" + strings.Join(q, "&")
}

// displayValue is a parameter value as a specification prints it: escaped
// where it must be, "/", ":" and "@" kept for readable URLs, and any
// password in a URL hidden.
func displayValue(v string) string {
	if u, err := url.Parse(v); err == nil && u.User != nil {
		v = u.Redacted()
	}
	r := strings.NewReplacer("%2F", "/", "%3A", ":", "%40", "@")
	return r.Replace(url.QueryEscape(v))
}

// DisplaySpec returns the store specification spec as reports, metrics
// labels and messages print it: a bucket specification's query with the
// values of unknown parameters replaced by "xxxxx" and passwords in URLs
// hidden (the parameters backends take carry no secrets: credentials come
// from a profile, a file or the environment); a directory as given.
func DisplaySpec(spec string) string {
	b, ok := schemeOf(spec)
	if !ok {
		return spec
	}
	base, pairs, err := splitQuery(spec)
	if err != nil {
		base, _, _ = strings.Cut(spec, "?")
		return redactUserinfo(base) + "?xxxxx"
	}
	return redactQuery(redactUserinfo(base), pairs, b.params())
}

// bucketUserinfo returns the "user[:password]" a bucket specification
// base ("s3://user:pw@bucket/prefix", no query) carries before its bucket
// name, and the rest after the "@"; ok is false when it carries none
// (bucket names have no "@").
func bucketUserinfo(base string) (scheme, userinfo, rest string, ok bool) {
	scheme, after, found := strings.Cut(base, "://")
	if !found {
		return "", "", "", false
	}
	host, _, _ := strings.Cut(after, "/")
	i := strings.LastIndexByte(host, '@')
	if i < 0 {
		return "", "", "", false
	}
	return scheme, after[:i], after[i+1:], true
}

// redactUserinfo returns the bucket specification base with the password
// of a "user:password@" before its bucket replaced by "xxxxx", as
// url.URL.Redacted hides an endpoint's.
func redactUserinfo(base string) string {
	scheme, userinfo, rest, ok := bucketUserinfo(base)
	if !ok {
		return base
	}
	if user, _, hasPassword := strings.Cut(userinfo, ":"); hasPassword {
		userinfo = user + ":xxxxx"
	}
	return scheme + "://" + userinfo + "@" + rest
}

// errBucketUserinfo refuses credentials written into a bucket
// specification ("s3://KEY:SECRET@bucket").
var errBucketUserinfo = errors.New("a bucket URL carries no credentials (user:password@); use the profile, env or credentials-file parameter, a profile or the environment")

// BaseSpec returns spec without the settings of its query: the store's
// place ("s3://bucket/prefix"), as Open's stores name themselves; a
// directory as given.
func BaseSpec(spec string) string {
	if _, ok := schemeOf(spec); !ok {
		return spec
	}
	base, _, _ := strings.Cut(spec, "?")
	return base
}

// StoreOptions returns the specification without its query and the options
// that open it: opts with the query's per-store settings applied. A
// directory is returned as given, with opts. Errors are *ParamError.
func StoreOptions(spec string, opts Options) (string, Options, error) {
	b, ok := schemeOf(spec)
	if !ok {
		return spec, opts, nil
	}
	return b.settle(spec, opts)
}

// checkParams is CheckSpec's check of a bucket specification's query.
func checkParams(b scheme, spec string) error {
	_, _, err := b.settle(spec, Options{})
	return err
}
