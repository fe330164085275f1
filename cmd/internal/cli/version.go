package cli

import (
	"runtime"
	"runtime/debug"
)

// VersionInfo is what a program's version command prints.
type VersionInfo struct {
	Version   string `json:"version"`            // -ldflags version, else the module version ("(devel)" in a source tree)
	Revision  string `json:"revision,omitempty"` // VCS commit, when the build recorded it
	Time      string `json:"vcs-time,omitempty"` // commit time, RFC 3339
	Modified  bool   `json:"vcs-modified,omitempty"`
	GoVersion string `json:"go"`
	Platform  string `json:"platform"` // GOOS/GOARCH
}

// BuildVersion returns the version: linked (set with -ldflags) when not
// empty, else what the build information says (module version, VCS
// revision and time, Go version), as 'go install …@version' and 'go build'
// in a checkout record it.
func BuildVersion(linked string) VersionInfo {
	v := VersionInfo{Version: linked, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
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
