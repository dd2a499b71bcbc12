package report

import (
	"bytes"
	"encoding/json"
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
