package ratelimit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// units are the size suffixes ParseSize takes, upper-cased, with their
// factors: as proxmox-backup-client (and PBS's HumanByte), K, M, G, T, P
// with or without B are powers of 1000, and Ki, Mi, Gi, Ti, Pi with or
// without B powers of 1024. (rclone's --bwlimit reads "M" as MiB: write
// "MiB" for that.)
var units = map[string]float64{
	"": 1, "B": 1,
	"K": 1e3, "KB": 1e3, "M": 1e6, "MB": 1e6, "G": 1e9, "GB": 1e9, "T": 1e12, "TB": 1e12, "P": 1e15, "PB": 1e15,
	"KI": 1 << 10, "KIB": 1 << 10, "MI": 1 << 20, "MIB": 1 << 20, "GI": 1 << 30, "GIB": 1 << 30,
	"TI": 1 << 40, "TIB": 1 << 40, "PI": 1 << 50, "PIB": 1 << 50,
}

// ParseSize parses a byte count: a decimal number ("1.5") and an optional
// unit (see units; case does not matter, a space may come between), e.g.
// 200MiB, 1G, 500M, 1.5GiB, 1048576. With perSecond, a trailing "/s" is
// taken too (a rate: "200MiB/s"). The result is rounded down to whole
// bytes and must be at least 1.
func ParseSize(s string, perSecond bool) (int64, error) {
	t := strings.TrimSpace(s)
	if perSecond {
		t = strings.TrimSpace(strings.TrimSuffix(t, "/s"))
	}
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToUpper(strings.TrimSpace(t[i:]))
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%q: want a number and a unit, e.g. 200MiB or 1.5G", s)
	}
	f, ok := units[unit]
	if !ok && len(unit) > 1 && unit[0] == 'E' && (unit[1] >= '0' && unit[1] <= '9' || unit[1] == '+' || unit[1] == '-') {
		return 0, fmt.Errorf("%q: write the number without an exponent, e.g. 1000 or 1K", s)
	}
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q (want B, K, M, G, T (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024))", s, t[i:])
	}
	b := math.Floor(v * f)
	if b < 1 {
		return 0, fmt.Errorf("%q: want at least 1 byte", s)
	}
	if b >= math.MaxInt64/2 {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return int64(b), nil
}

// ParseRequestRate parses a request rate: a positive decimal number of
// requests per second, with an optional "/s" ("10", "10/s", "0.5/s").
func ParseRequestRate(s string) (float64, error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "/s"))
	if i := strings.IndexAny(t, "eE"); i > 0 && t[i-1] >= '0' && t[i-1] <= '9' {
		return 0, fmt.Errorf("%q: write the number without an exponent, e.g. 1000", s)
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || strings.ContainsAny(t, "eEnNxXpP_") {
		return 0, fmt.Errorf("%q: want a number of requests per second, e.g. 10 or 0.5/s", s)
	}
	if v <= 0 || v > 1e9 {
		return 0, fmt.Errorf("%q: want more than 0 requests per second", s)
	}
	return v, nil
}
