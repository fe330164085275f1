package cli

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	flag "github.com/spf13/pflag"

	"github.com/pbsdirect/pbsdirect/fsutil/outfile"
)

// WriteManPages writes a man page (section 1) for the program and for each
// of its commands into the directory dir (NAME.1, NAME-restore.1,
// NAME-key-create.1, …), made from the same descriptions, flags and
// examples as --help; source is the pages' source line ("NAME v1.2"). It
// returns the number of pages written, or the first error: cobra's, or
// writing a page (outfile.ErrWrite when the file system refuses it).
func (p *Program) WriteManPages(ctx context.Context, dir, source string) (int, error) {
	var st runState
	root := p.newRoot(ctx, NewOutput(io.Discard, FormatText), io.Discard, &st)
	// No title: each page gets its command's (NAME-RESTORE).
	header := doc.GenManHeader{
		Section: "1",
		Source:  source,
		Manual:  p.Name + " manual",
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
		// Replaced by a rename (outfile.Replace: never through a link, a
		// device or a FIFO; a full disk leaves the older page whole).
		if err := outfile.Replace(filepath.Join(dir, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"), page.Bytes()); err != nil {
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
	err := walk(root)
	return n, err
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

// manDefaultKey is the flag annotation that says what a flag's default is
// where the value --help shows depends on the machine or the environment
// (see ManDefault).
const manDefaultKey = "pbsdirect-man-default"

// ManDefault records for the man pages what the default of flag name of fs
// is when the value --help shows is this machine's (the host name, the
// number of cores, an environment variable): def replaces that value, and
// about, when not empty, is added to the usage as "(default: about)".
func ManDefault(fs *flag.FlagSet, name, def, about string) {
	fs.SetAnnotation(name, manDefaultKey, []string{def, about})
}

// RegisterFormat adds --output-format to fs, storing into p, its default
// from PROXMOX_OUTPUT_FORMAT (text in the man pages).
func RegisterFormat(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "output-format", DefaultFormat(), "output format: text, json (one line) or json-pretty (env PROXMOX_OUTPUT_FORMAT)")
	ManDefault(fs, "output-format", FormatText, "")
}
