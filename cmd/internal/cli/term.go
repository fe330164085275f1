package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// ErrNoTerminal is returned by ReadSecret when there is no terminal to ask.
var ErrNoTerminal = errors.New("no terminal")

// ReadSecret asks for a secret (a passphrase) on the terminal /dev/tty,
// without echo, with prompt; when confirm is set it asks a second time
// ("Verify Password: ") and refuses two different answers. Without a
// terminal it returns ErrNoTerminal.
func ReadSecret(prompt string, confirm bool) ([]byte, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil || !term.IsTerminal(int(tty.Fd())) {
		if tty != nil {
			tty.Close()
		}
		return nil, ErrNoTerminal
	}
	defer tty.Close()
	read := func(p string) ([]byte, error) {
		fmt.Fprint(tty, p)
		b, err := term.ReadPassword(int(tty.Fd()))
		fmt.Fprintln(tty)
		return b, err
	}
	p1, err := read(prompt)
	if err != nil {
		return nil, err
	}
	if confirm {
		p2, err := read("Verify Password: ")
		if err != nil {
			return nil, err
		}
		if string(p1) != string(p2) {
			return nil, errors.New("passphrases do not match")
		}
	}
	return p1, nil
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
