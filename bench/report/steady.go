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
	c.Row("Successful requests:", s.Completed)
	c.Row("Failed requests:", s.Failed)
	c.Row("Total input tokens:", s.TotalInput)
	if !s.Pooling {
		c.Row("Total generated tokens:", s.TotalOutput)
	}
	c.RowF("Request throughput (req/s):", s.RequestThroughput)
	if st.RequestGoodput != nil {
		c.RowF("Request goodput (req/s):", *st.RequestGoodput)
	}
	if !s.Pooling {
		c.RowF("Output token throughput (tok/s):", s.OutputThroughput)
	}
	c.RowF("Total token throughput (tok/s):", s.TotalTokenThroughput)
	for _, sec := range pyout.Sections(s, p) {
		if sec.Key == "client_queue_time" || sec.Key == "e2el_including_client_queue" {
			continue
		}
		c.Section(sec)
	}
	c.Rule()
	return c.Flush()
}
