package metrics

import (
	"math"
	"testing"
)

// TestReasoningTrack follows one stream that thinks, calls a tool and
// answers, and one reused for a plain answer: nothing leaks between them.
func TestReasoningTrack(t *testing.T) {
	rec := NewRecorder(Options{})
	var s Stream
	rec.Begin(&s, 0, 4, 0, 1000)
	event := func(ts int64, text string, reasoning, tool bool) {
		s.Token(ts, []byte(text))
		s.TokenKinds(ts, text != "", reasoning, tool)
	}
	event(1100, "", false, false) // the role chunk
	event(1200, "", true, false)
	event(1300, "", true, false)
	s.ToolCallsOpened(1)
	event(1400, "", false, true)
	event(1500, "hi", false, false)
	event(1600, "there", false, false)
	s.Usage(4, 6)
	s.ReasoningTokens(2)
	rec.EndStream(&s)

	rec.Begin(&s, 1, 4, 0, 2000)
	event(2100, "a", false, false)
	s.Usage(4, 1)
	s.ReasoningTokens(-1)
	rec.EndStream(&s)

	data := gatherTest(2, rec)
	want := []Reasoning{
		{FirstAnswerNs: 500, ReasoningChunks: 2, ReasoningTokens: 2, FirstToolCallNs: 400, ToolCallChunks: 1, ToolCalls: 1},
		{FirstAnswerNs: 100, ReasoningTokens: -1, FirstToolCallNs: -1},
	}
	for i, w := range want {
		if got := data.Results[i].Reasoning; got != w {
			t.Errorf("request %d: %+v, want %+v", i, got, w)
		}
	}
	if data.Results[0].TTFTNs != 100 {
		t.Errorf("TTFT %d: the role chunk is the first token event, as in Python", data.Results[0].TTFTNs)
	}

	st := ComputeReasoning(data.Log, []float64{99})
	if st == nil {
		t.Fatal("no stats")
	}
	if st.Requests != 2 || st.WithReasoning != 1 || st.WithAnswer != 2 || st.WithToolCalls != 1 || st.ReasoningFromUsage != 1 || st.ToolCalls != 1 {
		t.Fatalf("counts %+v", st)
	}
	// First answer at 500 ns and 100 ns; thinking from TTFT (100) to 500.
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if !near(st.TimeToFirstAnswer.MedianMs, 0.0003) || !near(st.ReasoningTime.MeanMs, 0.0004) || st.ReasoningPerRequest.Max != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestComputeReasoningNoneIsNil(t *testing.T) {
	results := []RequestResult{{Success: true, Reasoning: Reasoning{FirstAnswerNs: 5, ReasoningTokens: -1, FirstToolCallNs: -1}}}
	if st := ComputeReasoning(LogOf(results...), nil); st != nil {
		t.Fatalf("got %+v for a run without reasoning or tool calls", st)
	}
}
