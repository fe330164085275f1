package cli

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"
	"golang.org/x/term"
)

// Func runs a command once its flags are parsed: args are the positional
// arguments, stdout is Run's Output, stderr is for messages.
type Func func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// ArgCompleter completes a command's positional arguments for the shell
// (cobra's ValidArgsFunction): args are the arguments before the one being
// completed, toComplete its beginning.
type ArgCompleter = func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective)

// Spec is one command of a program's tree: Use is its usage line without
// the program's name ("restore [flags] SNAPSHOT ARCHIVE TARGET"; the first
// word is its name), Short the one-line summary of the command list, Long
// the description of --help and the man page, Example its examples. A leaf
// has Build, which declares the command's flags on fs and returns what runs
// it; a group has Sub. Complete completes the positional arguments (nil:
// file names).
type Spec struct {
	Use      string
	Short    string
	Long     string
	Example  string
	Build    func(fs *flag.FlagSet) Func
	Complete ArgCompleter
	Sub      []Spec
}

// helpTemplate is the layout of every command's --help (cobra template):
// usage line, description, subcommands, flags, examples.
const helpTemplate = `Usage: {{.UseLine}}
{{with .Long}}
{{. | trimTrailingWhitespaces}}
{{end}}{{if .HasAvailableSubCommands}}
Commands:{{range .Commands}}{{if .IsAvailableCommand}}
  {{rpad .Name .NamePadding}}  {{.Short}}{{end}}{{end}}
{{end}}{{if .HasAvailableLocalFlags}}
Flags:
{{.LocalFlags.FlagUsagesWrapped WIDTH | trimTrailingWhitespaces}}
{{end}}{{if .HasExample}}
Examples:
{{.Example}}
{{end}}{{if .HasAvailableSubCommands}}
Run '{{.CommandPath}} COMMAND --help' for a command's flags and examples.
{{end}}`

// helpWidth is the width help text is wrapped to: the terminal's when
// stdout is one (60 to 160 columns), else 100.
func helpWidth(stdout *Output) int {
	if f, ok := stdout.w.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil {
			return min(max(w, 60), 160)
		}
	}
	return 100
}

// runState is what one run learns from the command tree as it executes.
type runState struct {
	help bool // a help text was printed (--help, help COMMAND)
}

// newRoot builds the command tree for one run: commands write to stdout
// (Run's output) and stderr and stop when ctx ends. Parse errors are usage
// errors (exit 2); nothing is printed by cobra itself but help and
// completion scripts.
func (p *Program) newRoot(ctx context.Context, stdout *Output, stderr io.Writer, st *runState) *cobra.Command {
	root := &cobra.Command{
		Use:                   p.Name + " COMMAND",
		Short:                 p.Short,
		Long:                  p.Long,
		SilenceErrors:         true,
		SilenceUsage:          true,
		DisableFlagsInUseLine: true,
		DisableAutoGenTag:     true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	tmpl := strings.Replace(helpTemplate, "WIDTH", strconv.Itoa(helpWidth(stdout)), 1)
	root.SetHelpTemplate(tmpl)
	root.SetUsageTemplate(tmpl)
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		st.help = true
		help(c, args)
	})
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if help, _ := c.Flags().GetBool("help"); help {
			// --help before the mistake: the help, as asked.
			return c.Help()
		}
		msg := err.Error()
		if strings.ContainsFunc(msg, unicode.IsControl) {
			msg = strconv.Quote(msg) // a flag from the command line, not for the terminal
		}
		if near := nearFlag(c.Flags(), err); near != "" {
			msg += " (did you mean --" + near + "?)"
		}
		return &UsageError{msg: msg, err: err}
	})
	root.SetHelpCommand(p.helpCommand(root))
	for _, spec := range p.Commands() {
		root.AddCommand(p.newCommand(ctx, spec, "", stdout, stderr))
	}
	// Added now rather than when cobra executes, so that runCommand finds
	// them and help lists them.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			p.describeCompletion(c)
		}
	}
	return root
}

// newCommand builds the cobra command of spec; parent is the path of its
// group ("key") or "" below the root.
func (p *Program) newCommand(ctx context.Context, spec Spec, parent string, stdout *Output, stderr io.Writer) *cobra.Command {
	c := &cobra.Command{Use: spec.Use, Short: spec.Short, Long: spec.Long, Example: spec.Example}
	path := c.Name()
	if parent != "" {
		path = parent + " " + path
	}
	c.Flags().SortFlags = false
	if spec.Sub != nil {
		c.DisableFlagsInUseLine = true
		var names []string
		for _, s := range spec.Sub {
			sc := p.newCommand(ctx, s, path, stdout, stderr)
			names = append(names, sc.Name())
			c.AddCommand(sc)
		}
		// "NAME key" alone or "NAME key nosuch": a usage error (cobra
		// would print the help and exit 0).
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return Usagef("want a %s command: %s", path, joinOr(names))
			}
			return unknownSubcommand(c, args[0])
		}
		c.ValidArgsFunction = CompleteNothing
		return c
	}
	run := spec.Build(c.Flags())
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(_ *cobra.Command, args []string) error { return run(ctx, args, stdout, stderr) }
	c.ValidArgsFunction = spec.Complete
	p.registerFlagCompletions(c)
	return c
}

// helpCommand is 'NAME help [COMMAND...]': the help of a command, as its
// --help; an unknown command is a usage error.
func (p *Program) helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND...]",
		Short: "help about any command",
		Args:  cobra.ArbitraryArgs,
		// Every word is a command name or ignored: "help restore --store x"
		// is restore's help.
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, words []string) error {
			var args []string
			for _, w := range words {
				if !strings.HasPrefix(w, "-") {
					args = append(args, w)
				}
			}
			c, rest, err := root.Find(args)
			// Words after a command that has no subcommands (its
			// arguments, flags) do not matter for its help.
			if err != nil || len(rest) != 0 && (c == root || c.HasAvailableSubCommands()) {
				if c == nil || err != nil {
					c = root
				}
				word := args[0]
				if err == nil {
					word = rest[0]
				}
				return Usagef("no help for %q: unknown command%s; run '%s --help' for the commands", strings.Join(args, " "), nearCommands(c, word), p.Name)
			}
			c.InitDefaultHelpFlag() // listed as in COMMAND --help
			return c.Help()
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			parent, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, sc := range parent.Commands() {
				if sc.IsAvailableCommand() {
					names = append(names, cobra.CompletionWithDesc(sc.Name(), sc.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}

// unknownSubcommand is the usage error for a word that names no command of
// group c (key, report, completion), with the nearest names when there are
// any.
func unknownSubcommand(c *cobra.Command, word string) error {
	var names []string
	for _, sc := range c.Commands() {
		if sc.IsAvailableCommand() {
			names = append(names, sc.Name())
		}
	}
	if near := nearCommands(c, word); near != "" {
		return Usagef("unknown %s command %q%s", c.Name(), word, near)
	}
	return Usagef("unknown %s command %q (want %s)", c.Name(), word, joinOr(names))
}

// nearCommands says which subcommands of c word was probably meant to be,
// as " (did you mean a or b?)", or "" when none is near (or word is empty).
func nearCommands(c *cobra.Command, word string) string {
	if word == "" {
		return ""
	}
	if near := c.SuggestionsFor(word); len(near) > 0 {
		return " (did you mean " + joinOr(near) + "?)"
	}
	return ""
}

// checkBareValue refuses, in the command line args of command c, a value
// given after a space to a flag whose bare form means something
// (--s3-path-style alone means --s3-path-style=true): pflag takes
// "--s3-path-style false" as true and a stray argument "false", which would
// otherwise be reported as a wrong argument count, or taken as a file name.
// Only the bare flag directly followed by one of its values (IsFlagValue)
// counts, before "--".
func (p *Program) checkBareValue(c *cobra.Command, args []string) error {
	for i, a := range args {
		if a == "--" {
			return nil
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok || i+1 == len(args) {
			continue
		}
		f := c.Flags().Lookup(name)
		if f == nil || f.NoOptDefVal == "" || f.Value.Type() == "bool" || !p.IsFlagValue(name, args[i+1]) {
			continue
		}
		v := args[i+1]
		return Usagef("--%s takes its value after '=' (--%s=%s): alone it means --%s=%s, and %q would be left as an argument",
			name, name, v, name, f.NoOptDefVal, v)
	}
	return nil
}

// nearFlag returns the name of the flag of fs that the unknown flag of
// pflag's error err was probably meant to be: a single-dash long flag
// (-store), a prefix (--stor) or one or two letters off (--stroe); "" when
// none is near.
func nearFlag(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	var given string
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		given = strings.TrimPrefix(msg, "unknown flag: --")
	case strings.HasPrefix(msg, "unknown shorthand flag: ") && strings.Contains(msg, " in -"):
		given = msg[strings.LastIndex(msg, " in -")+len(" in -"):]
	default:
		return ""
	}
	given, _, _ = strings.Cut(given, "=")
	if len(given) < 3 {
		return "" // too short to tell one flag from another
	}
	best, bestDist := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		d := editDistance(given, f.Name)
		if strings.HasPrefix(f.Name, given) && len(given) >= 3 {
			d = min(d, 1)
		}
		if d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
