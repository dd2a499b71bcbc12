package pyrand

import (
	"fmt"
	"math/bits"
)

// Generator is numpy.random.default_rng(seed): SeedSequence(seed) → PCG64.
type Generator struct {
	bg pcg64
}

// NewGenerator returns numpy.random.default_rng(seed) for a non-negative
// integer seed.
func NewGenerator(seed uint64) *Generator {
	st := newSeedSequence(seed).generateState64(4)
	g := &Generator{}
	g.bg.seed(st[0], st[1], st[2], st[3])
	return g
}

// Uint64 is the bit generator's next 64-bit output.
func (g *Generator) Uint64() uint64 { return g.bg.uint64() }

// Random is Generator.random(): the top 53 bits of a 64-bit draw.
func (g *Generator) Random() float64 {
	return float64(g.bg.uint64()>>11) * (1.0 / 9007199254740992.0)
}

// Integers is Generator.integers(low, high, size=n) with the default int64
// dtype and endpoint=False: n draws in [low, high).
func (g *Generator) Integers(low, high int64, n int) ([]int64, error) {
	out := make([]int64, n)
	if err := g.IntegersInto(out, low, high); err != nil {
		return nil, err
	}
	return out, nil
}

// IntegersInto fills dst as Integers would with size=len(dst).
func (g *Generator) IntegersInto(dst []int64, low, high int64) error {
	if low >= high {
		return fmt.Errorf("integers: low >= high (low=%d, high=%d)", low, high)
	}
	rng := uint64(high-1) - uint64(low)
	off := uint64(low)
	switch {
	case rng == 0:
		for i := range dst {
			dst[i] = low
		}
	case rng == 0xFFFFFFFF:
		for i := range dst {
			dst[i] = int64(off + uint64(g.bg.uint32()))
		}
	case rng < 0xFFFFFFFF:
		r := uint32(rng)
		for i := range dst {
			dst[i] = int64(off + uint64(g.lemire32(r)))
		}
	case rng == ^uint64(0):
		for i := range dst {
			dst[i] = int64(off + g.bg.uint64())
		}
	default:
		for i := range dst {
			dst[i] = int64(off + g.lemire64(rng))
		}
	}
	return nil
}

// lemire32 is numpy's buffered_bounded_lemire_uint32: Lemire's
// multiply-shift with rejection, a value in [0, rng].
func (g *Generator) lemire32(rng uint32) uint32 {
	excl := rng + 1
	m := uint64(g.bg.uint32()) * uint64(excl)
	leftover := uint32(m)
	if leftover < excl {
		threshold := (^uint32(0) - rng) % excl
		for leftover < threshold {
			m = uint64(g.bg.uint32()) * uint64(excl)
			leftover = uint32(m)
		}
	}
	return uint32(m >> 32)
}

// lemire64 is numpy's bounded_lemire_uint64, a value in [0, rng].
func (g *Generator) lemire64(rng uint64) uint64 {
	excl := rng + 1
	hi, lo := bits.Mul64(g.bg.uint64(), excl)
	if lo < excl {
		threshold := (^uint64(0) - rng) % excl
		for lo < threshold {
			hi, lo = bits.Mul64(g.bg.uint64(), excl)
		}
	}
	return hi
}
