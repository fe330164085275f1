package main

import (
	"context"
	"fmt"
	"io"
	"os"

	flag "github.com/spf13/pflag"
)

// cmdMan is 'pbsdirect man DIR': it writes a man page (section 1) for
// pbsdirect and for each of its commands into DIR (pbsdirect.1,
// pbsdirect-restore.1, pbsdirect-key-create.1, …), made from the same
// descriptions, flags and examples as --help. DIR must exist.
func cmdMan(fs *flag.FlagSet) commandFunc {
	format := new(string)
	registerOutputFormat(fs, format)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 1 {
			return usagef("want DIR, the directory to write the man pages into")
		}
		dir := args[0]
		if err := checkOutputFormat(*format); err != nil {
			return err
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return usagef("%s: %s (create it first)", dir, dirArgProblem(err, err == nil && st.IsDir()))
		}
		n, err := program().WriteManPages(ctx, dir, "pbsdirect "+buildVersion().Version)
		if err != nil {
			return err
		}
		if outputJSON(stdout) {
			return writeJSON(stdout, map[string]any{"directory": dir, "pages": n})
		}
		fmt.Fprintf(stdout, "wrote %d man pages into %s (man -l %s/pbsdirect.1)\n", n, dir, dir)
		return nil
	}
}

// manCommand is 'pbsdirect man'.
func manCommand() commandSpec {
	return commandSpec{
		use:   "man DIR",
		short: "write the man pages of every command into DIR (section 1)",
		long: `Write a man page (section 1) for pbsdirect and for each of its commands
into DIR, which must exist: pbsdirect.1, pbsdirect-restore.1,
pbsdirect-key-create.1, … They are made from the same descriptions, flags and
examples as --help. 'make install' installs them with the binary.`,
		example: `  pbsdirect man /usr/local/share/man/man1 && man pbsdirect-restore
  mkdir -p man && pbsdirect man man && man -l man/pbsdirect.1`,
		build: cmdMan,
	}
}
