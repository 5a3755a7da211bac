// Package version holds the build's version, stamped at link time with
// -ldflags "-X github.com/fleetfit/fleetfit/pkg/version.gitVersion=...".
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

var (
	gitVersion = "v0.0.0-dev"
	gitCommit  = ""
)

// Info describes the running binary.
type Info struct {
	GitVersion string `json:"gitVersion"`
	GitCommit  string `json:"gitCommit,omitempty"`
	GoVersion  string `json:"goVersion"`
	Platform   string `json:"platform"`
}

// Get returns the version of the running binary. Without a stamped commit it
// falls back to the VCS revision recorded by the Go toolchain, when there is one.
func Get() Info {
	commit := gitCommit
	if commit == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					commit = s.Value
				}
			}
		}
	}
	return Info{
		GitVersion: gitVersion,
		GitCommit:  commit,
		GoVersion:  runtime.Version(),
		Platform:   fmt.Sprintf("%s/%s", runtime.GOOS, runtime.GOARCH),
	}
}

// String is the short form used in user agents and reports.
func (i Info) String() string { return i.GitVersion }
