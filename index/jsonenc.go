package index

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"
)

// The JSON encoders below work on generic trees of: map[string]any, []any,
// string, json.Number, int64, uint64, bool and nil.

const hexLower = "0123456789abcdef"

// appendJSONString appends s as a JSON string with serde_json's escaping
// (§6.3): '"' and '\\' escaped, \b \f \n \r \t, any other byte < 0x20 as
// \u00xx with lowercase hex; everything else (/, <, >, &, U+007F,
// U+2028/U+2029, non-ASCII) raw UTF-8. s must be valid UTF-8.
func appendJSONString(b []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return b, fmt.Errorf("string %q is not valid UTF-8", s)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			b = append(b, '\\', '"')
		case c == '\\':
			b = append(b, '\\', '\\')
		case c >= 0x20:
			b = append(b, c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexLower[c>>4], hexLower[c&0xf])
		}
	}
	return append(b, '"'), nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // byte-wise, as §6.3 requires
	return keys
}

// appendScalar encodes the non-container values; ok is false for containers.
func appendScalar(b []byte, v any) (out []byte, ok bool, err error) {
	switch x := v.(type) {
	case string:
		out, err = appendJSONString(b, x)
		return out, true, err
	case json.Number:
		if x == "" || !(x[0] == '-' || x[0] >= '0' && x[0] <= '9') || !json.Valid([]byte(x)) {
			return b, true, fmt.Errorf("invalid JSON number %q", string(x))
		}
		return append(b, x...), true, nil
	case int64:
		return strconv.AppendInt(b, x, 10), true, nil
	case uint64:
		return strconv.AppendUint(b, x, 10), true, nil
	case bool:
		return strconv.AppendBool(b, x), true, nil
	case nil:
		return append(b, "null"...), true, nil
	case map[string]any, []any:
		return b, false, nil
	}
	return b, true, fmt.Errorf("cannot encode %T as JSON", v)
}

// appendCanonical appends v as canonical JSON (§6.3, proxmox_serde
// to_canonical_json): object keys sorted byte-wise, no whitespace,
// serde_json string escaping. null is an error, as in PBS.
func appendCanonical(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return b, fmt.Errorf("null is not allowed in canonical JSON")
	case map[string]any:
		b = append(b, '{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSONString(b, k); err != nil {
				return b, err
			}
			b = append(b, ':')
			if b, err = appendCanonical(b, x[k]); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
	b, _, err := appendScalar(b, v)
	return b, err
}

// appendPretty appends v like serde_json::to_string_pretty of a
// serde_json::Value: two-space indentation, "key": value, sorted keys,
// empty containers as {} and [].
func appendPretty(b []byte, v any, indent int) ([]byte, error) {
	nl := func(b []byte, n int) []byte {
		b = append(b, '\n')
		for range n {
			b = append(b, ' ', ' ')
		}
		return b
	}
	var err error
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return append(b, '{', '}'), nil
		}
		b = append(b, '{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b = append(b, ',')
			}
			b = nl(b, indent+1)
			if b, err = appendJSONString(b, k); err != nil {
				return b, err
			}
			b = append(b, ':', ' ')
			if b, err = appendPretty(b, x[k], indent+1); err != nil {
				return b, err
			}
		}
		return append(nl(b, indent), '}'), nil
	case []any:
		if len(x) == 0 {
			return append(b, '[', ']'), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = nl(b, indent+1)
			if b, err = appendPretty(b, e, indent+1); err != nil {
				return b, err
			}
		}
		return append(nl(b, indent), ']'), nil
	}
	b, _, err = appendScalar(b, v)
	return b, err
}
