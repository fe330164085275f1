package backends

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Named stores. A stores file gives bucket stores names, as rclone.conf
// names remotes: one INI section per store, its "url" the bucket
// specification and every other key a per-store setting (the query
// parameters of StoreOptions, values written plainly):
//
//	[r2]
//	url = s3://pbs/store1
//	endpoint = https://ACCOUNT.r2.cloudflarestorage.com
//	region = auto
//	profile = r2
//
// "--store @r2" then stands for
// "s3://pbs/store1?endpoint=…&region=auto&profile=r2", and "@r2/other"
// for the prefix "other" below the url's ("s3://pbs/store1/other?…").

// NamedStores maps the names of a stores file to their specifications,
// settings included as query parameters. ParseNamedStores makes one.
type NamedStores struct {
	// path is the file's path, for messages.
	path  string
	names []string
	specs map[string]string
}

// storeNameRE is what a store name may be.
var storeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ParseNamedStores parses the stores file at path (its content data): INI
// sections "[NAME]" of "key = value" lines, '#' and ';' starting comment
// lines. Each section needs a "url" that is a bucket specification
// (s3://…, gs://…); its other keys become query parameters, checked as
// CheckSpec checks a --store's. Errors name the file, the line or the
// section, never a value (a key typed by mistake may be a secret).
func ParseNamedStores(path string, data []byte) (*NamedStores, error) {
	n := &NamedStores{path: path, specs: map[string]string{}}
	type section struct {
		name, url string
		line      int      // of "[NAME]"
		urlLine   int      // of "url = …"
		params    []string // "key=value", escaped
		keys      []string // the key of each of params
		keyLines  []int    // the line of each of params
	}
	var secs []*section
	var cur *section
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		switch {
		case text == "" || text[0] == '#' || text[0] == ';':
			continue
		case strings.HasPrefix(text, "["):
			name, ok := strings.CutSuffix(text[1:], "]")
			name = strings.TrimSpace(name)
			if !ok || !storeNameRE.MatchString(name) {
				return nil, fmt.Errorf("%s:%d: want a section [NAME] (letters, digits, '_', '.', '-')", path, line)
			}
			if slices.ContainsFunc(secs, func(s *section) bool { return s.name == name }) {
				return nil, fmt.Errorf("%s:%d: store %q named twice", path, line, name)
			}
			cur = &section{name: name, line: line}
			secs = append(secs, cur)
		default:
			k, v, ok := strings.Cut(text, "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch {
			case !ok || k == "":
				return nil, fmt.Errorf("%s:%d: want key = value", path, line)
			case cur == nil:
				return nil, fmt.Errorf("%s:%d: %q before the first [NAME]", path, line, k)
			case k == "url" && cur.url != "":
				return nil, fmt.Errorf("%s:%d: [%s]: url given twice", path, line, cur.name)
			case k == "url":
				cur.url, cur.urlLine = v, line
			default:
				cur.params = append(cur.params, url.QueryEscape(k)+"="+url.QueryEscape(v))
				cur.keys = append(cur.keys, k)
				cur.keyLines = append(cur.keyLines, line)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, s := range secs {
		line := s.line
		if s.urlLine > 0 {
			line = s.urlLine
		}
		if !IsRemote(s.url) {
			return nil, fmt.Errorf("%s:%d: [%s]: want url = s3://bucket[/prefix] or gs://bucket[/prefix]", path, line, s.name)
		}
		spec := joinQuery(s.url, s.params)
		if err := CheckSpecFlag("", spec); err != nil {
			// The line of the key the error is about: its last (a key
			// given twice is wrong at its second), else the url's.
			var pe *ParamError
			if errors.As(err, &pe) {
				for i, k := range s.keys {
					if k == pe.Param {
						line = s.keyLines[i]
					}
				}
			}
			return nil, CheckSpecFlag(fmt.Sprintf("%s:%d: [%s]", path, line, s.name), spec)
		}
		n.names = append(n.names, s.name)
		n.specs[s.name] = spec
	}
	return n, nil
}

// joinQuery appends the escaped "key=value" params to spec's query.
func joinQuery(spec string, params []string) string {
	if len(params) == 0 {
		return spec
	}
	sep := "?"
	if strings.Contains(spec, "?") {
		sep = "&"
	}
	return spec + sep + strings.Join(params, "&")
}

// IsNamed reports whether spec names a store of a stores file ("@NAME" or
// "@NAME/PATH").
func IsNamed(spec string) bool { return strings.HasPrefix(spec, "@") }

// Expand returns the specification "@NAME[/PATH][?PARAMS]" stands for:
// the named store's, PATH appended to its prefix, and PARAMS (query
// parameters as a --store takes them) over the section's settings: a
// parameter given there replaces the section's of that name, the others
// are kept. Any other spec is returned as given. A name the file does not
// have is an error naming the file and the names it has; PARAMS that do
// not decode a *ParamError.
func (n *NamedStores) Expand(spec string) (string, error) {
	if !IsNamed(spec) {
		return spec, nil
	}
	spec, userQuery, hasUserQuery := strings.Cut(spec, "?")
	name, sub, _ := strings.Cut(spec[1:], "/")
	s, ok := n.specs[name]
	if !ok {
		have := "no store"
		if len(n.names) > 0 {
			have = "only " + strings.Join(n.names, ", ")
		}
		return "", fmt.Errorf("%q: %s names %s", spec, n.path, have)
	}
	base, pairs, err := splitQuery(s)
	if err != nil {
		return "", err
	}
	if sub = strings.Trim(sub, "/"); sub != "" {
		base = strings.TrimRight(base, "/") + "/" + sub
	}
	if hasUserQuery {
		_, over, err := splitQuery("?" + userQuery)
		if err != nil {
			var pe *ParamError
			if errors.As(err, &pe) {
				pe.Store = DisplaySpec(spec)
			}
			return "", err
		}
		pairs = slices.DeleteFunc(pairs, func(p queryPair) bool {
			return slices.ContainsFunc(over, func(o queryPair) bool { return o.name == p.name })
		})
		pairs = append(pairs, over...)
	}
	return base + encodeQuery(pairs), nil
}

// encodeQuery returns pairs as a specification's query ("?a=1&b", values
// URL-encoded), "" when there are none.
func encodeQuery(pairs []queryPair) string {
	if len(pairs) == 0 {
		return ""
	}
	q := make([]string, len(pairs))
	for i, p := range pairs {
		q[i] = url.QueryEscape(p.name)
		if p.hasValue {
			q[i] += "=" + url.QueryEscape(p.value)
		}
	}
	return "?" + strings.Join(q, "&")
}
