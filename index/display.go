package index

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// DisplayText returns s, a string the store controls (notes, owner, file
// and object names, listed keys, messages that quote them), fit for one
// line of text output: every character that does not show as itself on a
// terminal (control characters, tab and newline included; C1 controls;
// invisible format characters such as bidi overrides; line separators;
// private-use characters; see visibleRune) is written as a Go escape
// ("\x1b", "\r", "\t", "\u202e"), and every byte that is not UTF-8 as
// "\xHH". A string without such characters is returned unchanged.
// JSON output needs no such treatment: encoding/json escapes control
// characters.
func DisplayText(s string) string {
	if isDisplayable(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case visibleRune(r):
			b.WriteString(s[i : i+n])
		default:
			b.WriteString(escapeRune(r))
		}
		i += n
	}
	return b.String()
}

// isDisplayable reports whether DisplayText leaves s unchanged.
func isDisplayable(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !visibleRune(r) {
			return false
		}
		i += n
	}
	return true
}

// escapeRune writes r as a Go escape: a short one (\t, \n, \r, …) where
// there is one, else \xHH below 0x80, \uHHHH or \UHHHHHHHH.
func escapeRune(r rune) string {
	switch r {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\v':
		return `\v`
	}
	switch {
	case r < utf8.RuneSelf:
		return fmt.Sprintf(`\x%02x`, r)
	case r <= 0xffff:
		return fmt.Sprintf(`\u%04x`, r)
	}
	return fmt.Sprintf(`\U%08x`, r)
}
