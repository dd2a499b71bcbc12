package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/datasets/tokenizer"
)

// localResult is what the tests compare of two runs' result JSON.
type localResult struct {
	Completed         int         `json:"completed"`
	Failed            int         `json:"failed"`
	NumPrompts        int         `json:"num_prompts"`
	TotalInputTokens  int         `json:"total_input_tokens"`
	TotalOutputTokens int         `json:"total_output_tokens"`
	InputLens         []int       `json:"input_lens"`
	OutputLens        []int       `json:"output_lens"`
	ITLs              [][]float64 `json:"itls"`
}

func readLocalResult(t *testing.T, path string) localResult {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r localResult
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func startLocalMock(t *testing.T, itl time.Duration) string {
	t.Helper()
	return "http://" + startMockServer(t, itl).Addr()
}

// startMockServer is startLocalMock's server itself, for its counters.
func startMockServer(t *testing.T, itl time.Duration) *mock.Server {
	t.Helper()
	tok, err := tokenizer.Load(tinyTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mock.Start(mock.Config{Tokenizer: tok, TTFT: 2 * time.Millisecond, ITL: itl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// TestClusterLocal runs one benchmark as `--cluster-size 3
// --cluster-local` and as one process with the same seed: one block on
// stdout, one result, and the same requests, prompt lengths and token
// counts (the merge is exact). With --results-to-log, stampede results
// extract recovers the saved files byte for byte from stdout.
func TestClusterLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four processes")
	}
	url := startLocalMock(t, time.Millisecond)
	flags := func(dir string) []string {
		return []string{"serve", "--base-url", url, "--model", "mock-llm", "--tokenizer", tinyTokenizer,
			"--dataset-name", "random", "--num-prompts", "45", "--random-input-len", "16", "--random-output-len", "8",
			"--request-rate", "300", "--max-concurrency", "9", "--seed", "11",
			"--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "run.json"}
	}
	oneDir, localDir := t.TempDir(), t.TempDir()
	one := startChild(t, append(flags(oneDir), "--disable-tqdm")...)
	if code, stderr := one.exitCode(t); code != 0 {
		t.Fatalf("one process exited %d:\n%s", code, strings.Join(stderr, "\n"))
	}
	local := startChild(t, append(flags(localDir), "--cluster-size", "3", "--cluster-local", "--results-to-log")...)
	code, stderr := local.exitCode(t)
	if code != 0 {
		t.Fatalf("--cluster-local exited %d:\n%s", code, strings.Join(stderr, "\n"))
	}
	out := local.stdout.String()
	if n := strings.Count(out, "Serving Benchmark Result"); n != 1 {
		t.Fatalf("%d result blocks on stdout, want 1:\n%s", n, out)
	}
	for _, line := range stderr {
		if !strings.HasPrefix(line, "agent 0: ") && !strings.HasPrefix(line, "agent 1: ") && !strings.HasPrefix(line, "agent 2: ") && line != "" {
			t.Errorf("stderr line without an agent's prefix: %q", line)
		}
	}
	if !slices.ContainsFunc(stderr, func(l string) bool { return strings.HasPrefix(l, "agent 2: stampede: agent 2 sent its partial result") }) {
		t.Errorf("agent 2's stderr is missing:\n%s", strings.Join(stderr, "\n"))
	}
	a, b := readLocalResult(t, filepath.Join(oneDir, "run.json")), readLocalResult(t, filepath.Join(localDir, "run.json"))
	if a.Completed != 45 || b.Completed != a.Completed || b.Failed != a.Failed || b.NumPrompts != a.NumPrompts ||
		b.TotalInputTokens != a.TotalInputTokens || b.TotalOutputTokens != a.TotalOutputTokens ||
		!slices.Equal(a.InputLens, b.InputLens) || !slices.Equal(a.OutputLens, b.OutputLens) || len(b.ITLs) != len(a.ITLs) {
		t.Errorf("--cluster-local: %d completed, %d failed, %d+%d tokens; one process: %d completed, %d failed, %d+%d tokens",
			b.Completed, b.Failed, b.TotalInputTokens, b.TotalOutputTokens, a.Completed, a.Failed, a.TotalInputTokens, a.TotalOutputTokens)
	}

	logFile := filepath.Join(t.TempDir(), "agent0.log")
	if err := os.WriteFile(logFile, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	extracted := t.TempDir()
	var xout, xerr strings.Builder
	if code := run(t.Context(), []string{"results", "extract", "-o", extracted, logFile}, &xout, &xerr); code != 0 {
		t.Fatalf("results extract exited %d: %s", code, xerr.String())
	}
	for _, name := range []string{"run.json", "run.stampede.json"} {
		want, err := os.ReadFile(filepath.Join(localDir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(extracted, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s extracted from the log differs from the saved one (%v)", name, err)
		}
	}
	cut := out[:strings.Index(out, "end: ")]
	var cerr strings.Builder
	if code := runResults([]string{"extract", "-o", t.TempDir()}, strings.NewReader("a block\n"), &strings.Builder{}, &cerr); code != exitError ||
		!strings.Contains(cerr.String(), "--results-to-log") {
		t.Errorf("extract from stdin without a bundle: exit %d, %q; want 1 asking for --results-to-log", code, cerr.String())
	}
	if err := os.WriteFile(logFile, []byte(cut), 0o600); err != nil {
		t.Fatal(err)
	}
	cerr.Reset()
	if code := run(t.Context(), []string{"results", "extract", "-o", t.TempDir(), logFile}, &strings.Builder{}, &cerr); code != exitError ||
		!strings.Contains(cerr.String(), "the log is truncated") {
		t.Errorf("a cut log: exit %d, %q; want 1 saying it is truncated", code, cerr.String())
	}
}

// TestClusterLocalInterrupted sends the launcher SIGINT in the middle of
// the run: every agent stops, and agent 0 still prints and saves the
// merged result; the status is agent 0's, 130.
func TestClusterLocalInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four processes")
	}
	srv := startMockServer(t, 20*time.Millisecond)
	url := "http://" + srv.Addr()
	dir := t.TempDir()
	c := startChild(t, "serve", "--base-url", url, "--model", "mock-llm", "--tokenizer", tinyTokenizer,
		"--dataset-name", "random", "--num-prompts", "600", "--random-input-len", "16", "--random-output-len", "50",
		"--request-rate", "100", "--max-concurrency", "30", "--cancel-grace-sec", "0.2", "--disable-tqdm",
		"--save-result", "--result-dir", dir, "--result-filename", "run.json", "--cluster-size", "2", "--cluster-local")
	c.waitLine(t, "agent 1: stampede: agent 1 of 2: clock offset")
	// SIGINT once the mock has answered some requests and before it has
	// answered all: each stream lasts a second at least (50 tokens 20 ms
	// apart), so the run is mid-way however slowly the machine goes.
	for tries := 0; srv.Stats().Finished < 30; tries++ {
		if tries == 6000 {
			t.Fatalf("the mock answered %d requests in a minute, want 30 before the interrupt", srv.Stats().Finished)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code, stderr := c.exitCode(t)
	if code != 130 {
		t.Fatalf("exit %d, want 130:\n%s", code, strings.Join(stderr, "\n"))
	}
	if n := strings.Count(c.stdout.String(), "Serving Benchmark Result"); n != 1 {
		t.Errorf("%d result blocks, want 1:\n%s", n, c.stdout.String())
	}
	// Python's JSON of an interrupted run may hold NaN, which
	// encoding/json does not read: the counts are read by pattern.
	body, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	count := func(key string) int {
		m := regexp.MustCompile(`"` + key + `": ([0-9]+)`).FindSubmatch(body)
		if m == nil {
			t.Fatalf("the result has no %s", key)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	if done := count("completed") + count("failed"); done == 0 || done >= 600 {
		t.Errorf("the interrupted run saved %d requests of 600", done)
	}
}

// TestClusterLocalUsage: a bad command line exits 2 before any agent
// starts (no agent's prefixed line).
func TestClusterLocalUsage(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--model", "m", "--cluster-local"},
		{"serve", "--model", "m", "--cluster-size", "2", "--cluster-local", "--cluster-index", "1"},
		{"serve", "--model", "m", "--cluster-size", "2", "--cluster-local", "--coordinator", "127.0.0.1:1"},
		{"serve", "--model", "m", "--cluster-size", "2", "--cluster-local", "--no-such-flag"},
	} {
		var stdout, stderr strings.Builder
		code := run(t.Context(), args, &stdout, &stderr)
		if code != exitUsage || strings.Contains(stderr.String(), "agent 0: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 from the launcher", args, code, stderr.String())
		}
	}
}

// TestResultsToLogOneHost: one process with --results-to-log prints the
// result JSON and sidecar after its block, and extract writes them back
// byte for byte; a run that saved nothing prints an empty bundle, which
// extract reports.
func TestResultsToLogOneHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the command in a child process")
	}
	url := startLocalMock(t, time.Millisecond)
	dir := t.TempDir()
	args := []string{"serve", "--base-url", url, "--model", "mock-llm", "--tokenizer", tinyTokenizer,
		"--dataset-name", "random", "--num-prompts", "6", "--random-input-len", "8", "--random-output-len", "4",
		"--disable-tqdm", "--results-to-log"}
	c := startChild(t, append(args, "--save-result", "--result-dir", dir, "--result-filename", "one.json")...)
	if code, stderr := c.exitCode(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, strings.Join(stderr, "\n"))
	}
	out := c.stdout.String()
	if b, e := strings.Index(out, "Serving Benchmark Result"), strings.Index(out, "=== stampede results "); b < 0 || e < b {
		t.Fatalf("the bundle is not after the block:\n%s", out)
	}
	extracted := t.TempDir()
	var xout, xerr strings.Builder
	if code := runResults([]string{"extract", "-o", extracted, "-"}, strings.NewReader(out), &xout, &xerr); code != 0 {
		t.Fatalf("extract exited %d: %s", code, xerr.String())
	}
	for _, name := range []string{"one.json", "one.stampede.json"} {
		want, _ := os.ReadFile(filepath.Join(dir, name))
		got, err := os.ReadFile(filepath.Join(extracted, name))
		if err != nil || len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("%s: extracted %d bytes, saved %d (%v)", name, len(got), len(want), err)
		}
	}

	c = startChild(t, args...)
	if code, stderr := c.exitCode(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, strings.Join(stderr, "\n"))
	}
	xerr.Reset()
	if code := runResults([]string{"extract", "-o", t.TempDir()}, strings.NewReader(c.stdout.String()), &xout, &xerr); code != 0 ||
		!strings.Contains(xerr.String(), "the run saved no file") {
		t.Errorf("a run that saved nothing: extract exited %d, %q", code, xerr.String())
	}
}

// TestResultsUsage: the verb and its arguments are checked (exit 2).
func TestResultsUsage(t *testing.T) {
	for _, args := range [][]string{{"results"}, {"results", "unpack"}, {"results", "extract", "a.log", "b.log"}, {"results", "extract", "-x"}} {
		var stdout, stderr strings.Builder
		if code := run(t.Context(), args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "usage: stampede results extract") {
			t.Errorf("%v: exit %d, stderr %q; want 2 with the usage", args, code, stderr.String())
		}
	}
	var stdout strings.Builder
	if code := run(t.Context(), []string{"results", "--help"}, &stdout, &strings.Builder{}); code != exitOK || !strings.Contains(stdout.String(), "kubectl logs") {
		t.Errorf("results --help: exit %d, %q", code, stdout.String())
	}
}

// TestAgentsRefusedAtParse: the commands that cannot run a cluster's
// agents refuse --cluster-local and --cluster-size above 1 when they
// parse their command line, with exit 2 naming the flag, the command and
// why, before they read a dataset or reach a server (both absent here).
func TestAgentsRefusedAtParse(t *testing.T) {
	dir := t.TempDir()
	conversations := filepath.Join(dir, "conversations.json")
	if err := os.WriteFile(conversations, []byte(`[{"id": "a", "messages": [{"role": "user", "content": "hi"}]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	serve := []string{"--base-url", "http://127.0.0.1:1", "--model", "m", "--dataset-name", "sharegpt",
		"--dataset-path", filepath.Join(dir, "absent.json")}
	local := []string{"--cluster-size", "2", "--cluster-local"}
	agents := []string{"--cluster-size", "2", "--cluster-index", "0", "--coordinator", "127.0.0.1:1"}
	rerunOf := func(argv []string) string {
		result := filepath.Join(dir, fmt.Sprintf("run%d.json", len(argv)))
		sidecar, _ := json.Marshal(map[string]any{"manifest": map[string]any{"argv": argv}})
		if err := os.WriteFile(result, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(strings.TrimSuffix(result, ".json")+".stampede.json", append(sidecar, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return result
	}
	join := func(parts ...[]string) []string { return slices.Concat(parts...) }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{join([]string{"sweep", "--sweep", "max-concurrency=2,4"}, serve, local), "argument --cluster-local: not allowed with stampede sweep"},
		{join([]string{"sweep", "--sweep", "cluster-size=1,2", "--cluster-index", "0", "--coordinator", "127.0.0.1:1"}, serve),
			"argument --cluster-size: invalid value 2 with stampede sweep"},
		{join([]string{"slo", "--goodput", "ttft:100"}, serve, agents), "argument --cluster-size: invalid value 2 with stampede slo"},
		{join([]string{"multiturn", "--input-file", conversations}, serve, local), "argument --cluster-local: not allowed with stampede multiturn"},
		{[]string{"rerun", rerunOf(join(serve, local))}, "argument --cluster-local: not allowed with stampede rerun"},
		{[]string{"rerun", rerunOf(join(serve, agents))}, "argument --cluster-size: invalid value 2 with stampede rerun"},
		{join([]string{"serve", "--num-runs", "2"}, serve, local), "argument --cluster-local: not allowed with --num-runs"},
		{join([]string{"serve", "--sweep-max-concurrency", "2,4"}, serve, agents), "invalid value 2 with --sweep-max-concurrency"},
	} {
		var stdout, stderr strings.Builder
		code := run(t.Context(), tc.args, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) || !strings.Contains(stderr.String(), "which ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 saying %q and why", tc.args, code, stderr.String(), tc.want)
		}
	}
}
