package backup_test

import (
	"testing"

	"github.com/pbsdirect/pbsdirect/backup"
)

// TestParseTime: snapshot times as epoch seconds or RFC 3339, nothing at
// or before 1970.
func TestParseTime(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1764410400", 1764410400, true},
		{"2025-11-29T10:00:00Z", 1764410400, true},
		{"2025-11-29T11:00:00+01:00", 1764410400, true},
		{"0", 0, false},
		{"-5", 0, false},
		{"1970-01-01T00:00:00Z", 0, false},
		{"yesterday", 0, false},
		{"2025-11-29 10:00:00", 0, false},
	} {
		got, err := backup.ParseTime(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}
