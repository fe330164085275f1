package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	flag "github.com/spf13/pflag"
)

// cmdMan is 'pbsdirect man DIR': it writes a man page (section 1) for
// pbsdirect and for each of its commands into DIR (pbsdirect.1,
// pbsdirect-restore.1, pbsdirect-key-create.1, …), made from the same
// descriptions, flags and examples as --help. DIR must exist.
func cmdMan(fs *flag.FlagSet) commandFunc {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if len(args) != 1 {
			return usagef("want DIR, the directory to write the man pages into")
		}
		dir := args[0]
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return usagef("%s: not a directory (create it first)", dir)
		}
		var st runState
		root := newRoot(ctx, &output{w: io.Discard, format: formatText}, io.Discard, &st)
		header := &doc.GenManHeader{
			Title:   "PBSDIRECT",
			Section: "1",
			Source:  "pbsdirect " + buildVersion().Version,
			Manual:  "pbsdirect manual",
		}
		n := 0
		var walk func(c *cobra.Command)
		walk = func(c *cobra.Command) {
			if c.IsAvailableCommand() || c == root {
				n++
			}
			for _, sc := range c.Commands() {
				walk(sc)
			}
		}
		walk(root)
		if err := doc.GenManTree(root, header, dir); err != nil {
			return fmt.Errorf("writing man pages into %s: %w", dir, err)
		}
		if outputJSON(stdout) {
			return writeJSON(stdout, map[string]any{"directory": dir, "pages": n})
		}
		fmt.Fprintf(stdout, "wrote %d man pages into %s (man -l %s/pbsdirect.1)\n", n, dir, dir)
		return nil
	}
}
