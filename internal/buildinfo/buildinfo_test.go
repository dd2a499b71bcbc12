package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestString(t *testing.T) {
	platform := " (go1.26.8 " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	for _, c := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"release", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "5a5b454abcdef0123456"}}},
			"v1.2.0-g5a5b454abcde" + platform},
		{"pseudo-version carries the commit", debug.BuildInfo{GoVersion: "go1.26.8",
			Main:     debug.Module{Version: "v0.0.0-20261201215900-5a5b454abcde+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "5a5b454abcdef0123456"}, {Key: "vcs.modified", Value: "true"}}},
			"v0.0.0-20261201215900-5a5b454abcde+dirty" + platform},
		{"no stamp", debug.BuildInfo{GoVersion: "go1.26.8"}, "(devel)" + platform},
		{"devel, modified", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			"(devel)-gabc+dirty" + platform},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := fromBuildInfo(&c.bi).String(); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestReadNamesThisToolchain(t *testing.T) {
	if got := Read().Go; got != runtime.Version() {
		t.Errorf("Go = %q, want %q", got, runtime.Version())
	}
}

func TestDescribedWins(t *testing.T) {
	saved := described
	defer func() { described = saved }()
	described = "v0.3.0-4-g5a5b454-dirty"
	i := Read()
	if i.Version != described || !i.Modified || i.Revision != "" {
		t.Fatalf("Read() = %+v, want the described version, modified", i)
	}
	if want := "v0.3.0-4-g5a5b454-dirty (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"; i.String() != want {
		t.Errorf("String() = %q, want %q", i.String(), want)
	}
}
