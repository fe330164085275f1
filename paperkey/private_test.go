package paperkey

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestPrivatePEM: PrivateText's printout reads back to the PEM; text with
// no numbered line is no paper key; numbered lines that make no PEM are
// refused naming the line.
func TestPrivatePEM(t *testing.T) {
	var pem strings.Builder
	pem.WriteString("-----BEGIN ENCRYPTED PRIVATE KEY-----\n")
	for i := range 23 {
		pem.WriteString(strings.Repeat(string(rune('A'+i)), 64) + "\n")
	}
	pem.WriteString("-----END ENCRYPTED PRIVATE KEY-----\n")
	printed, err := PrivateText([]byte(pem.String()), "host: 1")
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := PrivatePEM(printed)
	if err != nil || !ok || string(got) != pem.String() {
		t.Fatalf("PrivatePEM(PrivateText) = %q, %v, %v", got, ok, err)
	}
	if _, ok, err := PrivatePEM([]byte(pem.String())); ok || err != nil {
		t.Errorf("a plain PEM: ok %v, err %v", ok, err)
	}
	lines := strings.Split(strings.TrimSuffix(pem.String(), "\n"), "\n")
	number := func(ls []string, from int) string {
		var b strings.Builder
		for i, l := range ls {
			b.WriteString(strings.Repeat(" ", i%2) + strconv.Itoa(from+i) + ": " + l + "\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, text, want string
	}{
		{"line missing", number(lines[:4], 0) + number(lines[5:], 5), "line 4 of 0..24 is missing"},
		{"first lines missing", number(lines[2:], 2), "line 0 of"},
		{"twice, different", number(lines, 0) + "3: XYZ\n", "line 3 is there twice"},
		{"no END", number(lines[:10], 0), "-----END"},
	} {
		_, ok, err := PrivatePEM([]byte(tc.text))
		if !ok || !errors.Is(err, ErrPrivateText) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ok %v, err %v; want %q", tc.name, ok, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "AAAA") {
			t.Errorf("%s: the error quotes the key: %v", tc.name, err)
		}
	}
	// Numbered twice with the same text (a block printed twice): accepted.
	if got, _, err := PrivatePEM([]byte(number(lines, 0) + number(lines[:5], 0))); err != nil || string(got) != pem.String() {
		t.Errorf("lines repeated alike: %q, %v", got, err)
	}
}
