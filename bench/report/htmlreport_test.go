package report

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/report/reporttest"
)

// TestReportComparison: two results give one CDF line each.
func TestReportComparison(t *testing.T) {
	mk := func(scale float64) *ReportRun {
		res := map[string]any{"duration": 1.0, "completed": 3.0,
			"start_times": []any{0.0, 0.1, 0.2}, "ttfts": []any{0.01 * scale, 0.02 * scale, 0.03 * scale},
			"latencies": []any{0.1, 0.2, 0.3}, "output_lens": []any{3.0, 3.0, 3.0},
			"itls": []any{[]any{0.01, 0.02}, []any{0.01, 0.02}, []any{0.01, 0.02}}, "errors": []any{"", "", ""}}
		b, _ := json.Marshal(res)
		r, err := ParseReportRun("run", b, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var out bytes.Buffer
	if err := WriteReport(&out, []*ReportRun{mk(1), mk(2)}, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	if m := reporttest.ChartMarks(out.String()); m["cdf-ttft"] != 2 {
		t.Errorf("TTFT CDF has %d lines, want one per run", m["cdf-ttft"])
	}
}

func TestParseReportRunRejects(t *testing.T) {
	for _, in := range []string{`[1]`, `{"x": 1}`, `not json`} {
		if _, err := ParseReportRun("x", []byte(in), nil); err == nil {
			t.Errorf("%s: accepted", in)
		}
	}
}

// hostile is text a server or a file name can bring: it must reach the
// page as text, never as markup or script.
const hostile = `</script><script>alert(1)</script><img src=x onerror="alert(2)">`

// TestReportEscapesServerText feeds hostile strings through every place
// the report prints text it did not write: run names, the server's URL
// and error, health keys, sweep points and axes, and the timeline's
// errors.
func TestReportEscapesServerText(t *testing.T) {
	result := map[string]any{"duration": 1.0, "completed": 1.0, "failed": 1.0,
		"start_times": []any{0.0, 0.1}, "ttfts": []any{0.01, 0.0}, "latencies": []any{0.1, 0.0},
		"output_lens": []any{3.0, 0.0}, "itls": []any{[]any{0.01, 0.02}, []any{}}, "errors": []any{"", hostile}}
	body, _ := json.Marshal(result)
	sidecar, _ := json.Marshal(map[string]any{
		"health":         map[string]any{hostile: hostile},
		"server_metrics": map[string]any{"url": hostile, "scrapes": 0, "last_error": hostile},
		"errors": map[string]any{"failed": 1, "requests": 2, "url": hostile, "groups": []any{
			map[string]any{"count": 1, "status": 500, "reason": hostile, "message": hostile, "example_request_id": hostile}}},
	})
	r, err := ParseReportRun(hostile, body, sidecar)
	if err != nil {
		t.Fatal(err)
	}
	sweep := &ReportSweep{Name: hostile, Result: &SweepResult{
		Axes: []SweepAxis{{Flag: hostile}}, Rows: []SweepRow{{Point: hostile}}}}
	var out bytes.Buffer
	if err := WriteReport(&out, []*ReportRun{r, r}, ReportOptions{Title: hostile, Sweeps: []*ReportSweep{sweep}}); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	for _, markup := range []string{"<script>alert", "<img", `onerror="`} {
		if strings.Contains(page, markup) {
			t.Errorf("page holds %q: a server string was written as markup", markup)
		}
	}
	// The page's own scripts: the error catcher, the timeline's data and
	// script, and the self-check.
	if n := strings.Count(page, "</script>"); n != 4 {
		t.Errorf("%d </script>, want the page's own 4", n)
	}
}

// TestReportSummary: the summary shows the block's figures with its
// labels and its number forms, and the latency matrix has only the
// sections' statistics (not a probe's E2EL figures, whose keys look
// alike).
func TestReportSummary(t *testing.T) {
	body := []byte(`{"duration": 12.3456, "completed": 7, "failed": 1, "max_concurrency": 4,
		"max_concurrent_requests": 3, "request_rate": 5.0,
		"mean_ttft_ms": 1.234, "median_ttft_ms": 1.5, "std_ttft_ms": 9, "p99_ttft_ms": 3, "p50_ttft_ms": 2,
		"p99.9_ttft_ms": 4, "mean_e2el_ms": 10, "probe_median_e2el_ms": 5, "probe_p99_e2el_ms": 6}`)
	r, err := ParseReportRun("run", body, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := newSummaryView([]*ReportRun{r})
	var rows []string
	for _, l := range v.Rows {
		rows = append(rows, l.Label+"="+strings.Join(l.Values, ","))
	}
	want := []string{"Successful requests=7", "Failed requests=1", "Maximum request concurrency=4",
		"Benchmark duration (s)=12.35", "Peak concurrent requests=3.00"}
	if !slices.Equal(rows, want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
	if !slices.Equal(v.Statistics, []string{"Mean", "Median", "P50", "P99", "P99.9"}) {
		t.Errorf("statistics %q", v.Statistics)
	}
	var latency []string
	for _, l := range v.Latency {
		latency = append(latency, l.Label+"="+strings.Join(l.Values, ","))
	}
	if want := []string{"TTFT=1.23,1.50,2.00,3.00,4.00", "E2EL=10.00,,,,"}; !slices.Equal(latency, want) {
		t.Errorf("latency %q, want %q", latency, want)
	}
	many := newSummaryView([]*ReportRun{r, r})
	if len(many.Columns) != 2 || many.Rows[len(many.Rows)-1].Label != "Mean E2EL (ms)" {
		t.Errorf("comparison rows %+v", many.Rows)
	}
}
