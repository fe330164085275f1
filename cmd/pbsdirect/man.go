package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/fsutil/outfile"
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
			return usagef("%s: not a directory (create it first)", dir)
		}
		var st runState
		root := newRoot(ctx, &output{w: io.Discard, format: formatText}, io.Discard, &st)
		// No title: each page gets its command's (PBSDIRECT-RESTORE).
		header := doc.GenManHeader{
			Section: "1",
			Source:  "pbsdirect " + buildVersion().Version,
			Manual:  "pbsdirect manual",
		}
		n := 0
		var walk func(c *cobra.Command) error
		walk = func(c *cobra.Command) error {
			c.Short = manEscape(c.Short)
			c.Long = manMarkdown(c.Long)
			c.Flags().VisitAll(func(f *flag.Flag) {
				if d, ok := f.Annotations[manDefaultKey]; ok {
					// Not this machine's value: what the default is.
					f.DefValue = d[0]
					if d[1] != "" {
						f.Usage += " (default: " + d[1] + ")"
					}
				}
				f.Usage = manEscape(f.Usage)
			})
			var page bytes.Buffer
			h := header
			if err := doc.GenMan(c, &h, &page); err != nil {
				return err
			}
			if err := writeManPage(dir, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1", page.Bytes()); err != nil {
				return err
			}
			n++
			for _, sc := range c.Commands() {
				if sc.IsAvailableCommand() && !sc.IsAdditionalHelpTopicCommand() {
					if err := walk(sc); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if err := walk(root); err != nil {
			return err
		}
		if outputJSON(stdout) {
			return writeJSON(stdout, map[string]any{"directory": dir, "pages": n})
		}
		fmt.Fprintf(stdout, "wrote %d man pages into %s (man -l %s/pbsdirect.1)\n", n, dir, dir)
		return nil
	}
}

// writeManPage writes page as name in dir, replacing an older page by a
// rename (outfile.Replace: never through a link, a device or a FIFO; a
// full disk leaves the older page whole). A file system that refuses it
// (permission, no space, read-only) lies outside the data (outfile.ErrWrite).
func writeManPage(dir, name string, page []byte) error {
	return outfile.Replace(filepath.Join(dir, name), page)
}

// manMarkdown turns a help text into the Markdown that cobra's man page
// generator renders: lines indented by two spaces or a tab (tables,
// commands to type) stay as they are, in a preformatted block; in the
// other lines the characters Markdown would take as markup are escaped.
func manMarkdown(text string) string {
	var b strings.Builder
	pre := false
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		if strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "\t") {
			if !pre && i > 0 {
				b.WriteByte('\n') // a preformatted block starts after a blank line
			}
			pre = true
			b.WriteString("    " + line)
			continue
		}
		if pre && line != "" {
			b.WriteByte('\n')
		}
		pre = false
		b.WriteString(manEscape(line))
	}
	return b.String()
}

// manEscape backslash-escapes the characters Markdown takes as markup in s.
func manEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "`", "\\`", "_", `\_`, "*", `\*`, "<", `\<`, ">", `\>`, "[", `\[`, "]", `\]`).Replace(s)
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

// manDefaultKey is the flag annotation that says what a flag's default is
// where the value --help shows depends on the machine or the environment
// (see manDefault).
const manDefaultKey = "pbsdirect-man-default"

// manDefault records for the man pages what the default of flag name of fs
// is when the value --help shows is this machine's (the host name, the
// number of cores, an environment variable): def replaces that value, and
// about, when not empty, is added to the usage as "(default: about)".
func manDefault(fs *flag.FlagSet, name, def, about string) {
	fs.SetAnnotation(name, manDefaultKey, []string{def, about})
}
