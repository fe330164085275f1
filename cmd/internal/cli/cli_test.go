package cli

import (
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"
)

// TestOutputFinish: the one JSON result of a command in each format: an
// object result gets ok, exit-code and error first (replacing its own), an
// array stays as it is on success and is put under "result" on failure,
// no result gives the envelope alone; text adds nothing; DEL and C1
// controls are escaped.
func TestOutputFinish(t *testing.T) {
	for _, c := range []struct {
		name, format string
		result       any // nil: no WriteJSON
		code         int
		errMsg       string
		want         string
	}{
		{"object ok", FormatJSON, map[string]any{"ok": "x", "pages": 2}, 0, "", `{"ok":true,"exit-code":0,"pages":2}` + "\n"},
		{"object failed", FormatJSON, map[string]any{"a": 1}, 1, "damaged", `{"ok":false,"exit-code":1,"error":"damaged","a":1}` + "\n"},
		{"array ok", FormatJSON, []int{1, 2}, 0, "", "[1,2]\n"},
		{"array failed", FormatJSON, []int{1}, 3, "gone", `{"ok":false,"exit-code":3,"error":"gone","result":[1]}` + "\n"},
		{"nothing", FormatJSON, nil, 2, "want DIR", `{"ok":false,"exit-code":2,"error":"want DIR"}` + "\n"},
		{"pretty", FormatJSONPretty, nil, 0, "", "{\n  \"ok\": true,\n  \"exit-code\": 0\n}\n"},
		{"C1 escaped", FormatJSON, map[string]string{"n": "a\u009bb\x7f"}, 0, "", `{"ok":true,"exit-code":0,"n":"a\u009bb\u007f"}` + "\n"},
		{"text", FormatText, nil, 1, "damaged", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			o := NewOutput(&b, c.format)
			if c.result != nil {
				if err := WriteJSON(o, c.result); err != nil {
					t.Fatal(err)
				}
			}
			if err := o.Finish(c.code, c.errMsg); err != nil {
				t.Fatal(err)
			}
			if b.String() != c.want {
				t.Errorf("got %q, want %q", b.String(), c.want)
			}
		})
	}
	// Outside Run's Output, WriteJSON prints indented at once.
	var b strings.Builder
	if err := WriteJSON(&b, map[string]int{"a": 1}); err != nil || b.String() != "{\n  \"a\": 1\n}\n" {
		t.Errorf("plain writer: %q, %v", b.String(), err)
	}
}

// TestFormatOf: the last --output-format before "--" wins over
// PROXMOX_OUTPUT_FORMAT; an unknown value counts as text.
func TestFormatOf(t *testing.T) {
	t.Setenv("PROXMOX_OUTPUT_FORMAT", "json-pretty")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, FormatJSONPretty},
		{[]string{"x", "--output-format", "json"}, FormatJSON},
		{[]string{"x", "--output-format=text", "--output-format=json"}, FormatJSON},
		{[]string{"x", "--", "--output-format=json"}, FormatJSONPretty},
		{[]string{"x", "--output-format=yaml"}, FormatText},
	} {
		if got := FormatOf(c.args); got != c.want {
			t.Errorf("FormatOf(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// TestNearFlag: a single-dash long flag, a prefix or a typo of one or two
// letters names the flag meant; a short or distant one names none.
func TestNearFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("store", "", "")
	fs.String("keyfile", "", "")
	for _, c := range []struct{ msg, want string }{
		{"unknown flag: --stroe", "store"},
		{"unknown flag: --stor=x", "store"},
		{"unknown shorthand flag: 's' in -store", "store"},
		{"unknown flag: --kyefile", "keyfile"},
		{"unknown flag: --st", ""},
		{"unknown flag: --bucket", ""},
		{"flag needs an argument: --store", ""},
	} {
		if got := nearFlag(fs, errors.New(c.msg)); got != c.want {
			t.Errorf("nearFlag(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}

// TestManMarkdown: indented lines become a preformatted block after a blank
// line; markup characters elsewhere are escaped.
func TestManMarkdown(t *testing.T) {
	in := "Use *a* and [b]_c.\n  pbsdirect x <y>\nAfter."
	want := "Use \\*a\\* and \\[b\\]\\_c.\n\n      pbsdirect x <y>\n\nAfter."
	if got := manMarkdown(in); got != want {
		t.Errorf("manMarkdown:\n%q\nwant\n%q", got, want)
	}
}

// TestBuildVersion: the linked version wins; without one the build
// information gives one (never empty), with the Go version and platform.
func TestBuildVersion(t *testing.T) {
	if v := BuildVersion("v1.2.3"); v.Version != "v1.2.3" || !strings.HasPrefix(v.GoVersion, "go1.") || v.Platform == "" {
		t.Errorf("linked: %+v", v)
	}
	if v := BuildVersion(""); v.Version == "" || v.Version == "dev" {
		t.Errorf("from build information: %+v", v)
	}
}

// TestBounded: work that ends in time gives its result; work that does not
// is left behind with the deadline error and its context done.
func TestBounded(t *testing.T) {
	v, err := Bounded(context.Background(), time.Minute, func(context.Context) (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Errorf("in time: %d, %v", v, err)
	}
	release := make(chan struct{})
	defer close(release)
	_, err = Bounded(context.Background(), time.Millisecond, func(ctx context.Context) (int, error) {
		<-release
		return 1, ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("past the bound: %v, want the deadline", err)
	}
}

// testProgram is a program of two commands (a leaf "show" with an
// --output-format and a bare-value --mode, and a group "key" with "make")
// whose errors are all outside the data.
func testProgram() *Program {
	show := func(fs *flag.FlagSet) Func {
		format := new(string)
		RegisterFormat(fs, format)
		fs.String("mode", "auto", "mode")
		fs.Lookup("mode").NoOptDefVal = "on"
		return func(_ context.Context, args []string, stdout, _ io.Writer) error {
			if len(args) != 0 {
				return Usagef("show takes no arguments")
			}
			if IsJSON(stdout) {
				return WriteJSON(stdout, map[string]int{"n": 1})
			}
			_, err := io.WriteString(stdout, "shown\n")
			return err
		}
	}
	fail := func(fs *flag.FlagSet) Func {
		RegisterFormat(fs, new(string))
		return func(context.Context, []string, io.Writer, io.Writer) error { return errors.New("store gone") }
	}
	return &Program{
		Name: "prog", Short: "a test program", Long: "prog does things.", CompletionLong: "Completes.",
		Commands: func() []Spec {
			return []Spec{
				{Use: "show [flags]", Short: "show it", Build: show, Complete: CompleteNothing},
				{Use: "key", Short: "keys", Sub: []Spec{{Use: "make", Short: "make a key", Build: fail}}},
			}
		},
		ExitCode: func(err error) int {
			var ie *InterruptedError
			var ue *UsageError
			switch {
			case err == nil, errors.Is(err, flag.ErrHelp):
				return ExitOK
			case errors.As(err, &ie):
				return 128 + int(ie.Sig)
			case errors.As(err, &ue):
				return ExitUsage
			}
			return ExitOutside
		},
		KnownOutside:  func(error) bool { return false },
		Display:       func(s string) string { return s },
		FlagValues:    map[string][]string{"output-format": {FormatText, FormatJSON, FormatJSONPretty}},
		IsFlagValue:   func(name, v string) bool { return name == "mode" && (v == "on" || v == "off") },
		CompleteFlags: func(*cobra.Command) {},
	}
}

// failingWriter fails every write, as a full disk or a closed pipe would.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestRun: one command line's exit code, stdout and stderr: results, help,
// usage mistakes with the nearest command or flag, errors in JSON, a bare
// flag given its value after a space, an interrupted run, and standard
// output that could not be written.
func TestRun(t *testing.T) {
	t.Setenv("PROXMOX_OUTPUT_FORMAT", "")
	t.Setenv("PROG_CPUPROFILE", "")
	t.Setenv("PROG_TRACE", "")
	for _, c := range []struct {
		name      string
		args      []string
		code      int
		out, errs string // substrings; out "" wants nothing on stdout
	}{
		{"text", []string{"show"}, 0, "shown\n", ""},
		{"json", []string{"show", "--output-format", "json"}, 0, `{"ok":true,"exit-code":0,"n":1}`, ""},
		{"help", []string{"show", "--help"}, 0, "Usage: prog show [flags]\n", ""},
		{"help command", []string{"help", "key", "make"}, 0, "Usage: prog key make", ""},
		{"no command", nil, 2, "", "Usage: prog COMMAND"},
		{"unknown command", []string{"shwo"}, 2, "", `prog: unknown command "shwo" (did you mean show?); run 'prog --help' for the commands`},
		{"unknown command json", []string{"shwo", "--output-format=json"}, 2, `{"ok":false,"exit-code":2,"error":"unknown command \"shwo\" (did you mean show?); run 'prog --help' for the commands"}`, ""},
		{"flag first", []string{"--bogus"}, 2, "", "prog: want a command before --bogus"},
		{"near flag", []string{"show", "--mdoe=on"}, 2, "", "prog show: unknown flag: --mdoe (did you mean --mode?)"},
		{"control in flag", []string{"show", "--a\x1bb"}, 2, "", `prog show: "unknown flag: --a\x1bb"`},
		{"bare value", []string{"show", "--mode", "off"}, 2, "", "prog show: --mode takes its value after '=' (--mode=off): alone it means --mode=on"},
		{"group alone", []string{"key"}, 2, "", "prog key: want a key command: make"},
		{"group unknown", []string{"key", "mak"}, 2, "", `prog key: unknown key command "mak" (did you mean make?)`},
		{"group far", []string{"key", "zzz"}, 2, "", `prog key: unknown key command "zzz" (want make)`},
		{"help unknown", []string{"help", "nosuch"}, 2, "", `no help for "nosuch": unknown command`},
		{"outside", []string{"key", "make"}, 3, "", "prog key make: error: store gone"},
		{"outside json", []string{"key", "make", "--output-format=json"}, 3, `{"ok":false,"exit-code":3,"error":"store gone"}`, ""},
		{"completion script", []string{"completion", "bash"}, 0, "bash completion", ""},
		{"completion no shell", []string{"completion"}, 2, "", "want a shell"},
		{"flag values", []string{"__complete", "show", "--output-format", ""}, 0, "text\njson\njson-pretty\n:4\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb strings.Builder
			code := testProgram().Run(context.Background(), c.args, &out, &errb)
			if code != c.code || (c.out == "") != (out.Len() == 0) || !strings.Contains(out.String(), c.out) || !strings.Contains(errb.String(), c.errs) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, out.String(), errb.String(), c.code, c.out, c.errs)
			}
		})
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&InterruptedError{Sig: syscall.SIGTERM})
	if err := Interrupted(ctx, context.Canceled); err.Error() != "interrupted (SIGTERM)" {
		t.Errorf("interrupted: %v", err)
	}
	if err := Interrupted(ctx, errors.New("resume with --resume: context canceled")); err.Error() != "interrupted (SIGTERM): resume with --resume: interrupted" {
		t.Errorf("interrupted with detail: %v", err)
	}
	if err := Interrupted(ctx, context.Cause(ctx)); err.Error() != "interrupted (SIGTERM)" {
		t.Errorf("interrupted by its own cause: %v", err)
	}
	for _, args := range [][]string{{"show"}, {"show", "--help"}, {"show", "--output-format=json"}} {
		var errb strings.Builder
		if code := testProgram().Run(context.Background(), args, failingWriter{}, &errb); code != ExitOutside || !strings.Contains(errb.String(), "no space left on device") {
			t.Errorf("%q to a full disk: exit %d, stderr %q; want 3", args, code, errb.String())
		}
	}
}

// TestProgressFlags: the four modes and a positive interval are taken,
// anything else is a usage error; auto is lines when stderr is no terminal.
func TestProgressFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--progress=none", "--progress-interval=1s"}, true},
		{[]string{"--progress=sometimes"}, false},
		{[]string{"--progress-interval=0s"}, false},
	} {
		var p ProgressFlags
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		p.Register(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		var ue *UsageError
		if err := p.Check(); (err == nil) != c.ok || err != nil && !errors.As(err, &ue) {
			t.Errorf("%q: %v, want ok %v or a usage error", c.args, err, c.ok)
		}
	}
	if m := (ProgressFlags{Mode: "auto"}).ModeFor(io.Discard); m != "lines" {
		t.Errorf("auto without a terminal: %q, want lines", m)
	}
}
