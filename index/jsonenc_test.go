package index

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCanonicalEscaping(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{
		{"plain", "abc", `"abc"`},
		{"quote", `a"b`, `"a\"b"`},
		{"backslash", `a\b`, `"a\\b"`},
		{"named controls", "\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"other controls lowercase hex", "\x00\x01\x1f\x0b\x1b", `"\u0000\u0001\u001f\u000b\u001b"`},
		{"html raw", "<>&", `"<>&"`},
		{"slash raw", "a/b", `"a/b"`},
		{"DEL raw", "\x7f", "\"\x7f\""},
		{"U+2028/2029 raw", "\u2028\u2029", "\"\u2028\u2029\""},
		{"non-ASCII raw", "Grüße 日本 😀", `"Grüße 日本 😀"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := appendCanonical(nil, c.in)
			if err != nil || string(got) != c.want {
				t.Errorf("got %s (%v), want %s", got, err, c.want)
			}
			// It must stay valid JSON that decodes back to the input.
			var back string
			if err := json.Unmarshal(got, &back); err != nil || back != c.in {
				t.Errorf("round trip %q (%v)", back, err)
			}
		})
	}
	if _, err := appendCanonical(nil, "\xff"); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
}

func TestCanonicalStructure(t *testing.T) {
	v := map[string]any{
		"b":  []any{int64(-1), uint64(18446744073709551615), true, false, json.Number("7")},
		"a":  map[string]any{"z": "1", "Z": "2", "é": "3", "e": "4", "": "5"},
		"a-": "x", // '-' (0x2d) sorts before letters, byte-wise
	}
	got, err := appendCanonical(nil, v)
	want := `{"a":{"":"5","Z":"2","e":"4","z":"1","é":"3"},"a-":"x","b":[-1,18446744073709551615,true,false,7]}`
	if err != nil || string(got) != want {
		t.Errorf("got  %s (%v)\nwant %s", got, err, want)
	}
	for _, bad := range []any{nil, map[string]any{"a": nil}, []any{nil}, 1.5, json.Number("NaN"), json.Number("0x10")} {
		if b, err := appendCanonical(nil, bad); err == nil {
			t.Errorf("%#v encoded as %s, want error", bad, b)
		}
	}
}

// A manifest with awkward characters: the signature covers the
// serde_json-escaped canonical form, and Marshal output parses back.
func TestManifestCanonicalEscaping(t *testing.T) {
	m := &Manifest{BackupType: "host", BackupID: "a<b>&c", BackupTime: 1,
		Files: []FileInfo{{Filename: "ü\u2028\"q\\\x1f.blob", Size: 1}}}
	got, err := m.CanonicalSigned()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"backup-id":"a<b>&c","backup-time":1,"backup-type":"host","files":[{"crypt-mode":"none","csum":"` +
		strings.Repeat("0", 64) + "\",\"filename\":\"ü\u2028\\\"q\\\\\\u001f.blob\",\"size\":1}]}"
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	out, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"a<b>&c"`) || !strings.Contains(string(out), `\u001f`) {
		t.Errorf("Marshal escaping:\n%s", out)
	}
	if _, err := ParseManifest(out); err == nil {
		t.Error("control character in a file name accepted") // ValidArchiveName refuses it
	}
	m.BackupID = "bad\xff"
	if _, err := m.CanonicalSigned(); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
}
