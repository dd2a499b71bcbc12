package pyrand

import (
	"fmt"
	"math"
)

// RandomState is numpy's legacy generator (numpy.random.RandomState, and the
// global one numpy.random.seed seeds): MT19937 seeded with init_genrand,
// plus the cached second normal of the polar Box–Muller method.
type RandomState struct {
	mt       mt19937
	hasGauss bool
	gauss    float64
}

// NewRandomState returns the state numpy.random.seed(seed) leaves.
func NewRandomState(seed uint32) *RandomState {
	s := &RandomState{}
	s.Seed(seed)
	return s
}

// Seed is numpy.random.seed(seed) for an int in [0, 2**32).
func (s *RandomState) Seed(seed uint32) {
	s.mt.seedScalar(seed)
	s.hasGauss = false
	s.gauss = 0
}

// RandomSample is numpy.random.random_sample() / rand(): a 53-bit double in
// [0, 1).
func (s *RandomState) RandomSample() float64 { return s.mt.float64() }

// StandardExponential is legacy_standard_exponential: -log(1 - U).
func (s *RandomState) StandardExponential() float64 {
	return -math.Log(1.0 - s.mt.float64())
}

// Exponential is numpy.random.exponential(scale).
func (s *RandomState) Exponential(scale float64) float64 {
	return scale * s.StandardExponential()
}

// StandardNormal is legacy_gauss, the polar method: two uniforms in the unit
// disc give two normals; the second is kept for the next call.
func (s *RandomState) StandardNormal() float64 {
	if s.hasGauss {
		s.hasGauss = false
		g := s.gauss
		s.gauss = 0
		return g
	}
	var x1, x2, r2 float64
	for {
		x1 = 2.0*s.mt.float64() - 1.0
		x2 = 2.0*s.mt.float64() - 1.0
		r2 = x1*x1 + x2*x2
		if r2 < 1.0 && r2 != 0.0 {
			break
		}
	}
	f := math.Sqrt(-2.0 * math.Log(r2) / r2)
	s.gauss = f * x1
	s.hasGauss = true
	return f * x2
}

// StandardGamma is legacy_standard_gamma(shape):
//
//   - shape == 1: a standard exponential;
//   - shape < 1: Johnk's / Ahrens–Dieter rejection with U and an
//     exponential V: if U <= 1-shape, X = U^(1/shape), accepted if X <= V;
//     else Y = -log((1-U)/shape), X = (1-shape+shape·Y)^(1/shape), accepted
//     if X <= V+Y;
//   - shape > 1: Marsaglia–Tsang with b = shape-1/3, c = 1/sqrt(9b):
//     V = (1+cX)^3 for a normal X (redrawn while 1+cX <= 0), accepted when
//     U < 1-0.0331·X^4 or log U < X²/2 + b(1-V+log V); the draw is b·V.
func (s *RandomState) StandardGamma(shape float64) float64 {
	switch {
	case shape == 1.0:
		return s.StandardExponential()
	case shape == 0.0:
		return 0.0
	case shape < 1.0:
		for {
			u := s.mt.float64()
			v := s.StandardExponential()
			if u <= 1.0-shape {
				x := math.Pow(u, 1.0/shape)
				if x <= v {
					return x
				}
			} else {
				y := -math.Log((1 - u) / shape)
				x := math.Pow(1.0-shape+shape*y, 1.0/shape)
				if x <= v+y {
					return x
				}
			}
		}
	default:
		b := shape - 1.0/3.0
		c := 1.0 / math.Sqrt(9*b)
		for {
			var x, v float64
			for {
				x = s.StandardNormal()
				v = 1.0 + c*x
				if v > 0.0 {
					break
				}
			}
			v = v * v * v
			u := s.mt.float64()
			if u < 1.0-0.0331*(x*x)*(x*x) {
				return b * v
			}
			if math.Log(u) < 0.5*x*x+b*(1.0-v+math.Log(v)) {
				return b * v
			}
		}
	}
}

// Gamma is numpy.random.gamma(shape, scale) = scale · standard_gamma(shape).
// Its method set satisfies the engine's arrival-gap source,
// interface{ Gamma(shape, scale float64) float64 }.
func (s *RandomState) Gamma(shape, scale float64) float64 {
	return scale * s.StandardGamma(shape)
}

// RandInt is numpy.random.randint(low, high, size=n) with the default int64
// dtype: legacy masked rejection sampling (draws & mask, redrawn while above
// the range), over 32-bit outputs when the range fits in 32 bits.
func (s *RandomState) RandInt(low, high int64, n int) ([]int64, error) {
	if low >= high {
		return nil, fmt.Errorf("randint: low >= high (low=%d, high=%d)", low, high)
	}
	out := make([]int64, n)
	rng := uint64(high-1) - uint64(low)
	off := uint64(low)
	mask := rng
	for shift := 1; shift < 64; shift <<= 1 {
		mask |= mask >> shift
	}
	for i := range out {
		var v uint64
		switch {
		case rng == 0:
		case rng <= 0xFFFFFFFF:
			for {
				v = uint64(s.mt.uint32()) & mask
				if v <= rng {
					break
				}
			}
		default:
			for {
				v = (uint64(s.mt.uint32())<<32 | uint64(s.mt.uint32())) & mask
				if v <= rng {
					break
				}
			}
		}
		out[i] = int64(off + v)
	}
	return out, nil
}
