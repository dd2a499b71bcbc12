// Package buildinfo says which build of stampede is running, from what the
// Go toolchain stamped into the binary: the module version (a release tag,
// or a pseudo-version made from the commit when built inside a git
// checkout), the commit and whether the tree had uncommitted changes.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// described is `git describe --tags --always --dirty` of the tree the
// binary was built from, set by the Makefile's build
// (-ldflags -X .../buildinfo.described=...): the toolchain's own stamp is
// missing where builds run with -buildvcs=false.
var described string

// Info is one binary's build.
type Info struct {
	// Version is the module's version: "v1.2.3", a pseudo-version
	// "v0.0.0-20261201215900-5a5b454abcde", or "(devel)" when the
	// toolchain stamped none (go run, a build outside a checkout).
	Version string
	// Revision is the commit the binary was built from; "" when unknown.
	Revision string
	// Modified is set when the tree had uncommitted changes.
	Modified bool
	// Go is the toolchain, e.g. "go1.26.8".
	Go string
}

// Read returns this binary's build.
func Read() Info {
	info := Info{Version: "(devel)", Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info = fromBuildInfo(bi)
	}
	if described != "" {
		info.Version, info.Revision = described, ""
		info.Modified = strings.HasSuffix(described, "-dirty")
	}
	return info
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	info := Info{Version: bi.Main.Version, Go: bi.GoVersion}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the version line's text, in the style of `git describe`:
// the version, then the short commit when the version does not carry it,
// "+dirty" for a modified tree, and the toolchain and platform, e.g.
// "v0.0.0-20261201215900-5a5b454abcde (go1.26.8 linux/amd64)".
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	short := i.Revision
	if len(short) > 12 {
		short = short[:12]
	}
	if short != "" && !strings.Contains(i.Version, short) {
		b.WriteString("-g" + short)
	}
	if i.Modified && !strings.Contains(i.Version, "dirty") {
		b.WriteString("+dirty")
	}
	b.WriteString(" (" + i.Go + " " + runtime.GOOS + "/" + runtime.GOARCH + ")")
	return b.String()
}
