package report

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestServerSpansSection: the report draws the joined requests stacked by
// phase, tallest last, with the percentile marks, and lists where the
// slowest spent their time; with nothing joined it says why.
func TestServerSpansSection(t *testing.T) {
	rows := []ServerSpanRequest{
		{Index: 0, ConnectNs: 1e6, NetworkAndFrontEnd: 1e6, PrefillNs: 2e6, FirstTokenOutNs: 1e6, TTFTNs: 5e6, ServerTTFTNs: 3e6},
		{Index: 1, ConnectNs: 0, NetworkAndFrontEnd: 2e6, PrefillNs: 8e6, FirstTokenOutNs: 0, TTFTNs: 10e6, ServerTTFTNs: 8e6},
	}
	s := NewServerSpans(3, rows, ServerSpansReceiver{Address: "a", Spans: 2}, SpanJoinCounts{}, []float64{99}, true)
	if s.Summary != "2 of 3 requests joined" || s.Slowest.Requests != 1 || s.Slowest.MeanTTFTMs != 10 {
		t.Fatalf("section %+v", s)
	}
	raw, _ := json.Marshal(s)
	v := newServerSpansView(&ReportRun{Sidecar: map[string]json.RawMessage{"server_spans": raw}}, false)
	if v == nil || v.Chart == nil || len(v.Chart.Phases) != len(stackedPhases) || len(v.Chart.Marks) != 3 || v.Chart.MaxMs != "10.00" {
		t.Fatalf("view %+v", v)
	}
	// The prefill path's last column is the slow request's 8 ms of 10.
	if d := v.Chart.Phases[4].D; !strings.Contains(d, "v144.0") {
		t.Errorf("prefill path %q: want the slow request's 8/10 of the 180 px height", d)
	}
	none := NewServerSpans(3, nil, ServerSpansReceiver{Address: "a"}, SpanJoinCounts{}, []float64{99}, true)
	raw, _ = json.Marshal(none)
	v = newServerSpansView(&ReportRun{Sidecar: map[string]json.RawMessage{"server_spans": raw}}, false)
	if v == nil || v.Chart != nil || !strings.Contains(v.Why, "no export") {
		t.Errorf("view of nothing joined %+v", v)
	}
}
