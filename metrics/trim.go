package metrics

import (
	"errors"
	"fmt"
	"math"
)

// TrimOptions selects the steady-state window of ComputeTrimmed: the
// --warmup-time and --cooldown-time of the multi-process fork of
// `vllm bench serve` (spec §i), in seconds.
type TrimOptions struct {
	WarmupS   float64
	CooldownS float64
	// Percentiles are the --metric-percentiles values, each in [0, 100].
	Percentiles []float64
}

// Trimmed is a run's steady state: what the token events inside the
// window say once the ramp-up at the start and the drain at the end are cut
// away. Times are seconds on the run clock.
type Trimmed struct {
	WarmupS, CooldownS float64
	// WindowStartS and WindowEndS bound the window [start, end).
	WindowStartS, WindowEndS float64
	// DurationS is WindowEndS - WindowStartS.
	DurationS float64
	// Requests counts the requests with at least one token event inside
	// the window.
	Requests int
	// Tokens counts the token events inside the window (the fork's
	// num_counted_tokens; chunks, not tokens, as everywhere in Python's
	// timing).
	Tokens int
	// OutputThroughput is Tokens / DurationS.
	OutputThroughput float64
	// ITL summarises the gaps that end inside the window.
	ITL Stats
}

// ComputeTrimmed cuts the run to its steady state as the fork does when
// --warmup-time W or --cooldown-time C is set (the block its README calls
// "Serving Benchmark Result after warmup before cooldown").
//
// Over the requests that were sent, t0 is the earliest start and tEnd the
// latest start+latency; the window is [t0 + W, tEnd − C) and its duration
// (tEnd − C) − (t0 + W). A request's token events are at
//
//	e₀ = start + ttft,  e_k = e_{k−1} + itl_k  (k ≥ 1),
//
// summed in float seconds in that order, as Python sums them. e₀ counts
// when it lies in the window; then for k = 1, 2, ... the walk stops at the
// first e_k ≥ tEnd − C, and every e_k ≥ t0 + W counts and contributes its
// gap itl_k to the ITL list (a gap that starts before the window but ends
// inside it is kept whole). ITL statistics are numpy's over that list in
// request order; output throughput is the counted events over the
// window's duration.
//
// Every request with at least one token event takes part, failed or not:
// the fork walks the token times of every output, and the tokens of a
// stream that broke off later were still produced by the server. A failed
// request without any token event has none to count (the fork's walk
// would count its start time as one; that phantom token is left out here).
//
// The window must not be empty.
func ComputeTrimmed(d *RunData, opts TrimOptions) (*Trimmed, error) {
	if err := checkRunInput(d, opts.Percentiles); err != nil {
		return nil, err
	}
	t0, tEnd := math.Inf(1), math.Inf(-1)
	for _, r := range d.Log.All() {
		if !r.Sent() {
			continue
		}
		start := Seconds(r.StartNs)
		t0 = min(t0, start)
		tEnd = max(tEnd, start+Seconds(r.LatencyNs))
	}
	if math.IsInf(t0, 1) {
		return nil, errors.New("metrics: steady-state trimming: no request was sent")
	}
	lo, hi := t0+opts.WarmupS, tEnd-opts.CooldownS
	t := &Trimmed{
		WarmupS: opts.WarmupS, CooldownS: opts.CooldownS,
		WindowStartS: lo, WindowEndS: hi, DurationS: hi - lo,
	}
	if !(t.DurationS > 0) {
		return nil, fmt.Errorf("metrics: steady-state window is empty: warm-up %gs and cool-down %gs leave nothing of the %gs from the first request's start to the last token",
			opts.WarmupS, opts.CooldownS, tEnd-t0)
	}

	itl := newExactStat(opts.Percentiles)
	for pass := 0; !itl.done; pass++ {
		for _, r := range d.Log.All() {
			if !r.Sent() || r.ChunkEvents == 0 {
				continue
			}
			counted := 0
			e := Seconds(r.StartNs) + Seconds(r.TTFTNs)
			if lo <= e && e < hi {
				counted++
			}
			for _, gapNs := range r.ITLNs {
				gap := Seconds(gapNs)
				e += gap
				if e >= hi {
					break
				}
				if e >= lo {
					itl.add(gap)
					counted++
				}
			}
			if counted > 0 && pass == 0 {
				t.Requests++
				t.Tokens += counted
			}
		}
		itl.endPass()
	}
	t.OutputThroughput = float64(t.Tokens) / t.DurationS
	t.ITL = itl.stats()
	return t, nil
}

// Sent reports whether the request went out: a success, or a failure that
// has a start time or a token. A request skipped before sending (as in a
// cancelled run) has neither and no place on the run clock.
func (r *RequestResult) Sent() bool {
	return r.Success || r.StartNs != 0 || r.ChunkEvents > 0
}
