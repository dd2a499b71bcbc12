package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// GapSource draws the gaps between arrivals. The default draws from
// math/rand/v2; a generator that reproduces numpy's global RandomState bit
// for bit can be plugged in to make schedules identical to Python's.
type GapSource interface {
	// Gamma returns a draw from the gamma distribution with the given
	// shape k and scale θ (mean kθ).
	Gamma(shape, scale float64) float64
}

// RampUp raises the request rate from StartRPS to EndRPS over the run
// (--ramp-up-strategy, --ramp-up-start-rps, --ramp-up-end-rps).
type RampUp struct {
	Strategy         string // "linear" or "exponential"
	StartRPS, EndRPS int
}

// RampUpEvent records the moment the ramp reached a whole number of
// requests per second, as Python's rps_change_events.
type RampUpEvent struct {
	RPS int
	At  time.Time
}

// rate returns request i's rate out of n with progress p = i / max(n−1, 1):
//
//	linear:      start + (end − start)·p
//	exponential: start · (end/start)^p
func (r *RampUp) rate(i, n int) float64 {
	p := float64(i) / float64(max(n-1, 1))
	start, end := float64(r.StartRPS), float64(r.EndRPS)
	if r.Strategy == "exponential" {
		return start * math.Pow(end/start, p)
	}
	return start + (end-start)*p
}

func (r *RampUp) validate() error {
	switch r.Strategy {
	case "linear", "exponential":
	default:
		return fmt.Errorf("--ramp-up-strategy %q: accepted values are linear and exponential", r.Strategy)
	}
	if r.StartRPS < 0 || r.EndRPS < 0 {
		return fmt.Errorf("--ramp-up-start-rps %d / --ramp-up-end-rps %d: rates must not be negative", r.StartRPS, r.EndRPS)
	}
	return nil
}

// Schedule is the arrival plan of a run: when each request is due, in
// seconds after the start, and the rate that applied to it.
type Schedule struct {
	OffsetsSec []float64
	Rates      []float64
}

// ArrivalSchedule computes the offsets of n requests as `vllm bench serve`
// does (spec §c, get_request). Request i has rate λᵢ (the request rate, or
// the ramp-up's rate at i) and gap
//
//	gᵢ = 0                    if λᵢ = ∞
//	gᵢ = 1/λᵢ                 if burstiness b = ∞
//	gᵢ ~ Gamma(b, 1/(λᵢ·b))   otherwise (mean 1/λᵢ, CV 1/√b; b = 1 is Poisson)
//
// and offset oᵢ = g₀ + … + gᵢ, so the first request is due after one gap.
// Without ramp-up and with o_{n−1} ≠ 0, every offset is multiplied by
// (n/λ)/o_{n−1}, so the last request is due at exactly n/λ: this removes the
// sampling noise of the total and makes throughput comparable across seeds.
// Ramp-up offsets are not rescaled.
func ArrivalSchedule(n int, rate, burstiness float64, ramp *RampUp, gaps GapSource) (Schedule, error) {
	if !(burstiness > 0) {
		return Schedule{}, fmt.Errorf("--burstiness %v: must be greater than 0", burstiness)
	}
	if ramp != nil {
		if err := ramp.validate(); err != nil {
			return Schedule{}, err
		}
	}
	s := Schedule{OffsetsSec: make([]float64, n), Rates: make([]float64, n)}
	sum := 0.0
	for i := range n {
		r := rate
		if ramp != nil {
			r = ramp.rate(i, n)
		}
		if !(r > 0) {
			return Schedule{}, fmt.Errorf("request %d: obtained non-positive request rate %v; the rate (or both ramp-up ends) must be above 0", i, r)
		}
		s.Rates[i] = r
		switch {
		case math.IsInf(r, 1):
		case math.IsInf(burstiness, 1):
			sum += 1 / r
		default:
			sum += gaps.Gamma(burstiness, 1/(r*burstiness))
		}
		s.OffsetsSec[i] = sum
	}
	if ramp == nil && n > 0 && s.OffsetsSec[n-1] != 0 {
		factor := (float64(n) / rate) / s.OffsetsSec[n-1]
		for i := range s.OffsetsSec {
			s.OffsetsSec[i] *= factor
		}
	}
	return s, nil
}

// rampUpEvents appends the events for request rate r given the last
// recorded whole rate: one event per whole number passed, all stamped at.
func rampUpEvents(events []RampUpEvent, last *int, r float64, at time.Time) []RampUpEvent {
	whole := int(r)
	for v := *last + 1; v <= whole; v++ {
		events = append(events, RampUpEvent{RPS: v, At: at})
	}
	*last = max(*last, whole)
	return events
}

// randGaps is the default GapSource: math/rand/v2's PCG seeded from the run
// seed, with Marsaglia and Tsang's gamma sampler.
type randGaps struct{ rng *rand.Rand }

var _ GapSource = (*randGaps)(nil)

// NewGapSource returns the default GapSource for seed.
func NewGapSource(seed int64) GapSource {
	return &randGaps{rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed_9a95))}
}

// Gamma samples Gamma(shape, scale) by Marsaglia and Tsang (2000): with
// d = k − 1/3 and c = 1/√(9d), draw x ~ N(0,1) and v = (1+cx)³ until
// ln U < x²/2 + d − dv + d·ln v; then dv·θ is the draw. A shape below 1
// uses Gamma(k) = Gamma(k+1)·U^(1/k).
func (g *randGaps) Gamma(shape, scale float64) float64 {
	if shape < 1 {
		u := g.rng.Float64()
		return g.Gamma(shape+1, scale) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := g.rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := g.rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v * scale
		}
	}
}
