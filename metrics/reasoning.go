package metrics

// Reasoning and tool calls: stampede's own account of a stream whose
// model thinks before it answers or calls tools. Python's metrics are
// untouched: a reasoning or tool-call chunk is a token event there as here
// (it sets TTFT and adds an ITL); what follows only says when the answer
// itself began and how much thinking came before it.

// Reasoning is one request's reasoning and tool-call facts. Times are
// from the request's start, as TTFTNs is; -1 when the event never came.
type Reasoning struct {
	// FirstAnswerNs is the first token event that carried answer text
	// (chat's delta.content, a Responses output_text delta, a completion's
	// text) that was not empty.
	FirstAnswerNs int64
	// ReasoningChunks counts the token events that carried reasoning text.
	ReasoningChunks int
	// ReasoningTokens is the usage's reasoning_tokens, -1 when the server
	// gave none (the split is then known only in chunks).
	ReasoningTokens int64
	// FirstToolCallNs is the first token event that carried a tool-call
	// delta; ToolCallChunks counts them and ToolCalls the calls opened.
	FirstToolCallNs int64
	ToolCallChunks  int
	ToolCalls       int
}

// reasoningTrack is a Stream's running account, in run time (0: not yet).
type reasoningTrack struct {
	firstAnswerNs, firstToolCallNs  int64
	reasoningChunks, toolCallChunks int
	toolCalls                       int
	reasoningTokens                 int64
}

func (t *reasoningTrack) begin() { *t = reasoningTrack{reasoningTokens: -1} }

// result turns the account into a request's facts, times from startNs.
func (t *reasoningTrack) result(startNs int64) Reasoning {
	since := func(ts int64) int64 {
		if ts == 0 {
			return -1
		}
		return ts - startNs
	}
	return Reasoning{
		FirstAnswerNs: since(t.firstAnswerNs), ReasoningChunks: t.reasoningChunks, ReasoningTokens: t.reasoningTokens,
		FirstToolCallNs: since(t.firstToolCallNs), ToolCallChunks: t.toolCallChunks, ToolCalls: t.toolCalls,
	}
}

// TokenKinds records what the token event received at tsNs (already
// recorded with Token) carried: answer text, reasoning text, a tool-call
// delta.
func (s *Stream) TokenKinds(tsNs int64, answer, reasoning, toolCall bool) {
	t := &s.reasoning
	if answer && t.firstAnswerNs == 0 {
		t.firstAnswerNs = tsNs
	}
	if reasoning {
		t.reasoningChunks++
	}
	if toolCall {
		if t.firstToolCallNs == 0 {
			t.firstToolCallNs = tsNs
		}
		t.toolCallChunks++
	}
}

// ToolCallsOpened counts n tool calls the stream opened.
func (s *Stream) ToolCallsOpened(n int) { s.reasoning.toolCalls += n }

// ReasoningTokens records the reasoning_tokens of a usage object (-1:
// absent); the last usage wins, as for Usage.
func (s *Stream) ReasoningTokens(n int64) { s.reasoning.reasoningTokens = n }

// ReasoningStats summarizes reasoning and tool calls over the successful
// requests (stampede's --reasoning-metrics block and sidecar).
type ReasoningStats struct {
	Requests int // successful requests
	// Of them: those with a reasoning chunk, with answer text, with a
	// tool-call delta; and those whose reasoning count came from usage.
	WithReasoning, WithAnswer, WithToolCalls, ReasoningFromUsage int
	// TimeToFirstAnswer is start → first answer text, over WithAnswer.
	TimeToFirstAnswer Stats
	// ReasoningTime is first token → first answer text, over the requests
	// with both reasoning and an answer: how long the model thought.
	ReasoningTime Stats
	// ReasoningPerRequest is reasoning_tokens where usage gave it, else
	// reasoning chunks, over WithReasoning.
	ReasoningPerRequest CountStats
	// TimeToFirstToolCall is start → first tool-call delta, over
	// WithToolCalls; ToolCalls and ToolCallChunks are totals.
	TimeToFirstToolCall Stats
	ToolCalls           int
	ToolCallChunks      int
}

// CountStats summarizes a count per request with numpy's formulas.
type CountStats struct {
	Mean, Median, Std float64
	Max               float64
	Percentiles       []Percentile // ValueMs holds the count
}

// ComputeReasoning summarizes l; nil when no successful request carried
// reasoning or a tool call (nothing to say).
func ComputeReasoning(l *Log, percentiles []float64) *ReasoningStats {
	const (
		answer = iota
		thinking
		perRequest
		toolCall
		lists
	)
	st := &ReasoningStats{}
	set := NewLists(lists, percentiles)
	for _, list := range set.stats {
		list.zeroIfEmpty = true // an empty list reads as [0], as Python's block prints it
	}
	for set.More() {
		for _, r := range l.All() {
			if !r.Success {
				continue
			}
			first := set.First()
			if first {
				st.Requests++
			}
			x := &r.Reasoning
			if x.FirstAnswerNs >= 0 {
				if first {
					st.WithAnswer++
				}
				set.Add(answer, Seconds(x.FirstAnswerNs))
			}
			if x.ReasoningChunks > 0 {
				n := float64(x.ReasoningChunks)
				if x.ReasoningTokens >= 0 {
					n = float64(x.ReasoningTokens)
				}
				if first {
					st.WithReasoning++
					if x.ReasoningTokens >= 0 {
						st.ReasoningFromUsage++
					}
				}
				set.Add(perRequest, n)
				if x.FirstAnswerNs >= 0 {
					set.Add(thinking, Seconds(x.FirstAnswerNs-r.TTFTNs))
				}
			}
			if x.FirstToolCallNs >= 0 {
				if first {
					st.WithToolCalls++
				}
				set.Add(toolCall, Seconds(x.FirstToolCallNs))
			}
			if first {
				st.ToolCalls += x.ToolCalls
				st.ToolCallChunks += x.ToolCallChunks
			}
		}
		if set.First() && st.WithReasoning == 0 && st.WithToolCalls == 0 && st.ToolCalls == 0 {
			return nil
		}
		set.EndPass()
	}
	st.TimeToFirstAnswer = set.Stats(answer)
	st.ReasoningTime = set.Stats(thinking)
	st.TimeToFirstToolCall = set.Stats(toolCall)
	st.ReasoningPerRequest = countStats(set.stats[perRequest])
	return st
}

// countStats is a count's statistics in its own units.
func countStats(s *exactStat) CountStats {
	st := s.raw()
	return CountStats{Mean: st.MeanMs, Median: st.MedianMs, Std: st.StdMs, Max: s.max(), Percentiles: st.Percentiles}
}
