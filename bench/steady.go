package bench

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/metrics"
)

// steadyStateTitle heads the --steady-state block.
const steadyStateTitle = " Steady State "

// steadyState computes the run's steady state (metrics.ComputeSteadyState)
// into the outcome; a run without one keeps the reason.
func (r *run) steadyState(o *Outcome) {
	c := r.cfg
	t := metrics.SteadyTarget{RequestRate: c.RequestRate}
	if c.MaxConcurrency != nil {
		t.MaxConcurrency = *c.MaxConcurrency
	}
	if c.RampUpStrategy != "" {
		o.SteadyStateErr = fmt.Errorf("%w: the rate ramps up (--ramp-up-strategy)", metrics.ErrNoSteadyState)
		return
	}
	o.SteadyState, o.SteadyStateErr = metrics.ComputeSteadyState(o.Data, o.Options, t)
}

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

// writeSteadyStateBlock prints the block with --steady-state, or why
// there is none on stderr.
func (r *run) writeSteadyStateBlock(o *Outcome) error {
	if !r.cfg.SteadyState {
		return nil
	}
	if o.SteadyState == nil {
		msg := "no steady state"
		if o.SteadyStateErr != nil {
			msg = o.SteadyStateErr.Error()
		}
		if !errors.Is(o.SteadyStateErr, metrics.ErrNoSteadyState) && o.SteadyStateErr != nil {
			return o.SteadyStateErr
		}
		_, err := fmt.Fprintf(r.stderr, "WARNING: --steady-state: %s\n", msg)
		return err
	}
	if math.IsNaN(o.SteadyState.DurationS) {
		return nil
	}
	return WriteSteadyState(r.stdout, o.SteadyState, &o.Params.RunSettings)
}
