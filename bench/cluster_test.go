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

	coordinator := fmt.Sprintf("127.0.0.1:%d", benchtest.FreePort(t))
	clusterDir := t.TempDir()
	const size = 3
	outs := make([]bytes.Buffer, size)
	errOuts := make([]bytes.Buffer, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for i := range size {
		c, err := benchtest.ParseArgs(args(clusterDir, "--cluster-size", fmt.Sprint(size), "--coordinator", coordinator,
			"--cluster-timeout-sec", "30", "--save-partial", filepath.Join(clusterDir, fmt.Sprintf("part%d.bin", i))),
			func(k string) string {
				if k == "JOB_COMPLETION_INDEX" {
					return fmt.Sprint(i)
				}
				return ""
			})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { errs[i] = Run(context.Background(), c, &outs[i], &errOuts[i]) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("agent %d: %v\n%s\n%s", i, err, outs[i].String(), errOuts[i].String())
		}
	}
	for i := 1; i < size; i++ {
		if strings.Contains(outs[i].String(), "Serving Benchmark Result") {
			t.Errorf("agent %d printed a result block; only agent 0 does", i)
		}
	}
	if !strings.Contains(outs[0].String(), "Serving Benchmark Result") {
		t.Fatalf("agent 0 printed no result block:\n%s\n%s", outs[0].String(), errOuts[0].String())
	}
	if !strings.Contains(errOuts[0].String(), "cluster of 3 agents, clocks against agent 0") {
		t.Errorf("agent 0 did not report the agents' clocks:\n%s", errOuts[0].String())
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
	parts, err := cluster.ReadPartialFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	m, err := cluster.MergePartials(parts)
	if err != nil {
		t.Fatal(err)
	}
	var block bytes.Buffer
	if _, err := cluster.WriteMerged(&block, new(bytes.Buffer), func() *cluster.MergedRun { m.Params.SaveResult = false; return m }(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(outs[0].String(), block.String()) {
		t.Errorf("merging the saved partials prints\n%s\nagent 0 printed\n%s", block.String(), outs[0].String())
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
