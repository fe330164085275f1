package paperkey

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsdirect/pbsdirect/crypto"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// tool returns the path of a command the tests run (qrencode, zbarimg:
// .ci/run installs them); without it the test skips, or fails on CI.
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		fixture.SkipOrFail(t, "%s not installed (apt-get install %s; .ci/run installs it)", name, pkg)
	}
	return p
}

// scan decodes the utf8i QR text qr as a scanner would: it parses the text
// back into modules, draws them as a PGM image (4 pixels a module, a quiet
// zone of 4 modules) and reads it with zbarimg. It returns the decoded data.
func scan(t *testing.T, qr string) string {
	t.Helper()
	zbarimg := tool(t, "zbarimg", "zbar-tools")
	modules, err := ParseUTF8i(qr)
	if err != nil {
		t.Fatal(err)
	}
	const scale, quiet = 4, 4
	n := len(modules)
	side := (n + 2*quiet) * scale
	var img bytes.Buffer
	fmt.Fprintf(&img, "P5\n%d %d\n255\n", side, side)
	for py := range side {
		for px := range side {
			y, x := py/scale-quiet, px/scale-quiet
			v := byte(255)
			if y >= 0 && y < n && x >= 0 && x < len(modules[y]) && modules[y][x] {
				v = 0
			}
			img.WriteByte(v)
		}
	}
	path := filepath.Join(t.TempDir(), "qr.pgm")
	if err := os.WriteFile(path, img.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(zbarimg, "--raw", "-q", path).Output()
	if err != nil {
		t.Fatalf("zbarimg found no QR code in %d×%d modules: %v\n%s", n, n, err, qr)
	}
	data, ok := strings.CutSuffix(string(out), "\n")
	if !ok {
		t.Fatalf("zbarimg output without its newline: %q", out)
	}
	return data
}

// formatInfo returns the error correction level bits (0 for M) and the
// mask of a symbol, read from its format information next to the top-left
// finder pattern (ISO/IEC 18004 §7.9).
func formatInfo(modules [][]bool) (level, mask int) {
	v := 0
	bit := func(dark bool) {
		v <<= 1
		if dark {
			v |= 1
		}
	}
	for _, x := range []int{0, 1, 2, 3, 4, 5, 7, 8} {
		bit(modules[8][x])
	}
	for _, y := range []int{7, 5, 4, 3, 2, 1, 0} {
		bit(modules[y][8])
	}
	v ^= 0x5412
	return v >> 13, (v >> 10) & 7
}

// samePatterns compares the modules two symbols of one version share
// whatever their data and mask: the finder patterns with their separators,
// the timing patterns and, from version 7, the version information. It
// returns the first module that differs and false, or true.
func samePatterns(a, b [][]bool) (x, y int, ok bool) {
	n := len(a)
	fixed := func(x, y int) bool {
		inFinder := func(x0, y0 int) bool { return x >= x0 && x < x0+8 && y >= y0 && y < y0+8 }
		switch {
		case inFinder(0, 0), inFinder(n-8, 0), inFinder(0, n-8):
			return true
		case x == 6 || y == 6:
			return true
		case n >= 45 && ((x < 6 && y >= n-11 && y < n-8) || (y < 6 && x >= n-11 && x < n-8)):
			return true
		}
		return false
	}
	for y := range n {
		for x := range n {
			if fixed(x, y) && a[y][x] != b[y][x] {
				return x, y, false
			}
		}
	}
	return 0, 0, true
}

// samples are the data the QR tests encode: key files as paper keys hold
// them, a master key's PEM block, and texts that favour numeric and
// alphanumeric segments.
func samples(t *testing.T) map[string]string {
	t.Helper()
	s := map[string]string{
		"short":    "hello\nworld",
		"digits":   "01234567890123456789012345678901234567890123456789",
		"mixed":    `{"n": 1048576, "r": 8, "p": 1, "created": "2024-01-01T00:00:00+00:00"}`,
		"alnum":    "ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 $%*+-./:",
		"max-ish":  strings.Repeat("0d:bb:ce:32:7f:38:9b:3c:17:21:37:cc:f3:ba:f6:9d\n", 40),
		"pem-like": "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIJrTBXBgkqhkiG9w0BBQ0wSjApBgkqhkiG9w0BBQwwHAQIZ7VbYkJt1TQCAggA\nMAwGCCqGSIb3DQIJBQAwHQYJYIZIAWUDBAEqBBB5ePnEo2zJmWcV7l2b4U1mBIIJ",
	}
	for _, name := range []string{"official-pbkdf2.key", "official-scrypt.key"} {
		s[name] = keyJSON(t, readKey(t, name))
	}
	return s
}

func readKey(t *testing.T, name string) *crypto.KeyFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "keys", name))
	if err != nil {
		t.Fatal(err)
	}
	kf, err := crypto.ParseKeyFile(data)
	if err != nil {
		t.Fatal(err)
	}
	return kf
}

// keyJSON returns the lines between the markers of kf's paper key, joined
// by "\n": what the QR code holds.
func keyJSON(t *testing.T, kf *crypto.KeyFile) string {
	t.Helper()
	text, err := Text(kf, "")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(text), crypto.PaperKeyBegin+"\n")
	js, _, _ := strings.Cut(rest, "\n"+crypto.PaperKeyEnd+"\n")
	return js
}

// TestQRScans: the QR code of each sample, as text, scans back (zbarimg)
// to exactly the sample.
func TestQRScans(t *testing.T) {
	for name, data := range samples(t) {
		t.Run(name, func(t *testing.T) {
			qr, err := QR(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := scan(t, qr); got != data {
				t.Fatalf("QR code scans to %q, want %q", got, data)
			}
		})
	}
	if _, err := QR(strings.Repeat("x", 2332)); err == nil {
		t.Fatal("QR of 2332 bytes (over version 40-M) did not fail")
	}
}

// TestQRAsQrencode compares QR with `qrencode -t utf8i -m0 -s1 -lm`, the
// command proxmox-backup-client runs. Rendering: qrencode's own text, read
// back into modules and rendered by UTF8i, is byte for byte qrencode's
// text. Encoding: for each sample both symbols have the same version
// (size), level M, the same finder, timing and version patterns, the same
// text shape (lines of the same length, one per two rows), and scan to the
// same data. The data modules and the mask may differ: go-qrcode and
// libqrencode choose masks and mode segments by their own rules (both
// valid), so those are not compared.
func TestQRAsQrencode(t *testing.T) {
	qrencode := tool(t, "qrencode", "qrencode")
	for name, data := range samples(t) {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(qrencode, "-t", "utf8i", "-m0", "-s1", "-lm", "--output", "-")
			cmd.Stdin = strings.NewReader(data)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("qrencode: %v", err)
			}
			theirs := string(out)
			theirModules, err := ParseUTF8i(theirs)
			if err != nil {
				t.Fatal(err)
			}
			if again := UTF8i(theirModules); again != theirs {
				t.Fatalf("qrencode's symbol rendered here:\n%s\nqrencode:\n%s", again, theirs)
			}
			ours, err := QR(data)
			if err != nil {
				t.Fatal(err)
			}
			ourModules, err := ParseUTF8i(ours)
			if err != nil {
				t.Fatal(err)
			}
			if len(ourModules) != len(theirModules) {
				t.Fatalf("symbol of %d modules, qrencode's %d", len(ourModules), len(theirModules))
			}
			ol, _ := formatInfo(ourModules)
			tl, _ := formatInfo(theirModules)
			if ol != 0 || tl != 0 {
				t.Fatalf("error correction bits %02b here, %02b by qrencode, want 00 (M)", ol, tl)
			}
			if x, y, ok := samePatterns(ourModules, theirModules); !ok {
				t.Fatalf("module (%d,%d) of the finder, timing or version patterns differs from qrencode's", x, y)
			}
			ourLines, theirLines := strings.Split(ours, "\n"), strings.Split(theirs, "\n")
			if len(ourLines) != len(theirLines) {
				t.Fatalf("%d lines, qrencode %d", len(ourLines), len(theirLines))
			}
			for i := range ourLines {
				if a, b := len([]rune(ourLines[i])), len([]rune(theirLines[i])); a != b {
					t.Fatalf("line %d has %d characters, qrencode's %d", i+1, a, b)
				}
			}
			if got, want := scan(t, ours), scan(t, theirs); got != want || got != data {
				t.Fatalf("scans to %q here, %q from qrencode, want %q", got, want, data)
			}
		})
	}
}

// TestUTF8i: the half-block mapping of qrencode's utf8i form with no
// margin, for an odd number of rows, and ParseUTF8i as its inverse.
func TestUTF8i(t *testing.T) {
	m := [][]bool{
		{true, true, false, false},
		{true, false, true, false},
		{false, true, true, false},
		{true, false, false, true},
		{true, true, false, false},
	}
	const want = "█▀▄ \n▄▀▀▄\n▀▀  \n"
	if got := UTF8i(m); got != want {
		t.Fatalf("UTF8i = %q, want %q", got, want)
	}
	back, err := ParseUTF8i(want)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 6 || fmt.Sprint(back[:5]) != fmt.Sprint(m) || fmt.Sprint(back[5]) != "[false false false false]" {
		t.Fatalf("ParseUTF8i = %v", back)
	}
	if _, err := ParseUTF8i("█x\n"); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("ParseUTF8i of a stray character: %v", err)
	}
}

// TestTextRoundTrip: the paper key of a real key file is PBS's text form:
// subject, markers around the indented JSON, then the QR code of the JSON
// lines and an empty line. The whole text parses back to the same key file
// (crypto.ParseKeyFile ignores the QR code), and so does what the QR code
// scans to.
func TestTextRoundTrip(t *testing.T) {
	kf := readKey(t, "official-pbkdf2.key")
	text, err := Text(kf, "host pve1")
	if err != nil {
		t.Fatal(err)
	}
	head, qr, ok := strings.Cut(string(text), "\n"+crypto.PaperKeyEnd+"\n")
	if !ok {
		t.Fatalf("no end marker line:\n%s", text)
	}
	lines := strings.Split(head, "\n")
	if lines[0] != "Subject: host pve1" || lines[1] != "" || lines[2] != crypto.PaperKeyBegin || lines[3] != "{" ||
		!strings.HasPrefix(lines[4], `  "kdf": {`) || lines[len(lines)-1] != "}" {
		t.Fatalf("paper key text:\n%s", text)
	}
	js := strings.Join(lines[3:], "\n")
	qr, ok = strings.CutSuffix(qr, "\n\n")
	if !ok || strings.Contains(qr, "\n\n") {
		t.Fatalf("QR code not followed by one empty line:\n%q", qr)
	}
	if got := scan(t, qr+"\n"); got != js {
		t.Fatalf("QR code scans to %q, want the key lines %q", got, js)
	}
	want, _ := kf.Marshal()
	for what, in := range map[string][]byte{"paper key": text, "scanned QR code": []byte(js)} {
		back, err := crypto.ParseKeyFile(in)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got, _ := back.Marshal(); !bytes.Equal(got, want) {
			t.Fatalf("%s parses to %s, want %s", what, got, want)
		}
	}
	noEnd := []byte(strings.Split(string(text), crypto.PaperKeyEnd)[0])
	if _, err := crypto.ParseKeyFile(noEnd); !errors.Is(err, crypto.ErrPaperKey) {
		t.Fatalf("paper key without end marker: %v, want ErrPaperKey", err)
	}
}

// TestPrivateText: the paper key of a master private key numbers its PEM
// lines in blocks of five, each followed by the QR code of the block's
// lines, an empty line and a form feed line; the blocks' QR codes scan back
// to the PEM, which opens with its passphrase.
func TestPrivateText(t *testing.T) {
	_, priv, err := crypto.GenerateMasterKey(crypto.MinMasterKeyBits, []byte("master pass"))
	if err != nil {
		t.Fatal(err)
	}
	text, err := PrivateText(priv, "master")
	if err != nil {
		t.Fatal(err)
	}
	body, ok := strings.CutPrefix(string(text), "Subject: master\n\n")
	if !ok {
		t.Fatalf("no subject:\n%s", text)
	}
	blocks := strings.Split(body, "\n\f\n")
	if blocks[len(blocks)-1] != "" {
		t.Fatalf("text does not end with a form feed line: %q", blocks[len(blocks)-1])
	}
	blocks = blocks[:len(blocks)-1]
	pemLines := strings.Split(strings.TrimSpace(string(priv)), "\n")
	if want := (len(pemLines) + PrivateBlockLines - 1) / PrivateBlockLines; len(blocks) != want {
		t.Fatalf("%d blocks, want %d for %d PEM lines", len(blocks), want, len(pemLines))
	}
	var scanned []string
	for i, block := range blocks {
		lines := strings.Split(block, "\n")
		n := min(PrivateBlockLines, len(pemLines)-i*PrivateBlockLines)
		var plain []string
		for j, l := range lines[:n] {
			num := i*PrivateBlockLines + j
			want := fmt.Sprintf("%2d: %s", num, pemLines[num])
			if l != want {
				t.Fatalf("block %d line %d = %q, want %q", i, j, l, want)
			}
			plain = append(plain, pemLines[num])
		}
		qr, ok := strings.CutSuffix(strings.Join(lines[n:], "\n"), "\n")
		if !ok || strings.Contains(qr, "\n\n") {
			t.Fatalf("block %d: QR code not followed by one empty line: %q", i, qr)
		}
		got := scan(t, qr)
		if got != strings.Join(plain, "\n") {
			t.Fatalf("block %d QR code scans to %q, want %q", i, got, plain)
		}
		scanned = append(scanned, got)
	}
	if _, err := crypto.ParseMasterPrivateKey([]byte(strings.Join(scanned, "\n")+"\n"), []byte("master pass")); err != nil {
		t.Fatalf("PEM scanned from the QR codes: %v", err)
	}
	if _, err := PrivateText([]byte("not a key\n"), ""); err == nil {
		t.Fatal("PrivateText of a non-PEM file did not fail")
	}
}
