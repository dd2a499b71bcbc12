package bench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/bench/search"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// mockRunFile runs a detailed benchmark against a mock with the given
// inter-token latency and returns the result file.
func mockRunFile(t *testing.T, dir, name string, itl time.Duration) string {
	t.Helper()
	_, stderr, err := runAgainstMock(t, context.Background(),
		mock.Config{TTFT: 20 * time.Millisecond, ITL: itl, MaxNumSeqs: 32},
		"--model", "mock-llm", "--dataset-name", "random", "--random-input-len", "16", "--random-output-len", "12",
		"--num-prompts", "120", "--max-concurrency", "8", "--save-result", "--save-detailed",
		"--result-dir", dir, "--result-filename", name)
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, stderr)
	}
	return filepath.Join(dir, name)
}

// Two runs of one setting do not differ; a server 2 ms slower per token
// does, in every ITL and TPOT statistic, by the per-request test.
func TestCompareMockRuns(t *testing.T) {
	dir := t.TempDir()
	a := mockRunFile(t, dir, "a.json", 10*time.Millisecond)
	b := mockRunFile(t, dir, "b.json", 10*time.Millisecond)
	slow := mockRunFile(t, dir, "slow.json", 12*time.Millisecond)

	// At α = 0.001: the ITL rows share one per-request test, the TPOT rows
	// another, so two same-setting comparisons could each be a false
	// alarm at rate α; 10 against 12 ms per token is far below it. TTFT,
	// E2EL and the throughputs carry the client's connects and a busy
	// machine's stalls, which differ between two runs of one setting; the
	// gaps between tokens are the mock's own schedule, so only their rows
	// must agree.
	c := search.Compare(benchtest.CompareSides(t, a, b, slow), search.CompareOptions{Alpha: 0.001})
	for _, r := range c.Rows {
		if !strings.Contains(r.Metric, "itl") && !strings.Contains(r.Metric, "tpot") {
			continue
		}
		if same := r.Versus[0]; same.Significant {
			t.Errorf("%s: same setting reported different (p %v, Δ %v%%)", r.Metric, *same.P, *same.DeltaPct)
		}
	}
	// E2EL is outside the default --percentile-metrics: its row is the
	// per-request median.
	for _, m := range []string{"mean_itl_ms", "median_itl_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms", "sample_median_e2el_ms"} {
		r := benchtest.CompareRow(t, c, m)
		cell := r.Versus[1]
		if cell.Test != "mann-whitney" || !cell.Significant {
			t.Errorf("%s: ITL 10 vs 12 ms: test %q p %v significant %v", m, cell.Test, cell.P, cell.Significant)
		}
		// A p99 over 120 requests is the second highest: one stall of a
		// loaded machine moves it, so only the centres must order.
		if !strings.HasPrefix(m, "p99") && *r.Values[2] <= *r.Values[0] {
			t.Errorf("%s: slower server %v not above %v", m, *r.Values[2], *r.Values[0])
		}
	}
	var out strings.Builder
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "mean_itl_ms") || !strings.Contains(out.String(), "yes") {
		t.Errorf("table lacks the ITL row or a verdict:\n%s", out.String())
	}
}
