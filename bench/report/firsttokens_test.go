package report

import (
	"testing"

	"github.com/stampede-bench/stampede/metrics"
)

// TestFirstTokens: TTFO skips reasoning to the first answer or tool call
// (a plain stream's is its TTFT), TTST is TTFT plus the first gap, and a
// one-token answer has no TTST.
func TestFirstTokens(t *testing.T) {
	rs := []metrics.RequestResult{
		{Index: 0, Success: true, TTFTNs: 10, ITLNs: []int64{5, 7}, Reasoning: metrics.Reasoning{FirstAnswerNs: -1, FirstToolCallNs: -1}},
		{Index: 1, Success: true, TTFTNs: 10, ITLNs: []int64{3}, Reasoning: metrics.Reasoning{FirstAnswerNs: 40, FirstToolCallNs: 30, ReasoningChunks: 2}},
		{Index: 2, Success: true, TTFTNs: 10, ITLNs: []int64{}, Reasoning: metrics.Reasoning{FirstAnswerNs: -1, FirstToolCallNs: -1, ReasoningChunks: 1}},
		{Index: 3, Success: false},
	}
	s := NewSidecarFirstTokens(metrics.LogOf(rs...), []float64{50}, true)
	want := []SidecarFirstTokenRequest{{0, 10, 15}, {1, 30, 13}, {2, -1, -1}}
	if s.Requests != 3 || s.WithOutput != 2 || s.WithSecond != 2 || len(s.PerRequest) != 3 {
		t.Fatalf("section %+v", s)
	}
	for i, w := range want {
		if s.PerRequest[i] != w {
			t.Errorf("request %d: %+v, want %+v", i, s.PerRequest[i], w)
		}
	}
	// Request 1 reasoned for 20 ns after its first token; request 0 did not.
	if s.ReasonedFirst != 1 || s.BeforeOutput.MeanMs != 10e-6 {
		t.Errorf("reasoned first %d, mean before output %v ms; want 1 and 10 ns", s.ReasonedFirst, s.BeforeOutput.MeanMs)
	}
	if NewSidecarFirstTokens(metrics.LogOf(rs[3:]...), nil, false) != nil {
		t.Error("a run without a success has a first_tokens section")
	}
}
