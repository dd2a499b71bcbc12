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

// TestCommandHelp: a command's help holding serve opens with its usage,
// serve's description and its verbs, then lists serve's option groups
// exactly as serve's own help does, in Python's order.
func TestCommandHelp(t *testing.T) {
	verbs := []Verb{{"serve", "one run"}, {"a-verb-name-wider-than-the-column", "what it does, at length: " + strings.Repeat("word ", 20)}}
	got := renderCommandHelp("usage: tool [SUBCOMMAND]", "subcommands", verbs, "Options of serve follow.", 78, testBackends)
	serve := renderHelp("", 78, testBackends)
	_, groups, ok := strings.Cut(serve, "\n\noptions:\n")
	if !ok {
		t.Fatalf("serve's help has no options group:\n%s", serve)
	}
	head, rest, ok := strings.Cut(got, "\n\noptions:\n")
	if !ok || rest != groups {
		t.Fatalf("the option groups differ from serve's help:\n%s", got)
	}
	wantHead := "usage: tool [SUBCOMMAND]\n\n" + wrapText(helpDescription, 78, "") + "\n\n" +
		"subcommands:\n" +
		"  serve                 one run\n" +
		"  a-verb-name-wider-than-the-column\n" +
		"                        what it does, at length: word word word word word word\n" +
		"                        word word word word word word word word word word word\n" +
		"                        word word word\n" +
		"\nOptions of serve follow."
	if head != wantHead {
		t.Errorf("head\n%s\nwant\n%s", head, wantHead)
	}
}
