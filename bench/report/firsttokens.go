package report

import "github.com/stampede-bench/stampede/metrics"

// SidecarFirstTokens is the sidecar's first_tokens section: two figures
// other clients report beside TTFT, over the successful requests.
//
// TTFO, time to first output, is start → the first token event that
// carried answer text or a tool call, not reasoning (metrics.Reasoning's
// first answer and first tool call, whichever came first); without
// reasoning it equals TTFT. TTST, time to second token, is TTFT plus the
// first inter-token gap: start → the second token event. Both are
// computed after the run from what the shards recorded already.
type SidecarFirstTokens struct {
	// Requests is the successful requests; WithOutput those with an
	// answer or a tool call, WithSecond those with a second token event.
	Requests   int          `json:"requests"`
	WithOutput int          `json:"with_output"`
	WithSecond int          `json:"with_second_token"`
	TTFO       SidecarStats `json:"ttfo"`
	TTST       SidecarStats `json:"ttst"`
	// ReasonedFirst is how many of WithOutput streamed reasoning before
	// their first output (TTFO > TTFT: their TTFT is a reasoning token's);
	// BeforeOutput is TTFO − TTFT over WithOutput (0 for the others): the
	// reasoning a user waits through after TTFT before any answer.
	ReasonedFirst int          `json:"reasoned_first"`
	BeforeOutput  SidecarStats `json:"reasoning_before_output"`
	// PerRequest is every successful request's figures in nanoseconds
	// (-1 when it had none), with --save-detailed, in request order.
	PerRequest []SidecarFirstTokenRequest `json:"per_request,omitempty"`
}

// SidecarFirstTokenRequest is one request's TTFO and TTST in nanoseconds.
type SidecarFirstTokenRequest struct {
	Index  int   `json:"index"`
	TTFONs int64 `json:"ttfo_ns"`
	TTSTNs int64 `json:"ttst_ns"`
}

// NewSidecarFirstTokens is the section over results; nil when none
// succeeded.
func NewSidecarFirstTokens(results *metrics.Log, percentiles []float64, detailed bool) *SidecarFirstTokens {
	const (
		ttfo = iota
		ttst
		before
	)
	out := &SidecarFirstTokens{}
	lists := metrics.NewLists(3, percentiles)
	for lists.More() {
		first := lists.First()
		for _, r := range results.All() {
			if !r.Success {
				continue
			}
			row := SidecarFirstTokenRequest{Index: r.Index, TTFONs: firstOutputNs(r), TTSTNs: -1}
			if len(r.ITLNs) > 0 {
				row.TTSTNs = r.TTFTNs + r.ITLNs[0]
			}
			if row.TTFONs >= 0 {
				lists.Add(ttfo, metrics.Seconds(row.TTFONs))
				lists.Add(before, metrics.Seconds(row.TTFONs-r.TTFTNs))
			}
			if row.TTSTNs >= 0 {
				lists.Add(ttst, metrics.Seconds(row.TTSTNs))
			}
			if !first {
				continue
			}
			out.Requests++
			if row.TTFONs >= 0 {
				out.WithOutput++
				if row.TTFONs > r.TTFTNs {
					out.ReasonedFirst++
				}
			}
			if row.TTSTNs >= 0 {
				out.WithSecond++
			}
			if detailed {
				out.PerRequest = append(out.PerRequest, row)
			}
		}
		if out.Requests == 0 {
			return nil
		}
		lists.EndPass()
	}
	out.TTFO, out.TTST = summaryOrEmpty(lists, ttfo), summaryOrEmpty(lists, ttst)
	out.BeforeOutput = summaryOrEmpty(lists, before)
	return out
}

// firstOutputNs is start → r's first answer or tool-call event, -1 when it
// had neither; a stream whose decoder marked no kind (a plain completion)
// counts its first token.
func firstOutputNs(r *metrics.RequestResult) int64 {
	a, t := r.Reasoning.FirstAnswerNs, r.Reasoning.FirstToolCallNs
	switch {
	case a >= 0 && t >= 0:
		return min(a, t)
	case a >= 0:
		return a
	case t >= 0:
		return t
	case r.Reasoning.ReasoningChunks == 0:
		return r.TTFTNs
	}
	return -1
}

func summaryOrEmpty(lists *metrics.Lists, list int) SidecarStats {
	if lists.Len(list) == 0 {
		return SidecarStats{Percentiles: []SidecarPercentile{}}
	}
	return sidecarStats(lists.Stats(list))
}
