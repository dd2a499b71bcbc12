package bench

import (
	"fmt"
	"io"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// --warmup-time and --cooldown-time: the fork's second block
// (report.WriteTrimmed), after Python's.

// writeTrimmed prints the trimmed block after the result block when
// --warmup-time or --cooldown-time is set. A window that cannot be formed
// (longer trims than the run) is reported on stderr and the run goes on:
// the main result stands on its own.
func (r *run) writeTrimmed(s *metrics.Summary, d *metrics.RunData, p *pyout.ReportParams) error {
	c := r.cfg
	if !c.TrimsSteadyState() {
		return nil
	}
	t, err := metrics.ComputeTrimmed(d, metrics.TrimOptions{
		WarmupS: c.WarmupTime, CooldownS: c.CooldownTime, Percentiles: c.SelectedPercentiles,
	})
	if err != nil {
		_, err = fmt.Fprintf(r.stderr, "WARNING: no steady-state result for --warmup-time %s --cooldown-time %s: %v\n",
			py.FloatRepr(c.WarmupTime), py.FloatRepr(c.CooldownTime), err)
		return err
	}
	if t.Requests == 0 {
		if _, err := io.WriteString(r.stderr, pyout.AllFailedWarning); err != nil {
			return err
		}
	}
	return report.WriteTrimmed(r.stdout, t, s.Pooling, &p.RunSettings)
}
