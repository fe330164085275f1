package paperkey

import (
	"fmt"
	"strings"

	qrcode "github.com/skip2/go-qrcode"
)

// QR returns the QR code of data (error correction level M, the smallest
// version that holds it) as text, in the form `qrencode -t utf8i -m0 -s1
// -lm` prints it: no quiet zone, two module rows per line, each character
// one of ' ', '▀', '▄' and '█' where the half blocks are the dark modules of
// the upper and lower row (utf8i is qrencode's utf8 form with its colours
// inverted: dark on a light page), every line ended by "\n". For an odd
// number of rows the last line holds the last row alone.
//
// The symbol decodes to data; the mask and the segmentation into numeric,
// alphanumeric and byte modes are go-qrcode's, and may differ from
// libqrencode's for the same data. It returns an error when data does not
// fit in a version 40 symbol at level M (2331 bytes).
func QR(data string) (string, error) {
	code, err := qrcode.New(data, qrcode.Medium)
	if err != nil {
		return "", fmt.Errorf("QR code: %w", err)
	}
	code.DisableBorder = true
	return UTF8i(code.Bitmap()), nil
}

// UTF8i renders a module matrix (rows of columns, true for a dark module)
// as qrencode's utf8i text with no margin, described at QR.
func UTF8i(modules [][]bool) string {
	var b strings.Builder
	for y := 0; y < len(modules); y += 2 {
		top := modules[y]
		var bottom []bool
		if y+1 < len(modules) {
			bottom = modules[y+1]
		}
		for x, dark := range top {
			lower := x < len(bottom) && bottom[x]
			switch {
			case dark && lower:
				b.WriteString("█")
			case dark:
				b.WriteString("▀")
			case lower:
				b.WriteString("▄")
			default:
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// ParseUTF8i is the inverse of UTF8i: it returns the module matrix of
// utf8i text (lines of ' ', '▀', '▄' and '█'). A square symbol has an odd
// number of rows, so the last line's lower half is dropped when that makes
// the matrix square. Any other character is an error naming its line.
func ParseUTF8i(text string) ([][]bool, error) {
	var rows [][]bool
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		var top, bottom []bool
		for _, r := range line {
			switch r {
			case '█':
				top, bottom = append(top, true), append(bottom, true)
			case '▀':
				top, bottom = append(top, true), append(bottom, false)
			case '▄':
				top, bottom = append(top, false), append(bottom, true)
			case ' ':
				top, bottom = append(top, false), append(bottom, false)
			default:
				return nil, fmt.Errorf("QR text line %d: character %q is not a utf8i module pair", i+1, r)
			}
		}
		rows = append(rows, top, bottom)
	}
	if len(rows) > 0 && len(rows)-1 == len(rows[0]) {
		rows = rows[:len(rows)-1]
	}
	return rows, nil
}
