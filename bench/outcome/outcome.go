// Package outcome holds what one run measured, shared by the run and the
// commands built from runs (--num-runs, sweep, slo, the cluster merge).
package outcome

import (
	"fmt"
	"math"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/metrics"
)

// Outcome is what one run measured, for the commands built from runs
// (--num-runs, sweep, slo): the computed summary and the data under it.
type Outcome struct {
	Summary *metrics.Summary
	Data    *metrics.RunData
	Params  *pyout.ReportParams
	// Options are the settings Summary was computed with.
	Options metrics.ComputeOptions
	// ResultPath is the result JSON written, "" when none was.
	ResultPath string
	// Files are every file the run saved, in the order written
	// (--results-to-log prints them).
	Files []string
	// Cancelled is set when an interrupt cut the run short.
	Cancelled bool
	// SteadyState is the run's steady-state window and metrics, for the
	// sidecar's "steady_state" and the --steady-state block; nil with
	// SteadyStateErr saying why when the run has none.
	SteadyState    *metrics.SteadyState
	SteadyStateErr error
}

// Point reduces the outcome to its headline figures: the summary again
// with the 50th and 99th percentiles of every latency.
func (o *Outcome) Point() (report.PointMetrics, error) {
	opts := o.Options
	opts.Percentiles = []float64{50, 99}
	s, err := metrics.Compute(o.Data, opts)
	if err != nil {
		return report.PointMetrics{}, err
	}
	pm := report.PointMetrics{
		Completed: s.Completed, Failed: s.Failed,
		RequestThroughput: s.RequestThroughput, OutputThroughput: s.OutputThroughput,
	}
	for _, f := range []struct {
		st       *metrics.Stats
		p50, p99 *float64
	}{
		{&s.TTFT, &pm.TTFTP50, &pm.TTFTP99}, {&s.TPOT, &pm.TPOTP50, &pm.TPOTP99},
		{&s.ITL, &pm.ITLP50, &pm.ITLP99}, {&s.E2EL, &pm.E2ELP50, &pm.E2ELP99},
	} {
		if len(f.st.Percentiles) == 2 {
			*f.p50, *f.p99 = f.st.Percentiles[0].ValueMs, f.st.Percentiles[1].ValueMs
		}
	}
	if len(opts.Goodput) > 0 {
		g := s.RequestGoodput
		pm.RequestGoodput = &g
		att := 0.0
		if total := s.Completed + s.Failed; total > 0 {
			att = math.Round(s.RequestGoodput*s.DurationS) / float64(total)
		}
		pm.Attainment = &att
	}
	return pm, nil
}

// DropUnsent removes the requests an interrupt kept from being sent: they
// measured nothing, and counting them as failures would bury the requests
// that did fail. It returns how many it removed.
func DropUnsent(d *metrics.RunData) int {
	all := d.Log.Len()
	d.Log = d.Log.Where((*metrics.RequestResult).Sent)
	return all - d.Log.Len()
}

// RequestsFailed is a run's error under --fail-on-error when benchmark
// requests failed; the command exits with its own status for it.
type RequestsFailed struct {
	Failed, Requests int
}

func (e *RequestsFailed) Error() string {
	return fmt.Sprintf("%d of %d requests failed (--fail-on-error)", e.Failed, e.Requests)
}

// SharePoints are the headline figures (Point) of each of k shares of the
// run, share s holding the requests whose index is s mod k (the requests
// one of k front ends served); throughputs are over the whole run's
// duration, so the shares add up to the run.
func (o *Outcome) SharePoints(k int) ([]report.PointMetrics, error) {
	out := make([]report.PointMetrics, k)
	for s := range out {
		share := &metrics.RunData{DurationNs: o.Data.DurationNs,
			Log: o.Data.Log.Where(func(r *metrics.RequestResult) bool { return r.Index%k == s })}
		part := Outcome{Data: share, Options: o.Options}
		pm, err := part.Point()
		if err != nil {
			return nil, err
		}
		out[s] = pm
	}
	return out, nil
}
