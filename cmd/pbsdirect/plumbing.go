package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
)

// The commands' short names for the command layer's machinery (package
// cli): exit codes, usage errors, output formats and JSON results.

const (
	exitOK      = cli.ExitOK
	exitData    = cli.ExitData
	exitUsage   = cli.ExitUsage
	exitOutside = cli.ExitOutside

	formatText = cli.FormatText
)

// usagef is cli.Usagef: a usage error (exit 2).
func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

// usageOf is cli.UsageOf: err as a usage mistake (exit 2).
func usageOf(err error) error { return cli.UsageOf(err) }

// interrupted is cli.Interrupted: the signal that stopped ctx in place of err.
func interrupted(ctx context.Context, err error) error { return cli.Interrupted(ctx, err) }

// writeJSON is cli.WriteJSON: v as the command's JSON result.
func writeJSON(w io.Writer, v any) error { return cli.WriteJSON(w, v) }

// outputJSON is cli.IsJSON: whether w is run's stdout in a JSON format.
func outputJSON(w io.Writer) bool { return cli.IsJSON(w) }

// textOnly is cli.TextOnly: w carries the command's own text, no JSON.
func textOnly(w io.Writer) { cli.TextOnly(w) }

// checkOutputFormat is cli.CheckFormat: an unknown format is a usage error.
func checkOutputFormat(f string) error { return cli.CheckFormat(f) }

// registerOutputFormat is cli.RegisterFormat: adds --output-format.
func registerOutputFormat(fs *flag.FlagSet, p *string) { cli.RegisterFormat(fs, p) }

// manDefault is cli.ManDefault: flag name's default as the man pages say it.
func manDefault(fs *flag.FlagSet, name, def, about string) { cli.ManDefault(fs, name, def, about) }

// completeNothing is cli.CompleteNothing, for commands that take no argument.
func completeNothing(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return cli.CompleteNothing(c, args, toComplete)
}
