package report

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/metrics"
)

// firstTokensRun is a run of two successful requests with TTFT 10 ms and
// 20 ms; reasoned gives the second 30 ms of reasoning before its answer.
func firstTokensRun(t *testing.T, reasoned bool) *ReportRun {
	t.Helper()
	answer := int64(20e6)
	chunks := 0
	if reasoned {
		answer, chunks = 50e6, 3
	}
	rs := []metrics.RequestResult{
		{Index: 0, Success: true, TTFTNs: 10e6, ITLNs: []int64{4e6}, Reasoning: metrics.Reasoning{FirstAnswerNs: -1, FirstToolCallNs: -1}},
		{Index: 1, Success: true, TTFTNs: 20e6, ITLNs: []int64{2e6}, Reasoning: metrics.Reasoning{FirstAnswerNs: answer, FirstToolCallNs: -1, ReasoningChunks: chunks}},
	}
	side, _ := json.Marshal(map[string]any{"first_tokens": NewSidecarFirstTokens(metrics.LogOf(rs...), []float64{99}, false)})
	res := `{"duration": 1, "mean_ttft_ms": 15, "median_ttft_ms": 15, "std_ttft_ms": 5, "p99_ttft_ms": 19.9}`
	r, err := ParseReportRun("run", []byte(res), side)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFirstTokensView: TTFO and TTST sit in rows beside TTFT (from the
// result), each statistic a column with its unit; a run that reasoned
// says how much of the time to first output was reasoning, one that did
// not says nothing of it.
func TestFirstTokensView(t *testing.T) {
	v := newFirstTokensView(firstTokensRun(t, true), false)
	if v == nil {
		t.Fatal("no section")
	}
	if want := []string{"Mean (ms)", "Median (ms)", "Std (ms)", "P99 (ms)"}; !slices.Equal(v.Table.Columns, want) {
		t.Errorf("columns %q, want %q", v.Table.Columns, want)
	}
	var got []string
	for _, l := range v.Table.Rows {
		got = append(got, l.Key+"|"+strings.Join(l.Values, " "))
	}
	want := []string{
		"ttft|15.00 15.00 5.00 19.90",
		"first_tokens.ttfo|30.00 30.00 20.00 49.60",
		"first_tokens.ttst|18.00 18.00 4.00 21.92",
		"first_tokens.reasoning_before_output|15.00 15.00 15.00 29.70",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows\n%q\nwant\n%q", got, want)
	}
	if want := "1 of the 2 requests with output streamed reasoning first, so their TTFT is a reasoning token's: " +
		"of the mean time to first output, 30.00 ms, 15.00 ms (50.0 %) was reasoning after the first token."; v.Reasoning != want {
		t.Errorf("reasoning sentence\n%q\nwant\n%q", v.Reasoning, want)
	}
	plain := newFirstTokensView(firstTokensRun(t, false), false)
	if plain.Reasoning != "" || len(plain.Table.Rows) != 3 {
		t.Errorf("a run without reasoning: %q, %d rows", plain.Reasoning, len(plain.Table.Rows))
	}
	if newFirstTokensView(&ReportRun{Result: map[string]any{"duration": 1.0}}, false) != nil {
		t.Error("a sidecar without first_tokens has the section")
	}
}
