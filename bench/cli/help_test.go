package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/flags")

// Golden help texts; rewrite them with `go test ./bench/cli -run TestHelpGolden -update`.
func TestHelpGolden(t *testing.T) {
	tests := []struct {
		keyword, file string
	}{
		{"", "help.golden"},
		{"sampling parameters", "help_sampling.golden"},
		{"RPS", "help_rps.golden"},
		{"no_such_option", "help_nomatch.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := renderHelp(tt.keyword, 78, testBackends)
			path := filepath.Join("testdata", "flags", tt.file)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("help for %q differs from %s (rerun with -update after checking):\n%s", tt.keyword, path, got)
			}
		})
	}
}

func TestHelpListsEveryOption(t *testing.T) {
	help := renderHelp("", 78, testBackends)
	p := newFlagParser(&Flags{}, testBackends)
	for _, g := range helpGroups(p) {
		if !strings.Contains(help, "\n"+g.ShortDescription+":\n") {
			t.Errorf("group %q missing", g.ShortDescription)
		}
		for _, o := range g.Options() {
			if !strings.Contains(help, "--"+o.LongName) {
				t.Errorf("--%s missing", o.LongName)
			}
		}
	}
	flat := strings.Join(strings.Fields(help), " ")
	for _, want := range []string{
		"  -h, --help            show this help message and exit\n",
		"  --seed SEED           ",
		"--header [KEY=VALUE ...]",
		"--goodput KEY:VALUE [KEY:VALUE ...]",
		"--self-timed, --no-self-timed",
		"--ramp-up-strategy {linear,exponential}",
		"(default: inf)",
		"(default: bench-<8 random hex digits>-)",
	} {
		if !strings.Contains(help, want) && !strings.Contains(flat, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestHelpWidth(t *testing.T) {
	for _, columns := range []string{"60", "120"} {
		t.Setenv("COLUMNS", columns)
		var b bytes.Buffer
		if err := WriteHelp(&b, "", testBackends); err != nil {
			t.Fatal(err)
		}
		width := map[string]int{"60": 58, "120": 118}[columns]
		for _, line := range strings.Split(b.String(), "\n") {
			// Only an option's invocation or a group title may be wider, as in argparse.
			if len(line) > width && !strings.HasPrefix(line, "  --") && !strings.HasSuffix(line, ":") {
				t.Errorf("COLUMNS=%s: line wider than %d: %q", columns, width, line)
			}
		}
	}
}
