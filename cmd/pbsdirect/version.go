package main

import (
	flag "github.com/spf13/pflag"

	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// versionInfo is what 'version' prints.
type versionInfo struct {
	Version   string `json:"version"`            // -ldflags version, else the module version ("(devel)" in a source tree)
	Revision  string `json:"revision,omitempty"` // VCS commit, when the build recorded it
	Time      string `json:"vcs-time,omitempty"` // commit time, RFC 3339
	Modified  bool   `json:"vcs-modified,omitempty"`
	GoVersion string `json:"go"`
	Platform  string `json:"platform"` // GOOS/GOARCH
}

// buildVersion returns the version: the one set with -ldflags, else what
// the build information says (module version, VCS revision and time, Go
// version), as 'go install …@version' and 'go build' in a checkout record it.
func buildVersion() versionInfo {
	v := versionInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if v.Version == "" {
			v.Version = "unknown"
		}
		return v
	}
	if v.Version == "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	return v
}

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
