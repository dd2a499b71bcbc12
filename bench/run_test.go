package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/datasets/tokenizer"
	"github.com/stampede-bench/stampede/internal/py"
)

// These tests run whole benchmarks through Run against the in-process mock
// server and hold the output to the contract (spec §c, §e, §f): which
// lines are printed, in which order and on which stream, the result JSON's
// keys in Python's insertion order, and the error a failing run ends with.

// tinyTokenizer is the tokenizer both the client and the mock count with,
// so the server-side alignment finds nothing to fix.
const tinyTokenizer = "../datasets/tokenizer/testdata/tiny/tokenizer.json"

// startTinyMock starts a mock with the tiny tokenizer, closed when the
// test ends; the hub stays offline.
func startTinyMock(t *testing.T, cfg mock.Config) *mock.Server {
	t.Helper()
	t.Setenv("HF_HUB_OFFLINE", "1")
	tok, err := tokenizer.Load(tinyTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tokenizer = tok
	srv, err := mock.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// runAgainstMock runs a benchmark with args against a mock started with
// cfg (plus the tiny tokenizer) and returns what it printed.
func runAgainstMock(t *testing.T, ctx context.Context, cfg mock.Config, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	srv := startTinyMock(t, cfg)
	return runAt(t, ctx, "http://"+srv.Addr(), args...)
}

// runAt runs a benchmark with args (plus the tiny tokenizer) against
// baseURL and returns what it printed.
func runAt(t *testing.T, ctx context.Context, baseURL string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	c, err := benchtest.ParseArgs(append([]string{"--base-url", baseURL, "--tokenizer", tinyTokenizer, "--disable-tqdm"}, args...), benchtest.NoEnv)
	if err != nil {
		t.Fatalf("parseArgs: %v", err)
	}
	var out, errOut bytes.Buffer
	err = Run(ctx, c, &out, &errOut)
	return out.String(), errOut.String(), err
}

// lineLabels reduces printed lines to what does not vary between runs: a
// result row ("{:<40} {:<10}") to its label, any other line as it is.
func lineLabels(out string) []string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i, l := range lines {
		if len(l) > pyout.LabelWidth+pyout.ValueWidth && l[pyout.LabelWidth] == ' ' && strings.HasSuffix(l[:pyout.LabelWidth], " ") {
			lines[i] = strings.TrimRight(l[:pyout.LabelWidth], " ")
		}
	}
	return lines
}

// jsonKeys returns the top-level keys of a JSON object in file order.
func jsonKeys(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("result is not a JSON object: %v %v", tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// sectionLabels are a percentile section's printed lines and its JSON keys.
func sectionLabels(header, name, key string, percentiles ...string) (lines, keys []string) {
	lines = []string{header, "Mean " + name + " (ms):", "Median " + name + " (ms):"}
	keys = []string{"mean_" + key + "_ms", "median_" + key + "_ms", "std_" + key + "_ms"}
	for _, p := range percentiles {
		lines = append(lines, "P"+p+" "+name+" (ms):")
		keys = append(keys, "p"+p+"_"+key+"_ms")
	}
	return lines, keys
}

func TestRunGenerationOutput(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, err := runAgainstMock(t, context.Background(),
		mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond},
		"--dataset-name", "random", "--num-prompts", "4", "--random-input-len", "16", "--random-output-len", "4",
		"--max-concurrency", "2", "--request-rate", "1000", "--goodput", "ttft:10000",
		"--percentile-metrics", "ttft,tpot,itl,e2el,client_queue_time,e2el_including_client_queue",
		"--metric-percentiles", "50,99.9", "--ready-check-timeout-sec", "600", "--num-warmups", "2",
		"--label", "lab", "--metadata", "gpu=none", "--save-result", "--result-dir", dir, "--result-filename", "r.json")
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}

	want := []string{
		"Model not specified, fetching first model from server...",
		"First model name: mock-llm, first model id: mock-llm",
		plan.TemperatureWarning,
		"Starting initial single prompt test run...",
		"Waiting for endpoint to become up in 600 seconds",
		"Initial test run completed.",
		"Warming up with 2 requests...",
		"Warmup run completed.",
		"Starting main benchmark run...",
		"Traffic request rate: 1000.0",
		"Burstiness factor: 1.0 (Poisson process)",
		"Maximum request concurrency: 2",
		"tip: install termplotlib and gnuplot to plot the metrics",
		"============ Serving Benchmark Result ============",
		"Successful requests:",
		"Failed requests:",
		"Maximum request concurrency:",
		"Request rate configured (RPS):",
		"Benchmark duration (s):",
		"Total input tokens:",
		"Total generated tokens:",
		"Request throughput (req/s):",
		"Request goodput (req/s):",
		"Output token throughput (tok/s):",
		"Peak output token throughput (tok/s):",
		"Peak concurrent requests:",
		"Total token throughput (tok/s):",
	}
	wantKeys := []string{
		"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
		"gpu",
		"request_rate", "burstiness", "max_concurrency",
		"duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
		"request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
		"latencies", "queue_times", "max_output_tokens_per_s", "max_concurrent_requests", "rtfx",
	}
	for _, sec := range [][3]string{
		{"---------------Time to First Token----------------", "TTFT", "ttft"},
		{"-----Time per Output Token (excl. 1st token)------", "TPOT", "tpot"},
		{"---------------Inter-token Latency----------------", "ITL", "itl"},
		{"----------------End-to-end Latency----------------", "E2EL", "e2el"},
		{"---------------Client-side Queueing---------------", "Client Queue Time", "client_queue_time"},
		{"--------Queue-inclusive End-to-end Latency--------", "E2EL incl. Client Queue", "e2el_including_client_queue"},
	} {
		lines, keys := sectionLabels(sec[0], sec[1], sec[2], "50", "99.9")
		want = append(want, lines...)
		wantKeys = append(wantKeys, keys...)
	}
	want = append(want, strings.Repeat("=", 50))
	if got := lineLabels(stdout); !slices.Equal(got, want) {
		t.Errorf("stdout lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "Successful requests:") && l != "Successful requests:                     4         " {
			t.Errorf("row %q, want 4 successful requests in a 51-column row", l)
		}
	}
	for _, notOnStdout := range []string{"Sampling input_len", "stampede:"} {
		if strings.Contains(stdout, notOnStdout) || !strings.Contains(stderr, notOnStdout) {
			t.Errorf("%q belongs on stderr\nstdout:\n%s\nstderr:\n%s", notOnStdout, stdout, stderr)
		}
	}

	saved, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonKeys(t, saved); !slices.Equal(got, wantKeys) {
		t.Errorf("result keys:\n%q\nwant:\n%q", got, wantKeys)
	}
	if bytes.HasSuffix(saved, []byte("\n")) {
		t.Error("the result file ends with a newline; json.dump writes none")
	}
	var res map[string]any
	if err := json.Unmarshal(saved, &res); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{
		"label": "lab", "backend": "openai", "model_id": "mock-llm", "tokenizer_id": tinyTokenizer,
		"num_prompts": 4.0, "gpu": "none", "request_rate": 1000.0, "max_concurrency": 2.0,
		"completed": 4.0, "failed": 0.0, "total_output_tokens": 16.0,
	} {
		if res[key] != want {
			t.Errorf("result %s = %v, want %v", key, res[key], want)
		}
	}
	if !bytes.Contains(saved, []byte(`"request_rate": 1000.0, "burstiness": 1.0,`)) {
		t.Errorf("rates not written as Python floats: %s", saved)
	}
}

func TestRunPoolingOutput(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, err := runAgainstMock(t, context.Background(), mock.Config{},
		"--backend", "openai-embeddings", "--endpoint", "/v1/embeddings", "--model", "mock-llm",
		"--dataset-name", "random", "--num-prompts", "3", "--random-input-len", "16",
		"--save-result", "--save-detailed", "--result-dir", dir)
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	want := []string{
		"Starting initial single prompt test run...",
		"Skipping endpoint ready check.",
		"Starting main benchmark run...",
		"Traffic request rate: inf",
		"Burstiness factor: 1.0 (Poisson process)",
		"Maximum request concurrency: None",
		"============ Serving Benchmark Result ============",
		"Successful requests:",
		"Failed requests:",
		"Benchmark duration (s):",
		"Total input tokens:",
		"Request throughput (req/s):",
		"Input throughput (inputs/s):",
		"Total token throughput (tok/s):",
		"----------------End-to-end Latency----------------",
		"Mean E2EL (ms):",
		"Median E2EL (ms):",
		"P99 E2EL (ms):",
		strings.Repeat("=", 50),
	}
	if got := lineLabels(stdout); !slices.Equal(got, want) {
		t.Errorf("stdout lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The default name: {backend}-{rate}qps-{model base}-{date}.json.
	files, err := filepath.Glob(filepath.Join(dir, "openai-embeddings-infqps-mock-llm-*[0-9].json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("result files %v (%v), want one openai-embeddings-infqps-mock-llm-<date>.json", files, err)
	}
	saved, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{
		"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
		"request_rate", "burstiness", "max_concurrency",
		"duration", "completed", "total_input_tokens", "total_input_sequences", "request_throughput",
		"input_sequence_throughput", "total_token_throughput", "input_lens", "latencies", "queue_times", "errors",
		"mean_e2el_ms", "median_e2el_ms", "std_e2el_ms", "p99_e2el_ms",
	}
	if got := jsonKeys(t, saved); !slices.Equal(got, wantKeys) {
		t.Errorf("result keys:\n%q\nwant:\n%q", got, wantKeys)
	}
	if !bytes.Contains(saved, []byte(`"label": null,`)) || !bytes.Contains(saved, []byte(`"request_rate": "inf",`)) {
		t.Errorf("label or request_rate not as Python writes them: %s", saved)
	}
}

// TestRunWorkersRampUpAppend covers the multi-process fork's banner line
// and first row, ramp-up events in the result, and --append-result
// writing one JSON document per line.
func TestRunWorkersRampUpAppend(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--model", "mock-llm", "--dataset-name", "random", "--num-prompts", "4",
		"--random-input-len", "16", "--random-output-len", "2", "--max-connections-per-worker", "2",
		"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "100", "--ramp-up-end-rps", "102",
		"--append-result", "--result-dir", dir, "--result-filename", "runs.jsonl"}
	for run := 0; run < 2; run++ {
		stdout, stderr, err := runAgainstMock(t, context.Background(), mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond}, args...)
		if err != nil {
			t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
		}
		banner := "Traffic ramp-up strategy: linear.\n" +
			"Will increase RPS from 100 to 102 RPS over the duration of the benchmark.\n" +
			"Burstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: None\nnum_workers: 2\n"
		if !strings.Contains(stdout, "Starting main benchmark run...\n"+banner) {
			t.Errorf("stdout lacks the banner\n%s\nafter the main-run line:\n%s", banner, stdout)
		}
		block := "============ Serving Benchmark Result ============\n" +
			"Number of worker processes:              2         \n" +
			"Successful requests:                     4         \n"
		if !strings.Contains(stdout, block) {
			t.Errorf("stdout lacks\n%s\n%s", block, stdout)
		}
	}
	saved, err := os.ReadFile(filepath.Join(dir, "runs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(saved), "\n")
	if len(docs) != 2 {
		t.Fatalf("appended file has %d lines, want 2:\n%s", len(docs), saved)
	}
	for _, doc := range docs {
		keys := jsonKeys(t, []byte(doc))
		i := slices.Index(keys, "max_concurrency")
		if i < 0 || !slices.Equal(keys[i:i+4], []string{"max_concurrency", "ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps"}) {
			t.Errorf("ramp-up keys do not follow max_concurrency: %q", keys)
		}
		if j := slices.Index(keys, "rps_change_events"); j < 0 || keys[j-1] != "rtfx" {
			t.Errorf("rps_change_events missing or not right after rtfx: %q", keys)
		}
		var res struct {
			Events []struct {
				RPS       int    `json:"rps"`
				Timestamp string `json:"timestamp"`
			} `json:"rps_change_events"`
		}
		if err := json.Unmarshal([]byte(doc), &res); err != nil {
			t.Fatal(err)
		}
		var rps []int
		for _, e := range res.Events {
			rps = append(rps, e.RPS)
			if _, err := time.Parse("2006-01-02T15:04:05.999999", e.Timestamp); err != nil {
				t.Errorf("event timestamp %q is not an isoformat() local time: %v", e.Timestamp, err)
			}
		}
		if !slices.Equal(rps, []int{100, 101, 102}) {
			t.Errorf("rps_change_events rates %v, want [100 101 102]", rps)
		}
	}
}

// TestRunFailures: a run that raises in Python ends with the same
// exception, after the same stdout lines, and without a result block.
func TestRunFailures(t *testing.T) {
	tests := []struct {
		name string
		mock mock.Config
		args []string
		// stdoutEnd is how stdout ends when the exception is raised.
		stdoutEnd string
		errType   string
		errMsg    string
		// notOnStderr must not have been logged.
		notOnStderr string
	}{
		{
			name: "endpoint suffix, main run",
			args: []string{"--backend", "openai-chat"},
			stdoutEnd: "Starting initial single prompt test run...\nSkipping endpoint ready check.\n" +
				"Starting main benchmark run...\nTraffic request rate: inf\n" +
				"Burstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: None\n",
			errType: "ValueError",
			errMsg:  "OpenAI Chat Completions API URL must end with one of: {'chat/completions', 'profile'}.",
		},
		{
			name:      "endpoint suffix, warm-up",
			args:      []string{"--backend", "openai-chat", "--num-warmups", "1"},
			stdoutEnd: "Skipping endpoint ready check.\nWarming up with 1 requests...\n",
			errType:   "ValueError",
			errMsg:    "OpenAI Chat Completions API URL must end with one of: {'chat/completions', 'profile'}.",
		},
		{
			name: "zero request rate",
			args: []string{"--request-rate", "0"},
			stdoutEnd: "Starting main benchmark run...\nTraffic request rate: 0.0\n" +
				"Burstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: None\n",
			errType: "AssertionError",
			errMsg:  "Obtained non-positive request rate 0.0.",
		},
		{
			name:      "negative request rate",
			args:      []string{"--request-rate", "-2.5"},
			stdoutEnd: "Traffic request rate: -2.5\nBurstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: None\n",
			errType:   "AssertionError",
			errMsg:    "Obtained non-positive request rate -2.5.",
		},
		{
			name:      "linear ramp-up from zero",
			args:      []string{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "0", "--ramp-up-end-rps", "5"},
			stdoutEnd: "Will increase RPS from 0 to 5 RPS over the duration of the benchmark.\nBurstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: None\n",
			errType:   "AssertionError",
			errMsg:    "Obtained non-positive request rate 0.0.",
		},
		{
			name:      "zero burstiness",
			args:      []string{"--request-rate", "5", "--burstiness", "0"},
			stdoutEnd: "Traffic request rate: 5.0\nBurstiness factor: 0.0 (Gamma distribution)\nMaximum request concurrency: None\n",
			errType:   "AssertionError",
			errMsg:    "A positive burstiness factor is expected, but given 0.0.",
		},
		{
			name:      "test request rejected",
			args:      []string{"--served-model-name", "no-such-model", "--ready-check-timeout-sec", "1"},
			stdoutEnd: "Starting initial single prompt test run...\nWaiting for endpoint to become up in 1 seconds\n",
			errType:   "ValueError",
			errMsg:    "Initial test run failed - Please make sure benchmark arguments are correctly specified. Error: Not Found",
		},
		{
			name:        "test request still running at the deadline",
			mock:        mock.Config{TTFT: 5 * time.Second},
			args:        []string{"--ready-check-timeout-sec", "1"},
			stdoutEnd:   "Waiting for endpoint to become up in 1 seconds\n",
			errType:     "ValueError",
			errMsg:      "Initial test run failed - Please make sure benchmark arguments are correctly specified. Error: Endpoint readiness timed out after 1s.",
			notOnStderr: "Endpoint is not ready",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--model", "mock-llm", "--dataset-name", "random", "--num-prompts", "2",
				"--random-input-len", "16", "--random-output-len", "2"}, tt.args...)
			stdout, stderr, err := runAgainstMock(t, context.Background(), tt.mock, args...)
			var ve *py.Error
			if !errors.As(err, &ve) || ve.Type != tt.errType || ve.Msg != tt.errMsg {
				t.Fatalf("Run error %#v (%v), want %s: %s", err, err, tt.errType, tt.errMsg)
			}
			if !strings.HasSuffix(stdout, tt.stdoutEnd) {
				t.Errorf("stdout:\n%s\nwant it to end with:\n%s", stdout, tt.stdoutEnd)
			}
			if strings.Contains(stdout, "Serving Benchmark Result") {
				t.Errorf("a failed run printed a result block:\n%s", stdout)
			}
			if tt.notOnStderr != "" && strings.Contains(stderr, tt.notOnStderr) {
				t.Errorf("stderr logs %q:\n%s", tt.notOnStderr, stderr)
			}
		})
	}
}

// runAgainstMockCancelled is runAgainstMock with the run cancelled (as by
// Ctrl-C) once the mock's counters satisfy when; it also returns the
// mock's counters as they stood when Run returned.
func runAgainstMockCancelled(t *testing.T, cfg mock.Config, when func(mock.Stats) bool, args ...string) (stdout, stderr string, atReturn mock.Stats, err error) {
	t.Helper()
	srv := startTinyMock(t, cfg)
	c, err := benchtest.ParseArgs(append([]string{"--base-url", "http://" + srv.Addr(), "--tokenizer", tinyTokenizer,
		"--disable-tqdm"}, args...), benchtest.NoEnv)
	if err != nil {
		t.Fatalf("parseArgs: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	returned := make(chan struct{})
	go func() {
		for !when(srv.Stats()) {
			select {
			case <-returned:
				return
			case <-time.After(time.Millisecond):
			}
		}
		cancel()
	}()
	var out, errOut bytes.Buffer
	err = Run(ctx, c, &out, &errOut)
	atReturn = srv.Stats()
	close(returned)
	return out.String(), errOut.String(), atReturn, err
}

// TestRunInterrupted: cancelling the run (Ctrl-C) mid-way stops it early,
// and what was measured is still printed and saved.
func TestRunInterrupted(t *testing.T) {
	dir := t.TempDir()
	// Cancel once the main run's streams are generating (the ready check
	// is skipped: no --ready-check-timeout-sec).
	mainRunning := func(s mock.Stats) bool { return s.Tokens > 0 }
	stdout, stderr, _, err := runAgainstMockCancelled(t, mock.Config{TTFT: time.Millisecond, ITL: 20 * time.Millisecond}, mainRunning,
		"--model", "mock-llm", "--dataset-name", "random", "--num-prompts", "4", "--random-input-len", "16",
		"--random-output-len", "500", "--cancel-grace-sec", "0",
		"--save-result", "--result-dir", dir, "--result-filename", "r.json")
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	// Each stream would take 10 s to finish: a run that ignored the
	// cancellation would complete all four.
	if saved, err := os.ReadFile(filepath.Join(dir, "r.json")); err == nil {
		var r struct{ Completed int }
		if err := json.Unmarshal(saved, &r); err != nil || r.Completed >= 4 {
			t.Errorf("interrupted run completed %d of 4 streams (%v); want them cut off", r.Completed, err)
		}
	}
	if !strings.Contains(stderr, "Interrupted: stopped sending") {
		t.Errorf("stderr does not say the run was interrupted:\n%s", stderr)
	}
	if !strings.Contains(stdout, "============ Serving Benchmark Result ============\n") ||
		!strings.HasSuffix(stdout, strings.Repeat("=", 50)+"\n") {
		t.Errorf("no result block after the interrupt:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "r.json")); err != nil {
		t.Errorf("result not saved after the interrupt: %v", err)
	}
}

// TestRunBadMetadata: Python raises for a --metadata item without "="
// when it builds the result dict after the run, saved or not; the result
// block is printed by then, and nothing is saved.
func TestRunBadMetadata(t *testing.T) {
	for _, save := range []bool{false, true} {
		dir := t.TempDir()
		args := []string{"--model", "mock-llm", "--dataset-name", "random", "--num-prompts", "2",
			"--random-input-len", "16", "--random-output-len", "2", "--metadata", "site=lab", "gpu",
			"--result-dir", dir, "--result-filename", "r.json"}
		if save {
			args = append(args, "--save-result")
		}
		stdout, _, err := runAgainstMock(t, context.Background(), mock.Config{}, args...)
		var ve *py.Error
		if !errors.As(err, &ve) || ve.Type != "ValueError" || ve.Msg != "Invalid metadata format. Please use KEY=VALUE format." {
			t.Fatalf("save %v: Run error %v, want Python's ValueError for the metadata", save, err)
		}
		if !strings.HasSuffix(stdout, strings.Repeat("=", 50)+"\n") {
			t.Errorf("save %v: the result block is not printed before the error:\n%s", save, stdout)
		}
		if _, err := os.Stat(filepath.Join(dir, "r.json")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("save %v: result file written despite the error (%v)", save, err)
		}
	}
}

// TestRunInterruptedBeforeMainRun: Ctrl-C during the ready check or the
// warm-ups ends the run there, with the context's error and without a
// main run or result block.
func TestRunInterruptedBeforeMainRun(t *testing.T) {
	for _, phase := range [][]string{
		{"--ready-check-timeout-sec", "30"},
		{"--num-warmups", "2"},
	} {
		args := append([]string{"--model", "mock-llm", "--dataset-name", "random", "--num-prompts", "2",
			"--random-input-len", "16", "--random-output-len", "2", "--cancel-grace-sec", "0"}, phase...)
		// Cancel once the first request (the ready check) reached the
		// mock, which answers it only after 10 s.
		arrived := func(s mock.Stats) bool { return s.Scheduled >= 1 }
		stdout, _, atReturn, err := runAgainstMockCancelled(t, mock.Config{TTFT: 10 * time.Second}, arrived, args...)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%v: Run error %v, want context.Canceled", phase, err)
		}
		// The run returned before the mock answered anything: it did not
		// wait the request out.
		if atReturn.Tokens != 0 {
			t.Errorf("%v: the mock had sent %d tokens when the interrupted run returned", phase, atReturn.Tokens)
		}
		for _, notPrinted := range []string{"Initial test run completed.", "Warmup run completed.", "Starting main benchmark run..."} {
			if strings.Contains(stdout, notPrinted) {
				t.Errorf("%v: stdout has %q after the interrupt:\n%s", phase, notPrinted, stdout)
			}
		}
	}
}

func TestLastErrorLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Not Found", "Not Found"},
		{"", ""},
		{"Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad\n", "ValueError: bad"},
		{"  indented only  \n\n", "  indented only"},
		{"first\n  second\t\r\n", "  second"},
	}
	for _, tt := range tests {
		if got := lastErrorLine(tt.in); got != tt.want {
			t.Errorf("lastErrorLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRunModelNames: --served-model-name is what requests ask for while
// the result names --model; --lora-modules replaces it per request (here
// round-robin over one adapter the server has and one it lacks), but not
// for the test request and warm-ups.
func TestRunModelNames(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, err := runAgainstMock(t, context.Background(), mock.Config{},
		"--model", "org/local-checkpoint", "--served-model-name", "mock-llm",
		"--lora-modules", "mock-llm", "missing-adapter", "--lora-assignment", "round-robin",
		"--ready-check-timeout-sec", "600", "--num-warmups", "1",
		"--dataset-name", "random", "--num-prompts", "4", "--random-input-len", "16", "--random-output-len", "2",
		"--save-result", "--save-detailed", "--result-dir", dir)
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	for _, want := range []string{
		"Initial test run completed.\n",
		"Failed requests during benchmark run detected (capping to 10):\nError 0: Not Found\nError 1: Not Found\n" +
			"tip: install termplotlib and gnuplot to plot the metrics\n",
		"Successful requests:                     2         \nFailed requests:                         2         \n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// The default name takes the model's last path element.
	files, _ := filepath.Glob(filepath.Join(dir, "openai-infqps-local-checkpoint-*[0-9].json"))
	if len(files) != 1 {
		t.Fatalf("result files %v, want one openai-infqps-local-checkpoint-<date>.json", files)
	}
	saved, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		ModelID string   `json:"model_id"`
		Errors  []string `json:"errors"`
	}
	if err := json.Unmarshal(saved, &res); err != nil {
		t.Fatal(err)
	}
	if res.ModelID != "org/local-checkpoint" || !slices.Equal(res.Errors, []string{"", "Not Found", "", "Not Found"}) {
		t.Errorf("model_id %q, errors %q; want org/local-checkpoint and the adapter's requests failed", res.ModelID, res.Errors)
	}
}

// TestRunInterruptedLeavesOutUnsent: requests an interrupt kept from being
// sent measured nothing, so they are neither successes nor failures; the
// request in flight when the grace ran out is a failure, "cancelled".
func TestRunInterruptedLeavesOutUnsent(t *testing.T) {
	// Cancel once the first main request is generating (the ready check
	// is skipped: no --ready-check-timeout-sec).
	mainRunning := func(s mock.Stats) bool { return s.Tokens > 0 }
	stdout, stderr, _, err := runAgainstMockCancelled(t, mock.Config{TTFT: time.Millisecond, ITL: 20 * time.Millisecond}, mainRunning,
		"--model", "mock-llm", "--dataset-name", "random", "--num-prompts", "4", "--random-input-len", "16",
		"--random-output-len", "500", "--max-concurrency", "1", "--cancel-grace-sec", "0")
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	for _, want := range []string{
		"Successful requests:                     0         \n",
		"Failed requests:                         1         \n",
		"Error 0: cancelled\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "(3 never sent are left out)") {
		t.Errorf("stderr does not count the unsent requests:\n%s", stderr)
	}
}

// TestRunSecondInterrupt: after the first Ctrl-C, a grace that would
// outlast the test is cut short by the second (the hard stop): the block
// is printed, the result saved, and its counts add up: every request sent
// either completed or failed "cancelled".
func TestRunSecondInterrupt(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hard := make(chan struct{})
	time.AfterFunc(500*time.Millisecond, func() {
		cancel()
		time.AfterFunc(100*time.Millisecond, func() { close(hard) })
	})
	stdout, stderr, err := runAgainstMock(t, endpoint.WithHardStop(ctx, hard), mock.Config{TTFT: time.Millisecond, ITL: 20 * time.Millisecond},
		"--model", "mock-llm", "--dataset-name", "random", "--num-prompts", "6", "--random-input-len", "16",
		"--random-output-len", "500", "--max-concurrency", "3", "--cancel-grace-sec", "3600",
		"--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "r.json")
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if !strings.Contains(stderr, "Interrupted again: stopped at once") {
		t.Errorf("stderr does not say the run was stopped at once:\n%s", stderr)
	}
	if !strings.Contains(stdout, "============ Serving Benchmark Result ============\n") ||
		!strings.HasSuffix(stdout, strings.Repeat("=", 50)+"\n") {
		t.Errorf("no result block after the second interrupt:\n%s", stdout)
	}
	saved, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatalf("result not saved after the second interrupt: %v", err)
	}
	var res struct {
		Completed, Failed int
		Errors            []string
	}
	if err := json.Unmarshal(saved, &res); err != nil {
		t.Fatal(err)
	}
	cancelled := 0
	for _, e := range res.Errors {
		switch e {
		case "":
		case "cancelled":
			cancelled++
		default:
			t.Errorf("error %q; want only cancelled requests", e)
		}
	}
	if res.Completed+res.Failed != len(res.Errors) || res.Failed != cancelled || cancelled == 0 || len(res.Errors) > 6 {
		t.Errorf("completed %d + failed %d vs %d requests sent, %d cancelled", res.Completed, res.Failed, len(res.Errors), cancelled)
	}
	if want := fmt.Sprintf("Failed requests:                         %-10d\n", res.Failed); !strings.Contains(stdout, want) {
		t.Errorf("printed block and saved result disagree; want %q in:\n%s", want, stdout)
	}
}
