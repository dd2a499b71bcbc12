package report

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/report/reporttest"
	"github.com/stampede-bench/stampede/engine"
)

// TestNetworkRTTView: the section counts the connections, tables both
// round trips, and draws one bar per connection (sorted) with the least
// round trips as a line.
func TestNetworkRTTView(t *testing.T) {
	var rtts []engine.ConnRTT
	for i := range 7 {
		rtts = append(rtts, engine.ConnRTT{RTTUs: uint32(700 - 100*i), MinRTTUs: uint32(70 - 10*i)})
	}
	s := NewSidecarNetworkRTT([]engine.ShardHealth{{RTTs: rtts}}, []float64{50, 99})
	if !slices.IsSorted(s.RTTSortedMs) || len(s.RTTSortedMs) != 7 || math.Abs(s.RTTSortedMs[0]-0.1) > 1e-12 || math.Abs(s.MinRTTSortedMs[6]-0.07) > 1e-12 {
		t.Fatalf("sorted lists %v %v", s.RTTSortedMs, s.MinRTTSortedMs)
	}
	side, _ := json.Marshal(map[string]any{"network_rtt": s})
	r, err := ParseReportRun("run", []byte(`{"duration": 1, "median_ttft_ms": 12.5}`), side)
	if err != nil {
		t.Fatal(err)
	}
	v := newNetworkRTTView(r, false)
	if v == nil || v.Connections != 7 || len(v.Table.Rows) != 2 || v.Chart == nil {
		t.Fatalf("view %+v", v)
	}
	if want := "P99 (ms)"; v.Table.Columns[len(v.Table.Columns)-1] != want {
		t.Errorf("columns %q, want the last %q", v.Table.Columns, want)
	}
	if !strings.Contains(v.Beside, "0.040 ms") || !strings.Contains(v.Beside, "median 12.50 ms") {
		t.Errorf("sentence %q", v.Beside)
	}
	if n := strings.Count(v.Chart.Paths[0].D, "M"); n != 7 {
		t.Errorf("%d bars, want one per connection", n)
	}
	var page bytes.Buffer
	if err := WriteReport(&page, []*ReportRun{r}, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	if m := reporttest.ChartMarks(page.String()); m["network-rtt"] != 2 {
		t.Errorf("the RTT chart has %d marks, want the bars and the line", m["network-rtt"])
	}
	if !strings.Contains(page.String(), `id="network-rtt"`) || strings.Contains(page.String(), `id="first-tokens"`) {
		t.Error("the page lacks the RTT section, or has a first-tokens section without first_tokens")
	}
}

// TestSortedByRank: a long list keeps its least and its most and is
// thinned evenly.
func TestSortedByRank(t *testing.T) {
	sec := make([]float64, 1000)
	for i := range sec {
		sec[i] = float64(999-i) / 1000
	}
	got := sortedByRank(sec, 5)
	want := []float64{0, 250, 500, 749, 999}
	if !slices.EqualFunc(got, want, func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }) {
		t.Errorf("thinned %v, want %v", got, want)
	}
}
