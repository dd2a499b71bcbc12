package cli

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/internal/py"
)

// pythonLongOptions is what argparse sees of vLLM's options once
// FlexibleArgumentParser has turned '_' into '-': every long option string,
// once.
func pythonLongOptions(t *testing.T) []string {
	var out []string
	for _, s := range pythonFlagStrings(t) {
		if strings.HasPrefix(s, "--") && !slices.Contains(out, dashName(s)) {
			out = append(out, dashName(s))
		}
	}
	return out
}

// withPrefix lists the options of list that start with prefix.
func withPrefix(list []string, prefix string) []string {
	var out []string
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// shortestUniquePrefix is the shortest abbreviation argparse resolves to s
// among list: the first prefix only s starts with, or s itself when s is a
// prefix of another option (an exact match wins).
func shortestUniquePrefix(list []string, s string) string {
	for n := len("--") + 1; n < len(s); n++ {
		if len(withPrefix(list, s[:n])) == 1 {
			return s[:n]
		}
	}
	return s
}

// resolve is the option string argparse's matching gives arg, or the
// usage error it reports.
func resolve(t *testing.T, table *actionTable, arg string) (string, string) {
	t.Helper()
	m, err := table.matchOption(arg)
	var u *py.UsageError
	switch {
	case errors.As(err, &u):
		return "", u.Msg
	case err != nil:
		t.Fatalf("matchOption(%q): %v", arg, err)
	case m == nil || m.action == nil:
		return "", "unrecognized"
	}
	return m.option, ""
}

// TestPythonAbbreviations walks every Python option's shortest unique
// prefix (computed from vLLM's own option list, so stampede's additions
// play no part) and checks it reaches that option; every shorter prefix
// that is ambiguous among Python's options keeps argparse's message, which
// names Python's candidates only.
func TestPythonAbbreviations(t *testing.T) {
	python := pythonLongOptions(t)
	table := newActionTable(newFlagParser(&Flags{}, testBackends))
	checked := 0
	for _, s := range python {
		p := shortestUniquePrefix(python, s)
		got, msg := resolve(t, table, p)
		if got != s {
			t.Errorf("%s (shortest unique prefix of %s among vLLM's options) resolved to %q %s", p, s, got, msg)
		}
		checked++
		for n := len(p) - 1; n > len("--"); n-- {
			short := s[:n]
			candidates := withPrefix(python, short)
			if len(candidates) < 2 || slices.Contains(python, short) {
				continue
			}
			_, msg := resolve(t, table, short)
			const lead = "ambiguous option: "
			head := lead + short + " could match "
			if !strings.HasPrefix(msg, head) {
				t.Errorf("%s: got %q, want argparse's ambiguity error", short, msg)
				continue
			}
			listed := strings.Split(strings.TrimPrefix(msg, head), ", ")
			slices.Sort(listed)
			slices.Sort(candidates)
			if !slices.Equal(listed, candidates) {
				t.Errorf("%s: error names %q, want vLLM's candidates %q", short, listed, candidates)
			}
		}
	}
	if checked != 106 {
		t.Errorf("walked %d Python long options, want 106 (104 options, --help and --no-self-timed)", checked)
	}
}

// TestPythonAbbreviationsThroughArgv runs the abbreviations the issue
// names end to end: each used to be reported as ambiguous because a
// stampede option shares the prefix.
func TestPythonAbbreviationsThroughArgv(t *testing.T) {
	tests := []struct {
		args  []string
		check func(c *plan.Plan) bool
	}{
		{[]string{"--max-con", "4"}, func(c *plan.Plan) bool { return c.MaxConcurrency != nil && *c.MaxConcurrency == 4 }},
		{[]string{"--max-c", "4"}, func(c *plan.Plan) bool { return c.MaxConcurrency != nil && *c.MaxConcurrency == 4 }},
		{[]string{"--max_c=5"}, func(c *plan.Plan) bool { return c.MaxConcurrency != nil && *c.MaxConcurrency == 5 }},
		{[]string{"--sh", "7"}, func(c *plan.Plan) bool { return c.SharegptOutputLen != nil && *c.SharegptOutputLen == 7 }},
		{[]string{"--shar", "10"}, func(c *plan.Plan) bool { return c.SharegptOutputLen != nil && *c.SharegptOutputLen == 10 }},
		{[]string{"--c", "1"}, nil}, // Python's candidates only
		// stampede's own options: unique among all options, or exact.
		{[]string{"--sha", "3"}, func(c *plan.Plan) bool { return *c.SharegptOutputLen == 3 && c.Shards == 0 }},
		{[]string{"--shards", "3"}, func(c *plan.Plan) bool { return c.Shards == 3 }},
		{[]string{"--shard", "3"}, func(c *plan.Plan) bool { return c.Shards == 3 }},
		{[]string{"--max-conn", "3"}, func(c *plan.Plan) bool {
			return c.MaxConnectionsPerWorker != nil && *c.MaxConnectionsPerWorker == 3 && c.MaxConcurrency == nil
		}},
		{[]string{"--cpu", "0"}, func(c *plan.Plan) bool { return len(c.CPUs) == 1 }},
		{[]string{"--cancel", "1"}, func(c *plan.Plan) bool { return c.CancelGraceSec == 1 }},
	}
	for _, tt := range tests {
		c, err := parseFlags(tt.args, testBackends)
		if tt.check == nil {
			var u *py.UsageError
			if !errors.As(err, &u) || strings.Contains(u.Msg, "--cpus") || strings.Contains(u.Msg, "--cancel-grace-sec") ||
				strings.Contains(u.Msg, "--connect-timeout-sec") || strings.Contains(u.Msg, "--cooldown-time") {
				t.Errorf("parseFlags(%q) = %v, want an ambiguity among Python's options only", tt.args, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseFlags(%q): %v", tt.args, err)
			continue
		}
		if !tt.check(c.Plan) {
			t.Errorf("parseFlags(%q) gave %+v", tt.args, *c.Plan)
		}
	}
}

// TestOwnAbbreviations: each of stampede's options is reached by its
// shortest prefix unique among all options, and any shorter prefix that a
// Python option starts with goes to Python's option.
func TestOwnAbbreviations(t *testing.T) {
	python := pythonLongOptions(t)
	table := newActionTable(newFlagParser(&Flags{}, testBackends))
	var all, own []string
	for _, s := range table.strings {
		if strings.HasPrefix(s, "--") {
			all = append(all, s)
			if table.byName[s].own {
				own = append(own, s)
			}
		}
	}
	if len(own) == 0 {
		t.Fatal("no option is marked as stampede's own")
	}
	for _, s := range own {
		if slices.Contains(python, s) {
			t.Errorf("%s is vLLM's but marked as stampede's own", s)
		}
		p := shortestUniquePrefix(all, s)
		if got, msg := resolve(t, table, p); got != s {
			t.Errorf("%s (unique among all options) resolved to %q %s, want %s", p, got, msg, s)
		}
		for n := len(p) - 1; n > len("--"); n-- {
			short := s[:n]
			if py := withPrefix(python, short); len(py) == 1 {
				if got, msg := resolve(t, table, short); got != py[0] {
					t.Errorf("%s resolved to %q %s, want vLLM's %s", short, got, msg, py[0])
				}
			}
		}
	}
}
