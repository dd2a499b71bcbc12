package report

import (
	"bytes"
	"strings"
	"testing"
)

// --sweep-summary-percentiles: a column per latency and percentile after
// the headline figures, in the table and the CSV, averaged over runs.
func TestSweepSummaryPercentileColumns(t *testing.T) {
	runs := []PointMetrics{
		{Extra: map[string]float64{"p90_ttft_ms": 10, "p90_tpot_ms": 2, "p90_e2el_ms": 100}},
		{Extra: map[string]float64{"p90_ttft_ms": 20, "p90_tpot_ms": 4, "p90_e2el_ms": 300}},
	}
	mean := MeanPoint(runs)
	if mean.Extra["p90_ttft_ms"] != 15 || mean.Extra["p90_e2el_ms"] != 200 {
		t.Errorf("mean extras %v", mean.Extra)
	}
	r := &SweepResult{Axes: []SweepAxis{{Flag: "max-concurrency", Values: []string{"4"}}}, NumRuns: 2,
		SummaryPercentiles: []float64{90, 99.5},
		Rows:               []SweepRow{{Point: "max-concurrency=4", Settings: []SweepSetting{{"max-concurrency", "4"}}, Runs: runs, Metrics: mean}}}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	head, row := strings.Fields(strings.Join(lines[1:2], "")), strings.Fields(lines[2])
	if !strings.HasSuffix(lines[1], "TTFT p90  TPOT p90  E2EL p90  TTFT p99.5  TPOT p99.5  E2EL p99.5") {
		t.Errorf("header %q", lines[1])
	}
	if len(row) < 6 || strings.Join(row[len(row)-6:], " ") != "15.00 3.00 200.00 - - -" {
		t.Errorf("row %q (header %q)", row, head)
	}
	rec := r.records(false)
	if k := rec[0][len(rec[0])-3]; k != "p99.5_ttft_ms" {
		t.Errorf("CSV key %q", k)
	}
}
