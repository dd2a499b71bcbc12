package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/datasets/tokenizer"
)

// The Rust client's command lines, run as its users run them, against
// the mock.
func TestRustClientCommands(t *testing.T) {
	tok, err := tokenizer.Load(tinyTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mock.Start(mock.Config{Host: "127.0.0.1", Tokenizer: tok, TTFT: time.Millisecond, ITL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	base := []string{"--backend", "vllm", "--base-url", "http://" + srv.Addr(), "--model", "mock-llm",
		"--tokenizer", tinyTokenizer, "--random-input-len", "16", "--random-output-len", "4", "--disable-tqdm"}
	runArgs := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	t.Run("sweep", func(t *testing.T) {
		code, out, errs := runArgs(append(base, "--result-dir", dir, "--sweep-max-c", "1,4",
			"--sweep-num-prompts-factor", "3", "--reset-prefix-cache", "--sweep-summary-percentiles", "90,99.9")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if !strings.Contains(out, "max-concurrency") || strings.Count(errs, "Sweep point") != 2 {
			t.Errorf("stdout %q; want the summary table of two points", out)
		}
		// --sweep-summary-percentiles: a column per latency and percentile,
		// and the percentiles in each point's result JSON beside p99.
		for _, col := range []string{"TTFT p90", "TPOT p90", "E2EL p90", "TTFT p99.9", "E2EL p99.9"} {
			if !strings.Contains(out, col) {
				t.Errorf("summary lacks column %q:\n%s", col, out)
			}
		}
		var point map[string]any
		if data, err := os.ReadFile(filepath.Join(dir, "sweep-max-concurrency=4.json")); err != nil || json.Unmarshal(data, &point) != nil {
			t.Fatalf("point result: %v", err)
		}
		for _, key := range []string{"p99_ttft_ms", "p90_ttft_ms", "p99.9_tpot_ms", "p90_itl_ms"} {
			if _, ok := point[key]; !ok {
				t.Errorf("point result JSON lacks %s", key)
			}
		}
		// --sweep-num-prompts-factor: concurrency x 3 prompts per point.
		for file, want := range map[string]float64{"sweep-max-concurrency=1.json": 3, "sweep-max-concurrency=4.json": 12} {
			var res struct{ Completed float64 }
			data, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &res); err != nil || res.Completed != want {
				t.Errorf("%s: completed %v (%v), want %v", file, res.Completed, err, want)
			}
		}
	})

	t.Run("output-json and compare", func(t *testing.T) {
		a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "sub", "b.json")
		for _, f := range []string{a, b} {
			if code, _, errs := runArgs(append(base, "--num-prompts", "5", "--output-json", f)...); code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
		}
		code, out, errs := runArgs("--compare", a, b)
		if code != 0 || !strings.Contains(out, "request_throughput") {
			t.Errorf("--compare: exit %d, stdout %q, stderr %q", code, out, errs)
		}
	})

	t.Run("dry-run", func(t *testing.T) {
		code, out, errs := runArgs(append(base, "--num-prompts", "7", "--dry-run")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		for _, want := range []string{"Dry Run: Dataset", "Requests:                                7\n", "Requests sent:                           0"} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("reset refused", func(t *testing.T) {
		args := append(append([]string(nil), base...), "--num-prompts", "2", "--reset-prefix-cache")
		args[3] += "/no-such-prefix"
		code, _, errs := runArgs(args...)
		if code != exitError || !strings.Contains(errs, "--reset-prefix-cache") || !strings.Contains(errs, "404") {
			t.Errorf("exit %d, stderr %q; want 1 and the 404 named", code, errs)
		}
	})

	t.Run("dataset refuses a command", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		code := runDataset(context.Background(), append(base, "-o", "-", "--dry-run"), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), "stampede dataset does not take it") {
			t.Errorf("exit %d, stderr %q", code, stderr.String())
		}
	})

	t.Run("deferred profile", func(t *testing.T) {
		slow, err := mock.Start(mock.Config{Host: "127.0.0.1", Tokenizer: tok, TTFT: time.Millisecond, ITL: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer slow.Close()
		args := append(append([]string(nil), base...), "--num-prompts", "16", "--max-concurrency", "4", "--random-output-len", "16",
			"--profile", "--profile-duration", "0.3")
		args[3] = "http://" + slow.Addr()
		code, out, errs := runArgs(append(args, "--profile-batch-threshold", "4")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		// The profile starts once the mock's /metrics shows 4 running and
		// stops after 0.3 s, inside the run: before the result block.
		at := func(s string) int { return strings.Index(out, s) }
		if d, st, sp, blk := at("Profiler deferred"), at("Profiler started"), at("Profiler stopped"), at("Serving Benchmark Result"); d < 0 || st < d || sp < st || blk < sp {
			t.Errorf("stdout order deferred %d started %d stopped %d block %d:\n%s", d, st, sp, blk, out)
		}
		code, out, errs = runArgs(append(args, "--profile-batch-threshold", "50")...)
		if code != 0 || strings.Contains(out, "Starting profiler") || !strings.Contains(errs, "--profile-batch-threshold 50: no profile taken: the server's batch held at most") {
			t.Errorf("threshold never reached: exit %d stdout %q stderr %q", code, out, errs)
		}
	})

	t.Run("multi-turn", func(t *testing.T) {
		chat := append(append([]string(nil), base...), "--backend", "openai-chat", "--multi-turn", "--num-prompts", "4",
			"--multi-turn-concurrency", "2", "--save-result", "--result-dir", dir)
		// mean_input_tokens by turn, from the saved result.
		perTurn := func(name string) []float64 {
			var res struct {
				Completed int `json:"completed"`
				PerTurn   []struct {
					MeanInputTokens float64 `json:"mean_input_tokens"`
				} `json:"per_turn"`
			}
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || json.Unmarshal(data, &res) != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var in []float64
			for _, p := range res.PerTurn {
				in = append(in, p.MeanInputTokens)
			}
			return in
		}
		code, out, errs := runArgs(append(chat, "--multi-turn-num-turns", "3", "--per-turn-input-len", "8", "--result-filename", "mt.json")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		for _, want := range []string{"Multi-turn Serving Benchmark Result", "Conversations:                           4 ",
			"Clients:                                 2 ", "Successful requests:                     12 "} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
		// Each turn carries the history: its input grows by the last
		// question and answer.
		if in := perTurn("mt.json"); len(in) != 3 || !(in[1] > in[0]+4 && in[2] > in[1]+4) {
			t.Errorf("input tokens by turn %v, want three turns, each longer than the last", in)
		}
		// Prefix sharing sends each turn alone: inputs stay level.
		code, _, errs = runArgs(append(chat, "--multi-turn-num-turns", "2", "--multi-turn-prefix-global-ratio", "0.5", "--result-filename", "prefix.json")...)
		if code != 0 {
			t.Fatalf("prefix sharing: exit %d: %s", code, errs)
		}
		if in := perTurn("prefix.json"); len(in) != 2 || in[1] > in[0]+2 {
			t.Errorf("prefix sharing: input tokens by turn %v, want two turns of the same length", in)
		}
		code, _, errs = runArgs(append(base, "--multi-turn")...)
		if code != exitUsage || !strings.Contains(errs, "--backend openai-chat") {
			t.Errorf("--multi-turn with --backend vllm: exit %d, stderr %q", code, errs)
		}
	})
}
