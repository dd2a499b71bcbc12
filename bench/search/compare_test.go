package search_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/bench/search"
)

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
	c := search.Compare(benchtest.CompareSides(t, a, b+","+b2+","+b3), search.CompareOptions{})
	if c.Runs[0] != 3 || c.Runs[1] != 3 {
		t.Fatalf("runs = %v, want [3 3]", c.Runs)
	}
	r := benchtest.CompareRow(t, c, "request_throughput")
	if cell := r.Versus[0]; cell.Test != "welch" || !cell.Significant {
		t.Errorf("10 vs 12 req/s over 3 runs each: %+v", cell)
	}
	for _, r := range c.Rows {
		if r.Metric == "mean_ttft_ms" || r.Metric == "label" {
			t.Errorf("NaN or a string read as a value: %+v", r)
		}
	}
}
