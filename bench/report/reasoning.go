package report

import (
	"io"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/metrics"
)

// --reasoning-metrics' block and the sidecar's "reasoning"
// (bench/reasoning.go says what they account for).

// ReasoningTitle heads the --reasoning-metrics block.
const ReasoningTitle = " Reasoning and Tool Calls (stampede) "

// reasoningSource says where the reasoning counts came from: the usage's
// reasoning_tokens, reasoning chunks (the server gave no split), or both.
func reasoningSource(st *metrics.ReasoningStats) string {
	switch st.ReasoningFromUsage {
	case 0:
		return "chunks"
	case st.WithReasoning:
		return "tokens"
	}
	return "mixed"
}

// WriteReasoning prints the --reasoning-metrics block after Python's
// block, in Python's row format; one line when no request reasoned or
// called a tool.
func WriteReasoning(w io.Writer, st *metrics.ReasoningStats) error {
	c := pyout.NewConsole(w)
	c.Header(ReasoningTitle, '=')
	if st == nil {
		c.Line("No request streamed reasoning or tool calls.")
		c.Rule()
		return c.Flush()
	}
	c.Figure(pyout.Completed, st.Requests)
	c.Row("With reasoning:", st.WithReasoning)
	c.Row("With answer text:", st.WithAnswer)
	c.Row("With tool calls:", st.WithToolCalls)
	c.Row("Tool calls opened:", st.ToolCalls)
	c.Row("Tool-call chunks:", st.ToolCallChunks)
	c.Section(pyout.Section{Name: "TTFAT", Header: "Time to First Answer Token", Stats: &st.TimeToFirstAnswer})
	if st.WithReasoning > 0 {
		c.Section(pyout.Section{Name: "reasoning time", Header: "Reasoning (1st token to answer)", Stats: &st.ReasoningTime})
		unit := "reasoning tokens"
		if reasoningSource(st) == "chunks" {
			unit = "reasoning chunks"
		}
		c.Header("Reasoning per Request", '-')
		c.RowF("Mean "+unit+":", st.ReasoningPerRequest.Mean)
		c.RowF("Median "+unit+":", st.ReasoningPerRequest.Median)
		for _, p := range st.ReasoningPerRequest.Percentiles {
			c.RowF("P"+pyout.PercentileWord(p.P)+" "+unit+":", p.ValueMs)
		}
		c.RowF("Max "+unit+":", st.ReasoningPerRequest.Max)
	}
	if st.WithToolCalls > 0 {
		c.Section(pyout.Section{Name: "TTFTC", Header: "Time to First Tool Call", Stats: &st.TimeToFirstToolCall})
	}
	c.Rule()
	return c.Flush()
}

// SidecarReasoning is the sidecar's "reasoning": the statistics over the
// successful requests, and with --save-detailed each request's facts.
type SidecarReasoning struct {
	Requests      int `json:"requests"`
	WithReasoning int `json:"with_reasoning"`
	WithAnswer    int `json:"with_answer"`
	WithToolCalls int `json:"with_tool_calls"`
	// ReasoningSource is "tokens" (usage reasoning_tokens), "chunks" (the
	// server gave no split) or "mixed".
	ReasoningSource     string                    `json:"reasoning_source"`
	TimeToFirstAnswer   SidecarStats              `json:"time_to_first_answer"`
	ReasoningTime       SidecarStats              `json:"reasoning_time"`
	ReasoningPerRequest SidecarCountStats         `json:"reasoning_per_request"`
	TimeToFirstToolCall SidecarStats              `json:"time_to_first_tool_call"`
	ToolCalls           int                       `json:"tool_calls"`
	ToolCallChunks      int                       `json:"tool_call_chunks"`
	PerRequest          []SidecarRequestReasoning `json:"per_request,omitempty"`
}

// SidecarCountStats summarizes a count per request.
type SidecarCountStats struct {
	Mean        float64                  `json:"mean"`
	Median      float64                  `json:"median"`
	Std         float64                  `json:"std"`
	Max         float64                  `json:"max"`
	Percentiles []SidecarCountPercentile `json:"percentiles"`
}

// SidecarCountPercentile is one percentile P (0..100) of a count.
type SidecarCountPercentile struct {
	P     float64 `json:"p"`
	Value float64 `json:"value"`
}

// SidecarRequestReasoning is one successful request's facts; times in
// nanoseconds from its start, -1 (and reasoning_tokens -1) when absent.
type SidecarRequestReasoning struct {
	Index           int   `json:"index"`
	TTFTNs          int64 `json:"ttft_ns"`
	FirstAnswerNs   int64 `json:"first_answer_ns"`
	ReasoningChunks int   `json:"reasoning_chunks"`
	ReasoningTokens int64 `json:"reasoning_tokens"`
	FirstToolCallNs int64 `json:"first_tool_call_ns"`
	ToolCallChunks  int   `json:"tool_call_chunks"`
	ToolCalls       int   `json:"tool_calls"`
}

// NewSidecarReasoning is the sidecar's "reasoning"; nil when st is.
func NewSidecarReasoning(results *metrics.Log, st *metrics.ReasoningStats, detailed bool) *SidecarReasoning {
	if st == nil {
		return nil
	}
	counts := SidecarCountStats{Mean: st.ReasoningPerRequest.Mean, Median: st.ReasoningPerRequest.Median,
		Std: st.ReasoningPerRequest.Std, Max: st.ReasoningPerRequest.Max, Percentiles: []SidecarCountPercentile{}}
	for _, p := range st.ReasoningPerRequest.Percentiles {
		counts.Percentiles = append(counts.Percentiles, SidecarCountPercentile{P: p.P, Value: p.ValueMs})
	}
	out := &SidecarReasoning{
		Requests: st.Requests, WithReasoning: st.WithReasoning, WithAnswer: st.WithAnswer, WithToolCalls: st.WithToolCalls,
		ReasoningSource: reasoningSource(st), TimeToFirstAnswer: sidecarStats(st.TimeToFirstAnswer),
		ReasoningTime: sidecarStats(st.ReasoningTime), ReasoningPerRequest: counts,
		TimeToFirstToolCall: sidecarStats(st.TimeToFirstToolCall), ToolCalls: st.ToolCalls, ToolCallChunks: st.ToolCallChunks,
	}
	if !detailed {
		return out
	}
	out.PerRequest = make([]SidecarRequestReasoning, 0, st.Requests)
	for _, r := range results.All() {
		if !r.Success {
			continue
		}
		x := r.Reasoning
		out.PerRequest = append(out.PerRequest, SidecarRequestReasoning{
			Index: r.Index, TTFTNs: r.TTFTNs, FirstAnswerNs: x.FirstAnswerNs, ReasoningChunks: x.ReasoningChunks,
			ReasoningTokens: x.ReasoningTokens, FirstToolCallNs: x.FirstToolCallNs, ToolCallChunks: x.ToolCallChunks, ToolCalls: x.ToolCalls,
		})
	}
	return out
}
