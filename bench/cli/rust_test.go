package cli

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/internal/py"
)

func parseRust(t *testing.T, args ...string) (*plan.Plan, error) {
	t.Helper()
	return ParseEnv(args, testBackends, func(string) string { return "" })
}

func wantUsage(t *testing.T, err error, parts ...string) {
	t.Helper()
	var u *py.UsageError
	if !errors.As(err, &u) {
		t.Fatalf("err = %v, want a usage error", err)
	}
	for _, p := range parts {
		if !strings.Contains(u.Msg, p) {
			t.Errorf("usage error %q lacks %q", u.Msg, p)
		}
	}
}

func TestRustOutputJSON(t *testing.T) {
	p, err := parseRust(t, "--output-json", "out/dir/r.json")
	if err != nil {
		t.Fatal(err)
	}
	if !p.SaveResult || p.ResultDir != "out/dir" || p.ResultFilename != "r.json" {
		t.Errorf("save %v dir %q file %q", p.SaveResult, p.ResultDir, p.ResultFilename)
	}
	p, err = parseRust(t, "--output-j", "r.json")
	if err != nil {
		t.Fatal(err)
	}
	if p.ResultDir != "" || p.ResultFilename != "r.json" {
		t.Errorf("dir %q file %q", p.ResultDir, p.ResultFilename)
	}
	_, err = parseRust(t, "--output-json", "r.json", "--result-filename", "x.json")
	wantUsage(t, err, "--output-json", "--result-filename")
}

func TestRustSteadyState(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--no-steady-state"}, false}, // Python's default: nothing to turn off
		{[]string{"--steady-state"}, true},
		{[]string{"--steady-state", "--no-steady-state"}, false},
		{[]string{"--steady-state-threshold", "0.95"}, true},
		{[]string{"--steady-state-threshold", "0.95", "--no-steady-state"}, false},
	} {
		p, err := parseRust(t, tt.args...)
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if p.SteadyState != tt.want {
			t.Errorf("%q: steady state %v, want %v", tt.args, p.SteadyState, tt.want)
		}
	}
	for _, bad := range []string{"0", "-3", "inf"} {
		_, err := parseRust(t, "--steady-state-min-window", bad)
		wantUsage(t, err, "--steady-state-min-window", "greater than 0")
	}
	if p, err := parseRust(t, "--steady-state-min-window", "30"); err != nil || !p.SteadyState || *p.SteadyStateMinWindow != 30 {
		t.Errorf("--steady-state-min-window 30: %v", err)
	}
	_, err := parseRust(t, "--steady-state-threshold", "1.5")
	wantUsage(t, err, "--steady-state-threshold", "at most 1")
	p, err := parseRust(t, "--steady-state-threshold", "0.8")
	if err != nil || !p.SteadyState || p.SteadyStateThreshold != 0.8 {
		t.Errorf("--steady-state-threshold 0.8: %v", err)
	}
}

func TestRustSpeedBenchConfig(t *testing.T) {
	p, err := parseRust(t, "--speed-bench-config", "throughput_16k")
	if err != nil {
		t.Fatal(err)
	}
	if p.SpeedBenchDatasetSubset != "throughput_16k" {
		t.Errorf("subset %q", p.SpeedBenchDatasetSubset)
	}
	_, err = parseRust(t, "--speed-bench-config", "throughput_16k", "--speed-bench-dataset-subset", "qualitative")
	wantUsage(t, err, "--speed-bench-config", "--speed-bench-dataset-subset")
	_, err = parseRust(t, "--speed-bench-config", "huge")
	wantUsage(t, err, "argument --speed-bench-config: invalid choice: 'huge'")
}

func TestRustSweepChecks(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		parts []string
	}{
		{[]string{"--sweep-max-concurrency", "1,0"}, []string{"--sweep-max-concurrency", `"0"`}},
		{[]string{"--sweep-max-concurrency", "1,,2"}, []string{"--sweep-max-concurrency", "empty"}},
		{[]string{"--sweep-request-rate", "1,x"}, []string{"--sweep-request-rate", `"x"`}},
		{[]string{"--sweep-num-prompts-factor", "20"}, []string{"--sweep-num-prompts-factor", "--sweep-max-concurrency"}},
		{[]string{"--sweep-max-concurrency", "1", "--sweep-num-prompts-factor", "0"}, []string{"--sweep-num-prompts-factor", "greater than 0"}},
		{[]string{"--dry-run", "--sweep-request-rate", "1"}, []string{"--dry-run", "--sweep-request-rate"}},
		{[]string{"--compare", "a.json"}, []string{"--compare", "expected 2"}},
		{[]string{"--num-runs", "0"}, []string{`argument --num-runs: invalid value "0"`}},
		{[]string{"--prompt-token-ids", "--backend", "openai-chat"}, []string{"--prompt-token-ids", "--backend vllm or openai"}},
		{[]string{"--prompt-token-ids", "--dataset-name", "sonnet", "--dataset-path", "x"}, []string{"--prompt-token-ids", "--dataset-name random"}},
		{[]string{"--prompt-token-ids", "--random-batch-size", "2"}, []string{"--prompt-token-ids", "--random-batch-size 2"}},
		{[]string{"--multi-turn-num-turns", "4"}, []string{"--multi-turn-num-turns", "give --multi-turn"}},
		{[]string{"--multi-turn"}, []string{"--multi-turn", "--backend openai-chat"}},
		{[]string{"--multi-turn", "--backend", "openai-chat", "--multi-turn-num-turns", "0"}, []string{"--multi-turn-num-turns", "1 or more"}},
		{[]string{"--multi-turn", "--backend", "openai-chat", "--multi-turn-min-turns", "5", "--multi-turn-max-turns", "2"}, []string{"--multi-turn-min-turns 5", "--multi-turn-max-turns 2"}},
		{[]string{"--multi-turn", "--backend", "openai-chat", "--multi-turn-concurrency", "0"}, []string{"--multi-turn-concurrency", "1 or more"}},
		{[]string{"--multi-turn", "--backend", "openai-chat", "--multi-turn-prefix-global-ratio", "0.6", "--multi-turn-prefix-conversation-ratio", "0.4"}, []string{"sum to less than 1"}},
		{[]string{"--multi-turn", "--backend", "openai-chat", "--multi-turn-prefix-global-ratio", "1"}, []string{"--multi-turn-prefix-global-ratio", "below 1"}},
		{[]string{"--multi-turn", "--backend", "openai-chat", "--dataset-name", "sonnet", "--dataset-path", "x"}, []string{"--multi-turn", "not sonnet"}},
		{[]string{"--multi-turn", "--backend", "openai-chat", "--dataset-name", "sharegpt", "--dataset-path", "x", "--multi-turn-prefix-global-ratio", "0.2"}, []string{"--dataset-name random"}},
		{[]string{"--multi-turn", "--backend", "openai-chat", "--sweep-max-concurrency", "1,2"}, []string{"--multi-turn", "--sweep-max-concurrency"}},
		{[]string{"--profile-batch-threshold", "8"}, []string{"--profile-batch-threshold", "give --profile"}},
		{[]string{"--profile", "--profile-batch-threshold", "0"}, []string{"--profile-batch-threshold", "1 or more"}},
		{[]string{"--profile", "--profile-duration", "3"}, []string{"--profile-duration", "--profile-batch-threshold"}},
		{[]string{"--profile", "--profile-batch-threshold", "2", "--profile-duration", "0"}, []string{"--profile-duration", "greater than 0"}},
		{[]string{"--sweep-summary-percentiles", "90"}, []string{"--sweep-summary-percentiles", "--sweep-max-concurrency"}},
		{[]string{"--sweep-summary-percentiles", "90,100", "--sweep-request-rate", "1"}, []string{"--sweep-summary-percentiles", `"100"`}},
		{[]string{"--speed-bench-max-input-len", "0", "--dataset-name", "speed_bench"}, []string{"--speed-bench-max-input-len", "1 or more"}},
		{[]string{"--speed-bench-max-input-len", "10"}, []string{"--speed-bench-max-input-len", "--dataset-name speed_bench"}},
		{[]string{"--hf-text-column", "text"}, []string{"--hf-text-column", "--dataset-name hf"}},
		{[]string{"--hf-text-column", "", "--dataset-name", "hf", "--dataset-path", "x/y"}, []string{"--hf-text-column", "column"}},
	} {
		_, err := parseRust(t, tt.args...)
		wantUsage(t, err, tt.parts...)
	}
	p, err := parseRust(t, "--sweep-request-rate", "1,inf", "--sweep-max-c", "1,8")
	if err != nil {
		t.Fatal(err)
	}
	if !RustSweep(p) {
		t.Error("RustSweep false for a sweep")
	}
	// --sweep-summary-percentiles joins the computed set, once each.
	p, err = parseRust(t, "--sweep-request-rate", "1", "--metric-percentiles", "50,99", "--sweep-summary-percentiles", "90,99,90")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.SummaryPercentiles, []float64{90, 99}) || !slices.Equal(p.SelectedPercentiles, []float64{50, 99, 90}) ||
		RustSweepMetricPercentiles(p) != "50,99,90" {
		t.Errorf("summary %v selected %v", p.SummaryPercentiles, p.SelectedPercentiles)
	}
}

func TestWithoutRustCommandFlags(t *testing.T) {
	got, err := WithoutRustCommandFlags([]string{
		"--model", "m", "--sweep-max-concurrency", "1,10", "--sweep_request_rate=1,inf",
		"--sweep-num", "20", "--reset-prefix-cache", "--num-runs", "3", "--max-concurrency", "4", "--", "x",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--model", "m", "--max-concurrency", "4", "--", "x"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
