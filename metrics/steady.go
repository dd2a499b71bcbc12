package metrics

import (
	"errors"
	"fmt"
	"math"
)

// SteadyFraction is how full the run must be to count as steady: 95 % of
// the target in-flight level.
const SteadyFraction = 0.95

// SteadyTarget says what level of in-flight requests a run aims at.
type SteadyTarget struct {
	// MaxConcurrency is the run's concurrency cap; 0 when none.
	MaxConcurrency int
	// RequestRate is the offered rate; +Inf sends everything at once.
	RequestRate float64
	// Fraction of the target at which the window opens, in (0, 1]; 0 is
	// SteadyFraction.
	Fraction float64
	// MinWindowS is the window's length in seconds below which the result
	// carries a warning (the Rust client's --steady-state-min-window); 0
	// is the Rust client's default, max(10, a tenth of the run).
	MinWindowS float64
}

// minWindowS is the shortest window that goes without a warning: the
// given length, else max(10 s, a tenth of the run's duration).
func (t SteadyTarget) minWindowS(runNs int64) float64 {
	if t.MinWindowS > 0 {
		return t.MinWindowS
	}
	return max(10, 0.1*Seconds(runNs))
}

// SteadyState is the run's steady-state window and the metrics of the
// requests wholly inside it. It is stampede's addition (the sidecar's
// "steady_state"); Python's block and JSON are unchanged. Times are
// seconds on the run clock; latencies in ms.
type SteadyState struct {
	// Basis is "max_concurrency" (the target is the cap) or
	// "in_flight_level" (a rate: the target is the run's own level).
	Basis string `json:"basis"`
	// TargetInFlight is the in-flight level aimed at; Threshold is
	// SteadyFraction of it.
	TargetInFlight float64 `json:"target_in_flight"`
	Threshold      float64 `json:"threshold"`
	// StartS and EndS bound the window; DurationS is their difference.
	StartS    float64 `json:"start_s"`
	EndS      float64 `json:"end_s"`
	DurationS float64 `json:"duration_s"`
	// Requests is how many requests started and finished inside; the
	// rest of the fields are computed over them alone.
	Requests             int     `json:"requests"`
	Completed            int     `json:"completed"`
	Failed               int     `json:"failed"`
	TotalInputTokens     int     `json:"total_input_tokens"`
	TotalOutputTokens    int     `json:"total_output_tokens"`
	RequestThroughput    float64 `json:"request_throughput"`
	OutputThroughput     float64 `json:"output_throughput"`
	TotalTokenThroughput float64 `json:"total_token_throughput"`
	// RequestGoodput is null without --goodput.
	RequestGoodput *float64   `json:"request_goodput"`
	TTFT           SteadyStat `json:"ttft_ms"`
	TPOT           SteadyStat `json:"tpot_ms"`
	ITL            SteadyStat `json:"itl_ms"`
	E2EL           SteadyStat `json:"e2el_ms"`
	// MinWindowS is the shortest window that goes without a warning;
	// Warning says the window was shorter ("" when it was not), so its
	// figures rest on little of the run.
	MinWindowS float64 `json:"min_window_s"`
	Warning    string  `json:"warning,omitempty"`

	// Summary is the full metric set over the window's requests, for
	// printing; its durations and throughputs are the window's.
	Summary *Summary `json:"-"`
}

// SteadyStat is one latency's statistics in JSON form.
type SteadyStat struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Std    float64 `json:"std"`
	// Percentiles maps "p99" and the like to values.
	Percentiles map[string]float64 `json:"percentiles"`
}

// ErrNoSteadyState is returned when a run has no steady part: everything
// sent at once without a cap, or too few requests inside the window.
var ErrNoSteadyState = errors.New("no steady state")

// ComputeSteadyState finds the window where the run was as full as it
// aims to be and computes the metrics of the requests inside it.
//
// In-flight requests are counted over time from each sent request's
// start to its end (start + latency; a failure without latency ends where
// it started). The target level is the concurrency cap (at most the
// number of requests) with --max-concurrency; with a finite rate and no
// cap it is the run's own level, the median in-flight count seen as each
// request starts: by Little's law the level settles once requests finish
// at the rate they are sent, so reaching it means the achieved rate has
// settled. The window runs from the first instant the in-flight count
// reaches SteadyFraction of the target to the last instant it is still
// there, i.e. from the end of the ramp-up to the start of the drain;
// momentary dips inside (one request ending just before the next starts)
// do not end it. Requests that started at or after the window's start and
// ended at or before its end are kept, and Compute's formulas run over
// them: the latencies and counts are theirs. The throughputs (and
// goodput) count instead the requests that finished inside the window,
// wherever they started, over the window's duration: counting only the
// requests wholly inside would leave out those straddling the start and
// under-read every rate by about one request latency over the window.
func ComputeSteadyState(d *RunData, opts ComputeOptions, target SteadyTarget) (*SteadyState, error) {
	if err := checkRunInput(d, opts.Percentiles); err != nil {
		return nil, err
	}
	// The edges, ends before starts at one instant: a slot handed from a
	// finished request to the next is not counted twice.
	edges := func() *eventSort {
		es := newEventSort("")
		for _, r := range d.Log.All() {
			if r.Sent() {
				es.add(timeKey(r.StartNs), 1)
				es.add(timeKey(r.StartNs+r.LatencyNs), 0)
			}
		}
		return es
	}
	es := edges()
	defer es.close()
	sent := 0
	for _, r := range d.Log.All() {
		if r.Sent() {
			sent++
		}
	}
	s := &SteadyState{}
	switch {
	case target.MaxConcurrency > 0:
		s.Basis = "max_concurrency"
		s.TargetInFlight = float64(min(target.MaxConcurrency, sent))
	case !math.IsInf(target.RequestRate, 1):
		s.Basis = "in_flight_level"
		// The median of the levels seen as each request starts: the
		// upper one of an even count, by counting the levels.
		var levels []int64
		n, starts := 0, 0
		es.each(func(_, start uint64) {
			if start == 1 {
				n++
				for len(levels) <= n {
					levels = append(levels, 0)
				}
				levels[n]++
				starts++
			} else {
				n--
			}
		})
		if starts > 0 {
			rank := int64(starts / 2)
			for level, c := range levels {
				if rank < c {
					s.TargetInFlight = float64(level)
					break
				}
				rank -= c
			}
		}
	default:
		return nil, fmt.Errorf("%w: every request was sent at once without --max-concurrency", ErrNoSteadyState)
	}
	fraction := target.Fraction
	if fraction == 0 {
		fraction = SteadyFraction
	}
	s.Threshold = fraction * s.TargetInFlight
	var from, to int64 = -1, -1
	n := 0
	es.each(func(key, start uint64) {
		at := keyTime(key)
		if start == 1 {
			n++
		} else {
			n--
		}
		if float64(n) >= s.Threshold && s.TargetInFlight > 0 {
			if from < 0 {
				from = at
			}
			to = -2 // open: closes at the next drop below
		} else if to == -2 {
			to = at
		}
	})
	if from < 0 || to < 0 || to <= from {
		return nil, fmt.Errorf("%w: the in-flight count never held %.4g (%.0f%% of %.4g)", ErrNoSteadyState, s.Threshold, 100*fraction, s.TargetInFlight)
	}
	inside := &RunData{DurationNs: to - from, Log: d.Log.Where(func(r *RequestResult) bool {
		return r.Sent() && r.StartNs >= from && r.StartNs+r.LatencyNs <= to
	})}
	requests := inside.Log.Len()
	if requests < 2 {
		return nil, fmt.Errorf("%w: %d request(s) started and finished inside the window", ErrNoSteadyState, requests)
	}
	o := opts
	o.InputAudioSeconds = nil
	sum, err := Compute(inside, o)
	if err != nil {
		return nil, err
	}
	finished := &RunData{DurationNs: to - from, Log: d.Log.Where(func(r *RequestResult) bool {
		end := r.StartNs + r.LatencyNs
		return r.Sent() && end > from && end <= to
	})}
	rates, err := Compute(finished, o)
	if err != nil {
		return nil, err
	}
	sum.RequestThroughput, sum.OutputThroughput = rates.RequestThroughput, rates.OutputThroughput
	sum.TotalTokenThroughput, sum.RequestGoodput = rates.TotalTokenThroughput, rates.RequestGoodput
	s.StartS, s.EndS, s.DurationS = Seconds(from), Seconds(to), Seconds(to-from)
	s.Requests = requests
	s.Completed, s.Failed = sum.Completed, sum.Failed
	s.TotalInputTokens, s.TotalOutputTokens = sum.TotalInput, sum.TotalOutput
	s.RequestThroughput, s.OutputThroughput, s.TotalTokenThroughput = sum.RequestThroughput, sum.OutputThroughput, sum.TotalTokenThroughput
	if len(opts.Goodput) > 0 {
		g := sum.RequestGoodput
		s.RequestGoodput = &g
	}
	s.TTFT, s.TPOT, s.ITL, s.E2EL = steadyStat(&sum.TTFT), steadyStat(&sum.TPOT), steadyStat(&sum.ITL), steadyStat(&sum.E2EL)
	s.MinWindowS = target.minWindowS(d.DurationNs)
	if s.DurationS < s.MinWindowS {
		s.Warning = fmt.Sprintf("the steady-state window lasted %.2f s, under the %.4g s minimum (--steady-state-min-window): its figures rest on a short part of the run",
			s.DurationS, s.MinWindowS)
	}
	s.Summary = sum
	return s, nil
}

// timeKey maps a run time to a uint64 of the same order; keyTime is its
// inverse.
func timeKey(ns int64) uint64 { return uint64(ns) ^ 1<<63 }

func keyTime(k uint64) int64 { return int64(k ^ 1<<63) }

func steadyStat(st *Stats) SteadyStat {
	out := SteadyStat{Mean: st.MeanMs, Median: st.MedianMs, Std: st.StdMs, Percentiles: map[string]float64{}}
	for _, p := range st.Percentiles {
		out.Percentiles["p"+trimFloat(p.P)] = p.ValueMs
	}
	return out
}

// trimFloat writes 99 as "99" and 99.9 as "99.9".
func trimFloat(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%g", f)
}
