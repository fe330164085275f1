package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"
)

// describeCompletion gives cobra's completion command (c) and its shells
// the program's wording: what each script completes (CompletionLong) and
// where to install it, in plain text (cobra's own is Markdown), and makes a
// missing or unknown shell a usage error (cobra would print the help and
// exit 0).
func (p *Program) describeCompletion(c *cobra.Command) {
	c.Use = "completion SHELL"
	c.Short = "print a shell completion script: bash, zsh, fish or powershell"
	c.Long = p.CompletionLong
	c.DisableFlagsInUseLine = true
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return Usagef("want a shell: bash, zsh, fish or powershell")
		}
		return unknownSubcommand(c, args[0])
	}
	install := map[string]string{
		"bash": `Needs the bash-completion package. For this shell:
  source <(NAME completion bash)
For every new shell:
  NAME completion bash > /etc/bash_completion.d/NAME
  (or ~/.local/share/bash-completion/completions/NAME for one user)`,
		"zsh": `For every new shell (with compinit: autoload -U compinit; compinit):
  NAME completion zsh > "${fpath[1]}/_NAME"
For this shell:
  source <(NAME completion zsh)`,
		"fish": `For this shell:
  NAME completion fish | source
For every new shell:
  NAME completion fish > ~/.config/fish/completions/NAME.fish`,
		"powershell": `For this shell:
  NAME completion powershell | Out-String | Invoke-Expression
For every new shell, add that line to your PowerShell profile.`,
	}
	for _, sc := range c.Commands() {
		if how, ok := install[sc.Name()]; ok {
			sc.Short = "print the completion script for " + sc.Name()
			sc.Long = "Print the completion script for " + sc.Name() + " on standard output.\n\n" + strings.ReplaceAll(how, "NAME", p.Name)
			args := sc.Args
			sc.Args = func(c *cobra.Command, a []string) error {
				if err := args(c, a); err != nil {
					return UsageOf(err)
				}
				return nil
			}
		}
	}
}

// registerFlagCompletions offers the program's FlagValues for those of c's
// flags that take one of a fixed set, and its CompleteFlags.
func (p *Program) registerFlagCompletions(c *cobra.Command) {
	c.Flags().VisitAll(func(f *flag.Flag) {
		values, ok := p.FlagValues[f.Name]
		if !ok {
			return
		}
		c.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
	})
	p.CompleteFlags(c)
}

// CompleteNothing is the completer of commands that take no argument.
func CompleteNothing(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// Bounded returns what work returns within d (under ctx): the shell waits
// on a completion request, and one that reads a slow store is worse than
// none. Past d it returns ctx's error (context.DeadlineExceeded) without
// waiting for work, whose context is then done.
func Bounded[T any](ctx context.Context, d time.Duration, work func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := work(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// CopyFlags sets the flags of dst that src has and were given on the
// command line to src's values.
func CopyFlags(dst, src *flag.FlagSet) {
	src.Visit(func(f *flag.Flag) {
		d := dst.Lookup(f.Name)
		if d == nil {
			return
		}
		if sv, ok := f.Value.(flag.SliceValue); ok {
			if dv, ok := d.Value.(flag.SliceValue); ok {
				dv.Replace(sv.GetSlice())
			}
			return
		}
		d.Value.Set(f.Value.String())
	})
}
