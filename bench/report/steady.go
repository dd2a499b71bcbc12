package report

import (
	"fmt"
	"io"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/metrics"
)

// steadyStateTitle heads the --steady-state block.
const steadyStateTitle = " Steady State "

// WriteSteadyState prints the --steady-state block after Python's: the
// window, then the result rows and percentile sections Python's block
// has, computed over the requests inside the window.
func WriteSteadyState(w io.Writer, st *metrics.SteadyState, p *pyout.RunSettings) error {
	c := pyout.NewConsole(w)
	c.Header(steadyStateTitle, '=')
	what := fmt.Sprintf("%.4g (--max-concurrency)", st.TargetInFlight)
	if st.Basis == "in_flight_level" {
		what = fmt.Sprintf("%.4g (the run's level)", st.TargetInFlight)
	}
	c.Row("Target in-flight requests:", what)
	c.RowF("Window start (s):", st.StartS)
	c.RowF("Window end (s):", st.EndS)
	c.RowF("Window duration (s):", st.DurationS)
	s := st.Summary
	c.Row("Requests inside the window:", st.Requests)
	c.Figure(pyout.Completed, s.Completed)
	c.Figure(pyout.Failed, s.Failed)
	c.Figure(pyout.TotalInputTokens, s.TotalInput)
	if !s.Pooling {
		c.Figure(pyout.TotalOutputTokens, s.TotalOutput)
	}
	c.Figure(pyout.RequestThroughput, s.RequestThroughput)
	if st.RequestGoodput != nil {
		c.Figure(pyout.RequestGoodput, *st.RequestGoodput)
	}
	if !s.Pooling {
		c.Figure(pyout.OutputThroughput, s.OutputThroughput)
	}
	c.Figure(pyout.TotalTokenThroughput, s.TotalTokenThroughput)
	for _, sec := range pyout.Sections(s, p) {
		if sec.Key == pyout.ClientQueueTime.Key || sec.Key == pyout.E2ELInclQueue.Key {
			continue
		}
		c.Section(sec)
	}
	c.Rule()
	return c.Flush()
}
