package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/report/reporttest"
)

func TestParetoFront(t *testing.T) {
	// (latency, throughput): b beats a; c is slower than b for less; d is
	// the fastest and the only one above all others.
	lat := []float64{10, 8, 12, 30, math.NaN()}
	tput := []float64{100, 150, 120, 300, 999}
	if got := paretoFront(lat, tput); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("front %v, want [1 3]", got)
	}
}

// TestReportSweep: a saved sweep is drawn with a chart per latency and
// its points' results beside it are compared.
func TestReportSweep(t *testing.T) {
	dir := t.TempDir()
	res := &SweepResult{Axes: []SweepAxis{{Flag: "max-concurrency", Values: []string{"1", "4"}}}, NumRuns: 1}
	for i, c := range []string{"1", "4"} {
		name := "mc" + c + ".json"
		body := `{"duration": 1.0, "completed": 2, "start_times": [0.0, 0.5], "ttfts": [0.01, 0.02],
			"latencies": [0.1, 0.2], "output_lens": [3, 3], "itls": [[0.01, 0.02], [0.01, 0.03]], "errors": ["", ""]}`
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		res.Rows = append(res.Rows, SweepRow{Point: "max-concurrency=" + c, Files: []string{name},
			Metrics: PointMetrics{OutputThroughput: float64(100 * (i + 1)), TTFTP99: float64(10 * (i + 1)),
				TPOTP99: 5, ITLP99: 5, E2ELP99: float64(100 * (i + 1))}})
	}
	if err := res.Save(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, SweepFileJSON)
	if !IsSweepFile(path) || IsSweepFile(filepath.Join(dir, "mc1.json")) {
		t.Fatal("sweep.json not told apart from a result")
	}
	sw, runs, err := LoadReportSweep(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[1].Name != "max-concurrency=4" {
		t.Fatalf("runs %d", len(runs))
	}
	var out bytes.Buffer
	if err := WriteReport(&out, runs, ReportOptions{Sweeps: []*ReportSweep{sw}}); err != nil {
		t.Fatal(err)
	}
	marks := reporttest.ChartMarks(out.String())
	for _, id := range []string{"sweep-0-ttft", "sweep-0-e2el"} {
		if marks[id] != 2 {
			t.Errorf("%s: %d marks, want the points and the front", id, marks[id])
		}
	}
	if marks["cdf-ttft"] != 2 {
		t.Errorf("the points' TTFT CDFs: %d lines, want 2", marks["cdf-ttft"])
	}
	if !strings.Contains(out.String(), "max-concurrency=4") {
		t.Error("the sweep table lacks its points")
	}
	reporttest.CheckSelfContained(t, out.String())
}
