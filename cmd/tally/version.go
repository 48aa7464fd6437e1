package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/tally-dev/tally/store"
)

// version and commit are stamped at build time (Dockerfile, scripts/build):
// -ldflags "-X main.version=v1.2.0 -X main.commit=<sha>". A plain go build
// says "dev" and takes the commit Go recorded from the checkout, if any.
var (
	version = "dev"
	commit  = ""
)

// versionText is what `tally version` and `tally --version` print: what an
// operator quotes in a bug report.
func versionText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tally %s\n", version)
	fmt.Fprintf(&b, "commit: %s\n", buildCommit())
	dv, err := store.DuckDBVersion()
	if err != nil {
		dv = "unknown (" + err.Error() + ")"
	}
	fmt.Fprintf(&b, "duckdb: %s\n", dv)
	fmt.Fprintf(&b, "go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return b.String()
}

func buildCommit() string {
	if commit != "" {
		return commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "unknown"
	}
	if modified == "true" {
		rev += " (modified)"
	}
	return rev
}
