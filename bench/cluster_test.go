package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/cluster"
	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// TestClusterRunInProcess runs three agents of one run against one mock,
// and holds agent 0's merged result to a single host's run of the same
// flags: the same requests, each once, the same token counts.
func TestClusterRunInProcess(t *testing.T) {
	srv := startTinyMock(t, mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond})
	const n = 30
	args := func(dir string, extra ...string) []string {
		return append([]string{"--base-url", "http://" + srv.Addr(), "--tokenizer", tinyTokenizer, "--disable-tqdm",
			"--model", "mock-llm", "--dataset-name", "random", "--num-prompts", fmt.Sprint(n), "--random-input-len", "16",
			"--random-output-len", "6", "--request-rate", "300", "--max-concurrency", "8", "--save-result", "--save-detailed",
			"--result-dir", dir, "--result-filename", "run.json", "--seed", "3"}, extra...)
	}
	singleDir := t.TempDir()
	c, err := benchtest.ParseArgs(args(singleDir), benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), c, new(bytes.Buffer), new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}

	clusterDir := t.TempDir()
	const size = 3
	stdout, stderr := runAgents(t, size, args(clusterDir), func(i int) []string {
		return []string{"--save-partial", filepath.Join(clusterDir, fmt.Sprintf("part%d.bin", i))}
	})
	if !strings.Contains(stdout, "Serving Benchmark Result") {
		t.Fatalf("agent 0 printed no result block:\n%s\n%s", stdout, stderr)
	}
	if !strings.Contains(stderr, "cluster of 3 agents, clocks against agent 0") {
		t.Errorf("agent 0 did not report the agents' clocks:\n%s", stderr)
	}

	single, merged := readJSON(t, filepath.Join(singleDir, "run.json")), readJSON(t, filepath.Join(clusterDir, "run.json"))
	for _, key := range []string{"completed", "failed", "total_input_tokens", "total_output_tokens", "input_lens", "output_lens", "num_prompts"} {
		a, _ := json.Marshal(single[key])
		b, _ := json.Marshal(merged[key])
		if !bytes.Equal(a, b) {
			t.Errorf("%s: cluster %s, single host %s", key, b, a)
		}
	}
	if merged["completed"] != float64(n) {
		t.Errorf("completed %v of %d", merged["completed"], n)
	}
	sidecar := readJSON(t, filepath.Join(clusterDir, "run.stampede.json"))
	cl, _ := sidecar["cluster"].(map[string]any)
	if agents, _ := cl["agents"].([]any); len(agents) != size {
		t.Errorf("sidecar's cluster: %v", sidecar["cluster"])
	}
	// The saved partials merge offline into the same result.
	var files []string
	for i := range size {
		files = append(files, filepath.Join(clusterDir, fmt.Sprintf("part%d.bin", i)))
	}
	m, err := cluster.MergePartialFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	var block bytes.Buffer
	if _, err := WriteMerged(func() *cluster.MergedRun { m.Params.SaveResult = false; return m }(), &block, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, block.String()) {
		t.Errorf("merging the saved partials prints\n%s\nagent 0 printed\n%s", block.String(), stdout)
	}
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// TestClusterAgentFailsFast: an agent other than 0 that fails before it
// registers (here its tokenizer cannot be read) tells agent 0, which
// stops the run at once with that agent's error text, well inside the
// minute of --cluster-timeout-sec (whose error would say "did not
// register").
func TestClusterAgentFailsFast(t *testing.T) {
	srv := startTinyMock(t, mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond})
	coordinator := fmt.Sprintf("127.0.0.1:%d", benchtest.FreePort(t))
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		tokenizer := tinyTokenizer
		if i == 1 {
			tokenizer = filepath.Join(t.TempDir(), "absent", "tokenizer.json")
		}
		c, err := benchtest.ParseArgs([]string{"--base-url", "http://" + srv.Addr(), "--tokenizer", tokenizer, "--disable-tqdm",
			"--model", "mock-llm", "--dataset-name", "random", "--num-prompts", "8", "--random-input-len", "8", "--random-output-len", "4",
			"--cluster-size", "2", "--cluster-index", fmt.Sprint(i), "--coordinator", coordinator, "--cluster-timeout-sec", "60"}, benchtest.NoEnv)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { errs[i] = Run(context.Background(), c, new(bytes.Buffer), new(bytes.Buffer)) })
	}
	wg.Wait()
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "absent") {
		t.Fatalf("agent 1: %v, want its tokenizer's error", errs[1])
	}
	if want := "cluster: agent 1 cannot take part in the run: " + errs[1].Error(); errs[0] == nil || !strings.Contains(errs[0].Error(), want) {
		t.Errorf("agent 0: %v, want %q", errs[0], want)
	}
}
