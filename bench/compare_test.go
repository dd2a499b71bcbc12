package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

func loadSides(t *testing.T, args ...string) []*CompareSide {
	t.Helper()
	var sides []*CompareSide
	for _, a := range args {
		s, err := LoadCompareSide(a)
		if err != nil {
			t.Fatal(err)
		}
		sides = append(sides, s)
	}
	return sides
}

func rowOf(t *testing.T, c *Comparison, metric string) ComparisonRow {
	t.Helper()
	for _, r := range c.Rows {
		if r.Metric == metric {
			return r
		}
	}
	t.Fatalf("no row %s", metric)
	return ComparisonRow{}
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
	c := Compare(loadSides(t, a, b, slow), CompareOptions{Alpha: 0.001})
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
		r := rowOf(t, c, m)
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

// Without per-request samples, repeated runs are compared at run level.
func TestCompareRunLevel(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o666); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Python writes NaN for the statistics of an empty list; --append-result
	// puts one run per line.
	a := write("a.json", `{"request_throughput": 10.1, "mean_ttft_ms": NaN}`+"\n"+`{"request_throughput": 10.3}`+"\n"+`{"request_throughput": 9.9}`)
	b := write("b1.json", `{"request_throughput": 12.0, "label": "x"}`)
	b2 := write("b2.json", `{"request_throughput": 12.2}`)
	b3 := write("b3.json", `{"request_throughput": 11.9}`)
	c := Compare(loadSides(t, a, b+","+b2+","+b3), CompareOptions{})
	if c.Runs[0] != 3 || c.Runs[1] != 3 {
		t.Fatalf("runs = %v, want [3 3]", c.Runs)
	}
	r := rowOf(t, c, "request_throughput")
	if cell := r.Versus[0]; cell.Test != "welch" || !cell.Significant {
		t.Errorf("10 vs 12 req/s over 3 runs each: %+v", cell)
	}
	for _, r := range c.Rows {
		if r.Metric == "mean_ttft_ms" || r.Metric == "label" {
			t.Errorf("NaN or a string read as a value: %+v", r)
		}
	}
}
