package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
)

// TestHelpOnStdout: every command's --help (and "help COMMAND") prints its
// usage line, description, flags and examples on stdout, nothing on stderr,
// and exits 0, also under PROXMOX_OUTPUT_FORMAT=json; import-with-master-key
// says what ENCRYPTED-KEY is and create-master-key where it writes.
func TestHelpOnStdout(t *testing.T) {
	t.Setenv("PROXMOX_OUTPUT_FORMAT", "json")
	for _, c := range []struct {
		args []string
		want []string // besides "Usage: pbsdirect <command>", "Flags:" and "Examples:"
	}{
		{[]string{"restore"}, []string{"TARGET is", "PBS_ENCRYPTION_PASSWORD_FD"}},
		{[]string{"drill"}, nil},
		{[]string{"verify"}, nil},
		{[]string{"snapshots"}, nil},
		{[]string{"groups"}, nil},
		{[]string{"namespaces"}, nil},
		{[]string{"backup"}, []string{"--master-pubkey-file"}},
		{[]string{"mount"}, []string{"exit 0"}},
		{[]string{"serve-nbd"}, []string{"exit 0"}},
		{[]string{"version"}, nil},
		{[]string{"report", "merge"}, nil},
		{[]string{"key", "create"}, nil},
		{[]string{"key", "show"}, nil},
		{[]string{"key", "change-passphrase"}, nil},
		{[]string{"key", "paperkey"}, nil},
		{[]string{"key", "create-master-key"}, []string{"current directory", "master-public.pem", "master-private.pem"}},
		{[]string{"key", "import-with-master-key"}, []string{"ENCRYPTED-KEY is", "rsa-encrypted.key.blob", "snapshot"}},
	} {
		name := strings.Join(c.args, " ")
		for _, args := range [][]string{append(append([]string{}, c.args...), "--help"), append([]string{"help"}, c.args...)} {
			r := pbs(t, args...)
			if r.code != 0 || r.err != "" {
				t.Errorf("%s: exit %d, stderr %q; want 0 and nothing on stderr", strings.Join(args, " "), r.code, r.err)
			}
			for _, w := range append([]string{"Usage: pbsdirect " + name + " ", "Flags:\n", "Examples:\n  pbsdirect " + c.args[0]}, c.want...) {
				if !strings.Contains(r.out, w) {
					t.Errorf("%s: stdout lacks %q:\n%s", strings.Join(args, " "), w, r.out)
				}
			}
		}
	}
	// help COMMAND prints exactly what COMMAND --help does, for every
	// command of the tree.
	var walk func(prefix []string, specs []commandSpec)
	walk = func(prefix []string, specs []commandSpec) {
		for _, sp := range specs {
			words := append(append([]string{}, prefix...), strings.Fields(sp.use)[0])
			a, b := pbs(t, append([]string{"help"}, words...)...), pbs(t, append(words, "--help")...)
			if a.out != b.out || a.code != 0 || b.code != 0 {
				t.Errorf("help %s and %s --help differ:\n%s\n---\n%s", strings.Join(words, " "), strings.Join(words, " "), a.out, b.out)
			}
			walk(words, sp.sub)
		}
	}
	walk(nil, append(commandSpecs(), commandSpec{use: "completion", sub: []commandSpec{{use: "bash"}, {use: "fish"}}}))
	// What follows --help, or the command named to help, does not matter.
	for _, args := range [][]string{{"restore", "--help", "--bogus"}, {"help", "restore", "extra", "--store", "x"}, {"restore", "-h", "a", "b"}} {
		if r := pbs(t, args...); r.code != 0 || r.err != "" || !strings.HasPrefix(r.out, "Usage: pbsdirect restore ") {
			t.Errorf("%s: %v; want restore's usage on stdout, exit 0", strings.Join(args, " "), r)
		}
	}
	for _, args := range [][]string{{"--help"}, {"help"}, {"key", "--help"}, {"--help=true"}, {"--help", "--bogus"}} {
		if r := pbs(t, args...); r.code != 0 || r.err != "" || !strings.Contains(r.out, "Usage:") {
			t.Errorf("%s: %v; want usage on stdout, exit 0", strings.Join(args, " "), r)
		}
	}
}

// failingWriter fails every write, as a full disk or a closed pipe would.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestStdoutWriteFailure: a command whose output did not reach standard
// output does not report success (exit 3), help and JSON results included.
func TestStdoutWriteFailure(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--help"}, {"restore", "--help"}, {"version", "--output-format", "json"}, {"completion", "bash"}} {
		var errb strings.Builder
		if code := run(context.Background(), args, failingWriter{}, &errb); code != 3 || !strings.Contains(errb.String(), "no space left on device") {
			t.Errorf("%s to a full disk: exit %d, stderr %q; want 3 naming standard output", strings.Join(args, " "), code, errb.String())
		}
	}
}

// TestKeyfileHelpRepeats: --keyfile's value type in --help says that it
// may be given several times ("stringArray", as --store's), not "string".
func TestKeyfileHelpRepeats(t *testing.T) {
	for _, cmd := range []string{"restore", "verify", "drill", "mount", "serve-nbd", "restore-guest"} {
		r := pbs(t, cmd, "--help")
		if !strings.Contains(r.out, "--keyfile stringArray") || strings.Contains(r.out, "--keyfile string ") {
			t.Errorf("%s --help: --keyfile should show as stringArray: %s", cmd, r.out)
		}
	}
}

// TestHelpKeyExitCodes: pbsdirect --help says where keys fall among the
// exit codes: a wrong passphrase is 3 (no damage), a key file or printout
// that does not parse 2.
func TestHelpKeyExitCodes(t *testing.T) {
	r := pbs(t, "--help")
	text := strings.Join(strings.Fields(r.out), " ")
	for _, w := range []string{
		"a key file or printed key that does not parse, key create onto a file",
		"a key not opened (a wrong passphrase for a key file or master key: retry with the right one)",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("--help lacks %q: %s", w, r.out)
		}
	}
}
