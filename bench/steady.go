package bench

import (
	"errors"
	"fmt"
	"math"

	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/metrics"
)

// steadyState is the run's steady state (metrics.ComputeSteadyState);
// a run without one has the reason instead.
func (r *run) steadyState(o *outcome.Outcome) (*metrics.SteadyState, error) {
	c := r.cfg
	t := metrics.SteadyTarget{RequestRate: c.RequestRate, Fraction: c.SteadyStateThreshold}
	if c.SteadyStateMinWindow != nil {
		t.MinWindowS = *c.SteadyStateMinWindow
	}
	if c.MaxConcurrency != nil {
		t.MaxConcurrency = *c.MaxConcurrency
	}
	if c.RampUpStrategy != "" {
		return nil, fmt.Errorf("%w: the rate ramps up (--ramp-up-strategy)", metrics.ErrNoSteadyState)
	}
	return metrics.ComputeSteadyState(o.Data, o.Options, t)
}

// writeSteadyStateBlock prints the block with --steady-state, or why
// there is none on stderr.
func (r *run) writeSteadyStateBlock(o *outcome.Outcome) error {
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
	if w := o.SteadyState.Warning; w != "" {
		fmt.Fprintf(r.stderr, "WARNING: --steady-state: %s\n", w)
	}
	return report.WriteSteadyState(r.stdout, o.SteadyState, &o.Params.RunSettings)
}
