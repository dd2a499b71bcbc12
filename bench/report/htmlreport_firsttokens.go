package report

import (
	"fmt"
	"strconv"

	"github.com/stampede-bench/stampede/bench/pyout"
)

// firstTokensView is the report's section of the sidecar's first_tokens:
// TTFT beside the time to first output (past any reasoning) and the time
// to second token, and for a run that reasoned how much of the wait for
// the first output was reasoning.
type firstTokensView struct {
	Heading string
	// Requests, WithOutput and WithSecond are the section's counts.
	Requests, WithOutput, WithSecond int
	Table                            *statsTable
	// Reasoning says in words how much of the time to first output was
	// reasoning; "" when no request reasoned before its output.
	Reasoning string
}

func newFirstTokensView(r *ReportRun, many bool) *firstTokensView {
	var s SidecarFirstTokens
	if !r.sidecarSection("first_tokens", &s) || s.Requests == 0 {
		return nil
	}
	v := &firstTokensView{Heading: runHeading(r, many), Requests: s.Requests, WithOutput: s.WithOutput, WithSecond: s.WithSecond}
	var rows []statsRow
	if ttft, ok := r.resultStats(pyout.TTFT, s.TTFO.Percentiles); ok {
		rows = append(rows, statsRow{"Time to first token (TTFT, any token)", "ttft", ttft})
	}
	rows = append(rows,
		statsRow{"Time to first output token (TTFO: answer text or a tool call)", "first_tokens.ttfo", s.TTFO},
		statsRow{"Time to second token (TTST)", "first_tokens.ttst", s.TTST})
	if s.ReasonedFirst > 0 {
		rows = append(rows, statsRow{"Reasoning after the first token (TTFO − TTFT)", "first_tokens.reasoning_before_output", s.BeforeOutput})
		share := 0.0
		if s.TTFO.MeanMs > 0 {
			share = s.BeforeOutput.MeanMs / s.TTFO.MeanMs
		}
		v.Reasoning = fmt.Sprintf("%d of the %d requests with output streamed reasoning first, so their TTFT is a reasoning token's: "+
			"of the mean time to first output, %s ms, %s ms (%s %%) was reasoning after the first token.",
			s.ReasonedFirst, s.WithOutput, fixed2(s.TTFO.MeanMs), fixed2(s.BeforeOutput.MeanMs), strconv.FormatFloat(100*share, 'f', 1, 64))
	}
	v.Table = newStatsTable(2, rows...)
	return v
}
