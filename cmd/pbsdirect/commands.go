package main

import (
	"context"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/pbsdirect/pbsdirect/chunkstore/s3store"
)

// commandFunc runs a command once its flags are parsed: args are the
// positional arguments, stdout is run's output (see output), stderr is for
// messages.
type commandFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// commandSpec is one command of pbsdirect's tree, declared in the file of
// the command: use is its usage line without "pbsdirect" ("restore [flags]
// SNAPSHOT ARCHIVE TARGET"; the first word is its name), short the one-line
// summary of the command list, long the description of --help and the man
// page (argument forms, environment), example its examples. A leaf has
// build, which declares the command's flags on fs and returns what runs
// it; a group (key, report) has sub. complete completes the positional
// arguments (nil: file names).
type commandSpec struct {
	use      string
	short    string
	long     string
	example  string
	build    func(fs *flag.FlagSet) commandFunc
	complete argCompleter
	sub      []commandSpec
}

// commandSpecs is the command tree below "pbsdirect", in the order help
// lists it (sorted by name).
func commandSpecs() []commandSpec {
	return []commandSpec{
		restoreCommand(), mountCommand(), serveNbdCommand(), verifyCommand(), drillCommand(),
		snapshotsCommand(), groupsCommand(), namespacesCommand(), backupCommand(),
		keyCommand(), reportCommand(), manCommand(), versionCommand(),
	}
}

// rootHelp is what 'pbsdirect --help' says besides the command list.
const rootHelp = `pbsdirect restores, verifies and writes Proxmox Backup Server archives directly
from a datastore directory or a bucket, with no PBS server.

SNAPSHOT is TYPE/ID/TIME, e.g. vm/100/2026-11-29T10:00:00Z, or TYPE/ID for
the latest one. ARCHIVE is drive-scsi0, drive-scsi0.img or drive-scsi0.img.fidx.
--store is a datastore directory, s3://bucket/prefix or gs://bucket/prefix.

Exit codes:
  0    success
  1    the data is damaged or missing, proven: read and failed a check, or
       definitively not there (a missing snapshot or chunk, a damaged chunk,
       a wrong key, a restore with damage under --on-missing/--on-corrupt
       zero): retrying will not help
  2    usage error, or a TARGET refused as named (exists without --force, a
       symbolic link, a directory or FIFO, a missing directory, a disk-image
       format, too small, inside the store); also a key file or source path
       that is not there, key create onto a file, no passphrase source and no
       terminal, backup --backup-time not after the group's last snapshot
  3    the run could not complete for a reason outside the data: store
       unreachable or not there (disk not mounted, no such bucket), credentials
       refused, throttled past --retry-for, target I/O error, permission, no
       space, target busy or in use, snapshot exists or group locked (backup),
       and any error that proves nothing about the data: retrying later can help
  130  interrupted by SIGINT (Ctrl-C); 143: by SIGTERM (mount and serve-nbd
       exit 0: that is how they stop)
JSON reports (--output-format json) carry the same code as "exit-code".

Shell completion: pbsdirect completion SHELL --help. Man pages: pbsdirect man DIR.`

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
func helpWidth(stdout *output) int {
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
// (run's output) and stderr and stop when ctx ends. Parse errors are usage
// errors (exit 2); nothing is printed by cobra itself but help and
// completion scripts.
func newRoot(ctx context.Context, stdout *output, stderr io.Writer, st *runState) *cobra.Command {
	root := &cobra.Command{
		Use:                   "pbsdirect COMMAND",
		Short:                 "restore, verify and write Proxmox Backup Server archives without a PBS server",
		Long:                  rootHelp,
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
		return &usageError{msg: msg, err: err}
	})
	root.SetHelpCommand(helpCommand(root))
	for _, spec := range commandSpecs() {
		root.AddCommand(newCommand(ctx, spec, "", stdout, stderr))
	}
	// Added now rather than when cobra executes, so that runCommand finds
	// them and help lists them.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			describeCompletion(c)
		}
	}
	return root
}

// newCommand builds the cobra command of spec; parent is the path of its
// group ("key") or "" below the root.
func newCommand(ctx context.Context, spec commandSpec, parent string, stdout *output, stderr io.Writer) *cobra.Command {
	c := &cobra.Command{Use: spec.use, Short: spec.short, Long: spec.long, Example: spec.example}
	path := c.Name()
	if parent != "" {
		path = parent + " " + path
	}
	c.Flags().SortFlags = false
	if spec.sub != nil {
		c.DisableFlagsInUseLine = true
		var names []string
		for _, s := range spec.sub {
			sc := newCommand(ctx, s, path, stdout, stderr)
			names = append(names, sc.Name())
			c.AddCommand(sc)
		}
		// "pbsdirect key" alone or "pbsdirect key nosuch": a usage error
		// (cobra would print the help and exit 0).
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("want a %s command: %s", path, joinOr(names))
			}
			return unknownSubcommand(c, args[0])
		}
		c.ValidArgsFunction = completeNothing
		return c
	}
	run := spec.build(c.Flags())
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(_ *cobra.Command, args []string) error { return run(ctx, args, stdout, stderr) }
	c.ValidArgsFunction = spec.complete
	registerFlagCompletions(c)
	return c
}

// helpCommand is 'pbsdirect help [COMMAND...]': the help of a command, as
// its --help; an unknown command is a usage error.
func helpCommand(root *cobra.Command) *cobra.Command {
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
				return usagef("no help for %q: unknown command%s; run 'pbsdirect --help' for the commands", joinWords(args), nearCommands(c, word))
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
		return usagef("unknown %s command %q%s", c.Name(), word, near)
	}
	return usagef("unknown %s command %q (want %s)", c.Name(), word, joinOr(names))
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
// Only the bare flag directly followed by one of its values counts, before
// "--".
func checkBareValue(c *cobra.Command, args []string) error {
	for i, a := range args {
		if a == "--" {
			return nil
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok || i+1 == len(args) {
			continue
		}
		f := c.Flags().Lookup(name)
		if f == nil || f.NoOptDefVal == "" || f.Value.Type() == "bool" || !isFlagValue(name, args[i+1]) {
			continue
		}
		v := args[i+1]
		return usagef("--%s takes its value after '=' (--%s=%s): alone it means --%s=%s, and %q would be left as an argument",
			name, name, v, name, f.NoOptDefVal, v)
	}
	return nil
}

// isFlagValue reports whether v is a value flag name takes: one of
// flagValues, or for --s3-path-style any spelling its parser accepts (off,
// no, 0, FALSE, …).
func isFlagValue(name, v string) bool {
	if name == "s3-path-style" {
		_, err := s3store.ParsePathStyle(v)
		return err == nil
	}
	return slices.Contains(flagValues[name], v)
}

// describeCompletion gives cobra's completion command (c) and its shells
// pbsdirect's wording: what each script completes and where to install it,
// in plain text (cobra's own is Markdown), and makes a missing or unknown
// shell a usage error (cobra would print the help and exit 0).
func describeCompletion(c *cobra.Command) {
	c.Use = "completion SHELL"
	c.Short = "print a shell completion script: bash, zsh, fish or powershell"
	c.Long = `Print the completion script of a shell on standard output. It completes
commands, flags, the values of flags such as --output-format and --progress
and, read from --store (or PBSDIRECT_STORE) within 5 s, the namespaces (--ns),
groups and snapshots (SNAPSHOT) and a snapshot's archives (ARCHIVE).
Run 'pbsdirect completion SHELL --help' for where to install it.`
	c.DisableFlagsInUseLine = true
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("want a shell: bash, zsh, fish or powershell")
		}
		return unknownSubcommand(c, args[0])
	}
	install := map[string]string{
		"bash": `Needs the bash-completion package. For this shell:
  source <(pbsdirect completion bash)
For every new shell:
  pbsdirect completion bash > /etc/bash_completion.d/pbsdirect
  (or ~/.local/share/bash-completion/completions/pbsdirect for one user)`,
		"zsh": `For every new shell (with compinit: autoload -U compinit; compinit):
  pbsdirect completion zsh > "${fpath[1]}/_pbsdirect"
For this shell:
  source <(pbsdirect completion zsh)`,
		"fish": `For this shell:
  pbsdirect completion fish | source
For every new shell:
  pbsdirect completion fish > ~/.config/fish/completions/pbsdirect.fish`,
		"powershell": `For this shell:
  pbsdirect completion powershell | Out-String | Invoke-Expression
For every new shell, add that line to your PowerShell profile.`,
	}
	for _, sc := range c.Commands() {
		if how, ok := install[sc.Name()]; ok {
			sc.Short = "print the completion script for " + sc.Name()
			sc.Long = "Print the completion script for " + sc.Name() + " on standard output.\n\n" + how
			args := sc.Args
			sc.Args = func(c *cobra.Command, a []string) error {
				if err := args(c, a); err != nil {
					return usageOf(err)
				}
				return nil
			}
		}
	}
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
