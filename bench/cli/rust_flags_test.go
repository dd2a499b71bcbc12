package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/internal/py"
)

// rustFlagStrings reads testdata/rust_vllm_bench_flags.txt: every flag of
// the Rust client's CLI reference.
func rustFlagStrings(t *testing.T) []string {
	return flagList(t, "testdata/rust_vllm_bench_flags.txt", 99)
}

// rustSample is a value the Rust client's flag accepts, as its README
// writes one; "" for a flag without a value.
func rustSample(t *testing.T, table *actionTable, flag string) []string {
	a := table.byName[flag]
	if a == nil {
		t.Fatalf("%s is not in the option table", flag)
	}
	if a.nargs == nargsNone {
		return nil
	}
	switch flag {
	case "--compare":
		return []string{"baseline.json", "optimized.json"}
	case "--sweep-max-concurrency":
		return []string{"1,10,50"}
	case "--sweep-request-rate":
		return []string{"1,10,inf"}
	case "--sweep-summary-percentiles", "--metric-percentiles":
		return []string{"50,90"}
	case "--steady-state-threshold":
		return []string{"0.95"}
	case "--goodput":
		return []string{"ttft:200", "e2el:5000"}
	case "--percentile-metrics":
		return []string{"ttft,tpot,itl,e2el"}
	}
	if v := sampleValue(a.flag.LongName); v != "" {
		return []string{v}
	}
	switch {
	case len(a.choices) > 0:
		return []string{a.choices[len(a.choices)-1]}
	case a.typeName == "int":
		return []string{"7"}
	case a.typeName == "float":
		return []string{"0.5"}
	}
	return []string{"text"}
}

// TestEveryRustFlagParses is the Rust client's own parity check turned
// round: every flag its README documents is accepted by stampede's
// command line, and a full parse of it either plans a run or refuses it
// with a usage error naming the flag ("not supported yet"), never as an
// unrecognized argument.
func TestEveryRustFlagParses(t *testing.T) {
	table := newActionTable(newFlagParser(&Flags{}, testBackends))
	for _, flag := range rustFlagStrings(t) {
		t.Run(flag, func(t *testing.T) {
			args := append([]string{flag}, rustSample(t, table, flag)...)
			if _, err := parseFlags(args, testBackends); err != nil {
				t.Fatalf("parseFlags(%q): %v", args, err)
			}
			_, err := ParseEnv(args, testBackends, func(string) string { return "" })
			var u *py.UsageError
			if errors.As(err, &u) && strings.Contains(u.Msg, "unrecognized") {
				t.Fatalf("Parse(%q): %v", args, err)
			}
		})
	}
}

// TestRustOnlyFlagsInTheirGroup: the flags of the Rust client that vLLM's
// Python parser lacks are exactly the table's Rust group.
func TestRustOnlyFlagsInTheirGroup(t *testing.T) {
	python := map[string]bool{}
	for _, s := range pythonFlagStrings(t) {
		python[s] = true
	}
	var rustOnly []string
	for _, s := range rustFlagStrings(t) {
		if !python[s] {
			rustOnly = append(rustOnly, s)
		}
	}
	var group []string
	p := newFlagParser(&Flags{}, testBackends)
	for _, g := range helpGroups(p) {
		if g.ShortDescription == "vllm-bench (Rust client) options" {
			for _, o := range g.Options() {
				group = append(group, "--"+o.LongName)
			}
		}
	}
	if len(rustOnly) != 28 || len(group) != 28 {
		t.Errorf("%d Rust-only flags in the README list, %d in the group, want 28 each", len(rustOnly), len(group))
	}
	for _, s := range rustOnly {
		if !contains(group, s) {
			t.Errorf("%s is the Rust client's but not in its group", s)
		}
	}
}

// TestRustDefaults: the Rust client's defaults, as its README states them.
func TestRustDefaults(t *testing.T) {
	c, err := parseFlags(nil, testBackends)
	if err != nil {
		t.Fatal(err)
	}
	r := c.RustClient
	if r.NumRuns != 1 || r.MultiTurnNumTurns != 3 || r.MultiTurnMinTurns != 0 || r.MultiTurnMaxTurns != 0 ||
		r.MultiTurnDelayMs != 0 || r.PerTurnInputLen != 0 || r.SteadyStateThreshold != 0.95 ||
		r.ProfileDuration != 5.0 || r.DryRun || r.MultiTurn || r.ResetPrefixCache || r.PromptTokenIDs ||
		r.MultiTurnConcurrency != nil || r.SteadyStateMinWindow != nil || r.MaxModelLen != nil ||
		r.SpeedBenchConfig != "" || r.Compare != nil {
		t.Errorf("defaults %+v", r)
	}
}

// TestRustFlagsLeavePythonAbbreviations: a prefix that means one of
// Python's options still does with the Rust group present, and the Rust
// flags have their own unique prefixes.
func TestRustFlagsLeavePythonAbbreviations(t *testing.T) {
	table := newActionTable(newFlagParser(&Flags{}, testBackends))
	for arg, want := range map[string]string{
		"--output":         "--output-len", // Python's only "--output" option
		"--no-st":          "--no-stream",
		"--prof":           "--profile",
		"--max-c":          "--max-concurrency",
		"--speed-bench-c":  "--speed-bench-category",
		"--hf-s":           "", // ambiguous among Python's --hf-split, --hf-subset
		"--output-j":       "--output-json",
		"--no-ste":         "--no-steady-state",
		"--dry":            "--dry-run",
		"--max-m":          "--max-model-len",
		"--num-r":          "--num-runs",
		"--speed-bench-co": "--speed-bench-config",
		"--hf-t":           "--hf-text-column",
		"--comp":           "--compare",
	} {
		got, msg := resolve(t, table, arg)
		if got != want {
			t.Errorf("%s resolved to %q (%s), want %q", arg, got, msg, want)
		}
		if want == "" && !strings.Contains(msg, "ambiguous option: --hf-s could match --hf-subset, --hf-split") &&
			!strings.Contains(msg, "ambiguous option: --hf-s could match --hf-split, --hf-subset") {
			t.Errorf("%s: %q, want Python's ambiguity message", arg, msg)
		}
	}
}
