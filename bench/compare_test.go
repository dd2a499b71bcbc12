package bench

import (
	"context"
	"math"
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

// A server 2 ms slower per token is worse in every ITL and TPOT centre
// and in E2EL, each row judged on its own statistic by the per-request
// bootstrap. (Whether two runs of one setting agree depends on how busy
// the machine is; the verdict logic's own tests, on generated samples,
// cover "no change".)
func TestCompareMockRuns(t *testing.T) {
	dir := t.TempDir()
	a := mockRunFile(t, dir, "a.json", 10*time.Millisecond)
	slow := mockRunFile(t, dir, "slow.json", 12*time.Millisecond)

	c := search.Compare(benchtest.CompareSides(t, a, slow), search.CompareOptions{})
	// E2EL is outside the default --percentile-metrics: its row is the
	// per-request median.
	for _, m := range []string{"mean_itl_ms", "median_itl_ms", "mean_tpot_ms", "median_tpot_ms", "sample_median_e2el_ms"} {
		r := benchtest.CompareRow(t, c, m)
		cell := r.Versus[0]
		if cell.Test != "bootstrap" || cell.Verdict != search.VerdictWorse {
			t.Errorf("%s: ITL 10 vs 12 ms: test %q verdict %q interval %v..%v", m, cell.Test, cell.Verdict, deref(cell.CILowPct), deref(cell.CIHighPct))
		}
		if *r.Values[1] <= *r.Values[0] {
			t.Errorf("%s: slower server %v not above %v", m, *r.Values[1], *r.Values[0])
		}
	}
	var out strings.Builder
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "mean_itl_ms") || !strings.Contains(out.String(), "worse") {
		t.Errorf("table lacks the ITL row or a verdict:\n%s", out.String())
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
