package cli

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// flagList reads a checked-in list of option strings, one a line (blank
// lines and # comments skipped), and checks it holds want of them.
func flagList(t *testing.T, path string, want int) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) != want {
		t.Fatalf("%s lists %d option strings, want %d", path, len(out), want)
	}
	return out
}

// pythonFlagStrings reads testdata/python_serve_flags.txt: every option
// string `vllm bench serve` accepts (dash and underscore spellings).
func pythonFlagStrings(t *testing.T) []string {
	return flagList(t, "testdata/python_serve_flags.txt", 196)
}

// sampleValue is a value the option accepts.
func sampleValue(long string) string {
	switch long {
	case "header", "metadata":
		return "k=v"
	case "goodput":
		return "ttft:100"
	case "extra-body", "chat-template-kwargs", "random-mm-limit-mm-per-prompt":
		return `{"a": 1}`
	case "random-mm-bucket-config":
		return "{(256, 256, 1): 1.0}"
	case "cpus":
		return "0-1"
	}
	return ""
}

func TestEveryPythonFlagParses(t *testing.T) {
	table := newActionTable(newFlagParser(&Flags{}, testBackends))
	for _, s := range pythonFlagStrings(t) {
		t.Run(s, func(t *testing.T) {
			args := []string{s}
			canonical := s
			if strings.HasPrefix(s, "--") {
				canonical = dashName(s)
			}
			a := table.byName[canonical]
			if a == nil {
				t.Fatalf("%s (as %s) is not in the option table", s, canonical)
			}
			if a.nargs != nargsNone {
				v := sampleValue(a.flag.LongName)
				switch {
				case v != "":
				case len(a.choices) > 0:
					v = a.choices[len(a.choices)-1]
				case a.typeName == "int":
					v = "7"
				case a.typeName == "float":
					v = "0.5"
				default:
					v = "text"
				}
				args = append(args, v)
			}
			_, err := parseFlags(args, testBackends)
			if a.help {
				if _, ok := err.(*HelpRequested); !ok {
					t.Fatalf("parseFlags(%q) = %v, want help", args, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", args, err)
			}
		})
	}
}

// additiveGroups hold the options stampede adds; everything else must be
// one of Python's.
var additiveGroups = ownGroups

func TestNoFlagBeyondPython(t *testing.T) {
	python := map[string]bool{}
	for _, s := range pythonFlagStrings(t) {
		python[s] = true
	}
	p := newFlagParser(&Flags{}, testBackends)
	additive := 0
	for _, g := range helpGroups(p) {
		for _, o := range g.Options() {
			for _, s := range optionStrings(o) {
				switch {
				case contains(additiveGroups, g.ShortDescription):
					additive++
					if python[s] {
						t.Errorf("%s is Python's but sits in stampede's group %q", s, g.ShortDescription)
					}
				case !python[s]:
					t.Errorf("%s (group %q) is not a vllm bench serve option", s, g.ShortDescription)
				}
			}
		}
	}
	if additive != 63 {
		t.Errorf("%d additive options, want 63 (3 from the multi-process fork, 32 of stampede's, 28 of the Rust client's)", additive)
	}
}

func TestRegistrationOrderListsEveryOptionOnce(t *testing.T) {
	p := newFlagParser(&Flags{}, testBackends)
	seen := map[string]int{}
	for _, o := range registrationOrder(p) {
		seen[o.LongName]++
	}
	total := 0
	for _, g := range helpGroups(p) {
		for _, o := range g.Options() {
			total++
			if seen[o.LongName] != 1 {
				t.Errorf("--%s appears %d times in the registration order", o.LongName, seen[o.LongName])
			}
		}
	}
	if len(seen) != total {
		t.Errorf("registration order has %d options, table %d", len(seen), total)
	}
}

func TestCommaList(t *testing.T) {
	var l CommaList
	if err := l.UnmarshalFlag("simple,,live_simple, multiple,"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l, "|"); got != "simple|live_simple|multiple" {
		t.Errorf("CommaList = %q", got)
	}
}
