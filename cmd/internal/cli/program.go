package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strings"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"
)

// Program is what the machinery needs to know of a program: its name and
// texts, its commands, and what its errors and flag values mean. Its
// functions are called for each run; none may be nil.
type Program struct {
	Name           string        // the binary's name, as typed ("pbsdirect")
	Short          string        // the root command's one-line summary
	Long           string        // what NAME --help says besides the command list
	CompletionLong string        // what NAME completion --help says
	Commands       func() []Spec // the command tree below the root, in the order help lists it
	// ExitCode maps a command's error to the exit code: ExitOK for nil and
	// flag.ErrHelp, 128 + the signal for an InterruptedError, ExitUsage
	// for a UsageError; the rest is the program's classification.
	ExitCode func(error) int
	// KnownOutside reports whether an error's cause is known to lie
	// outside the data (a completion's other errors are usage errors).
	KnownOutside func(error) bool
	// Display makes an error message safe for the terminal (it may carry
	// text the program read from elsewhere).
	Display func(string) string
	// FlagValues are the values the shell offers for the flags that take
	// one of a fixed set, by flag name.
	FlagValues map[string][]string
	// IsFlagValue reports whether v is a value of the flag name, whose bare
	// form means something (NoOptDefVal): "--name v" is then refused.
	IsFlagValue func(name, v string) bool
	// CompleteFlags registers the completions of a leaf command's flags
	// beyond FlagValues (values read from elsewhere).
	CompleteFlags func(c *cobra.Command)
}

// Run executes one command line and returns the exit code. In a JSON
// output format (--output-format or PROXMOX_OUTPUT_FORMAT) it prints one
// JSON result on stdout whatever happens: the command's result with "ok"
// and "exit-code", and "error" when it failed.
func (p *Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out := NewOutput(stdout, FormatOf(args))
	code, err := p.runCommand(ctx, args, out, stderr)
	if !errors.Is(err, flag.ErrHelp) {
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		out.Finish(code, msg)
	}
	if out.werr != nil && code == ExitOK {
		// What the command printed did not all reach standard output (a
		// full disk, a closed pipe): not a success.
		fmt.Fprintf(stderr, "%s: writing standard output: %v\n", p.Name, out.werr)
		return ExitOutside
	}
	return code
}

// runCommand runs one command line with stdout given as Run's output and
// returns the exit code and the error it reported on stderr (nil on
// success; flag.ErrHelp when it printed a help text).
func (p *Program) runCommand(ctx context.Context, args []string, stdout *Output, stderr io.Writer) (int, error) {
	var st runState
	root := p.newRoot(ctx, stdout, stderr, &st)
	if len(args) == 0 {
		root.SetOut(stderr)
		root.Help()
		return ExitUsage, Usagef("no command given")
	}
	if args[0] == "--version" {
		args = append([]string{"version"}, args[1:]...)
	}
	// cobra adds its hidden command for the shell's requests when it
	// executes; every other first argument must name a command (cobra
	// would skip an empty one).
	isRequest := args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd
	c, _, findErr := root.Find(args)
	if args[0] == "" || !isRequest && (findErr != nil || c == root && !isHelpFlag(args[0])) {
		err := p.unknownCommand(root, args[0])
		fmt.Fprintf(stderr, "%s: %v\n", p.Name, err)
		return ExitUsage, err
	}
	if findErr == nil {
		if err := p.checkBareValue(c, args); err != nil {
			fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, strings.TrimPrefix(c.CommandPath(), root.Name()+" "), err)
			return ExitUsage, err
		}
	}
	root.SetArgs(args)
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if isCompletion(c) || c.Name() == "help" {
			return nil // nothing to tune
		}
		for _, aid := range tuningAids {
			env := strings.ToUpper(p.Name) + "_" + aid.env
			if path := os.Getenv(env); path != "" {
				stop, err := startRecording(path, aid.start, aid.stop)
				if err != nil {
					return fmt.Errorf("%s: %w", env, err)
				}
				stops = append(stops, stop)
			}
		}
		return nil
	}
	c, err := root.ExecuteContextC(ctx)
	if err == nil && isCompletion(c) {
		// A completion script or candidates: text for the shell only.
		TextOnly(stdout)
	}
	err = Interrupted(ctx, err)
	if code := p.ExitCode(err); err != nil && isCompletion(c) && (code == ExitData || code == ExitOutside && !p.KnownOutside(err)) {
		err = UsageOf(err) // a completion request or script has no data to be damaged
	}
	code := p.ExitCode(err)
	name := p.Name
	if c != root {
		name += " " + strings.TrimPrefix(c.CommandPath(), root.Name()+" ")
	}
	switch {
	case code == ExitOK && st.help:
		return code, flag.ErrHelp
	case code == ExitOK:
		return code, err
	case code == ExitUsage:
		fmt.Fprintf(stderr, "%s: %s\n", name, p.displayLines(err.Error()))
	default:
		fmt.Fprintf(stderr, "%s: error: %s\n", name, p.displayLines(err.Error()))
	}
	return code, err
}

// displayLines makes a multi-line error message safe for the terminal:
// each line through Display, the line breaks kept, and every line after
// the first indented (by two spaces unless it is already), so that no
// continuation line can pass for a line of its own.
func (p *Program) displayLines(msg string) string {
	lines := strings.Split(msg, "\n")
	for i, l := range lines {
		l = p.Display(l)
		if i > 0 && !strings.HasPrefix(l, " ") {
			l = "  " + l
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

// isHelpFlag reports whether arg asks the root for its help.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "--help" || strings.HasPrefix(arg, "--help=") || strings.HasPrefix(arg, "-h=")
}

// isCompletion reports whether c is the completion command, one of its
// shells, or cobra's hidden command that answers the shell's requests.
func isCompletion(c *cobra.Command) bool {
	for ; c != nil; c = c.Parent() {
		switch c.Name() {
		case "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
			return true
		}
	}
	return false
}

// unknownCommand is the usage error for a first argument that names no
// command, with the nearest command names when there are any.
func (p *Program) unknownCommand(root *cobra.Command, name string) error {
	if strings.HasPrefix(name, "-") {
		return Usagef("want a command before %s; run '%s --help' for the commands", name, p.Name)
	}
	return Usagef("unknown command %q%s; run '%s --help' for the commands", name, nearCommands(root, name), p.Name)
}

// tuningAids are the environment variables (after NAME_) that record a
// command's run for tuning: a pprof CPU profile, and a runtime execution
// trace (it shows goroutines waiting for a P while others block in writes).
var tuningAids = []struct {
	env   string
	start func(io.Writer) error
	stop  func()
}{
	{"CPUPROFILE", pprof.StartCPUProfile, pprof.StopCPUProfile},
	{"TRACE", trace.Start, trace.Stop},
}

// startRecording creates path and starts a recorder (start) writing to it
// until the returned function is called.
func startRecording(path string, start func(io.Writer) error, stop func()) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { stop(); f.Close() }, nil
}
