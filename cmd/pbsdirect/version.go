package main

import (
	flag "github.com/spf13/pflag"

	"context"
	"fmt"
	"io"

	"github.com/pbsdirect/pbsdirect/cmd/internal/cli"
)

// buildVersion returns the version of this build: the one set with
// -ldflags (version), else the build information's (cli.BuildVersion).
func buildVersion() cli.VersionInfo { return cli.BuildVersion(version) }

func cmdVersion(fs *flag.FlagSet) commandFunc {
	format := new(string)
	registerOutputFormat(fs, format)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if fs.NArg() != 0 {
			return usagef("version takes no arguments")
		}
		if err := checkOutputFormat(*format); err != nil {
			return err
		}
		v := buildVersion()
		if outputJSON(stdout) {
			return writeJSON(stdout, v)
		}
		fmt.Fprintf(stdout, "pbsdirect %s\n", v.Version)
		if v.Revision != "" {
			mod := ""
			if v.Modified {
				mod = " (modified)"
			}
			fmt.Fprintf(stdout, "revision: %s%s %s\n", v.Revision, mod, v.Time)
		}
		fmt.Fprintf(stdout, "go:       %s %s\n", v.GoVersion, v.Platform)
		return nil
	}
}

// versionCommand is 'pbsdirect version'.
func versionCommand() commandSpec {
	return commandSpec{
		use:      "version [flags]",
		short:    "print the version, VCS revision and Go version of this build",
		long:     `Print the version, VCS revision and Go version of this build.`,
		example:  `  pbsdirect version --output-format json`,
		build:    cmdVersion,
		complete: completeNothing,
	}
}
