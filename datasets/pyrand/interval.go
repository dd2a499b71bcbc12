package pyrand

// Clone is copy.deepcopy(generator): a generator in the same state that
// draws independently from then on.
func (g *Generator) Clone() *Generator {
	c := *g
	return &c
}

// Interval is numpy's random_interval(max): a value in [0, max] drawn by
// masking 32-bit (max < 2**32) or 64-bit outputs to the smallest covering
// power of two and rejecting values above max. Generator.shuffle and
// Generator.permutation draw through it.
func (g *Generator) Interval(max uint64) uint64 {
	if max == 0 {
		return 0
	}
	mask := max
	mask |= mask >> 1
	mask |= mask >> 2
	mask |= mask >> 4
	mask |= mask >> 8
	mask |= mask >> 16
	mask |= mask >> 32
	if max <= 0xFFFFFFFF {
		for {
			if v := uint64(g.bg.uint32()) & mask; v <= max {
				return v
			}
		}
	}
	for {
		if v := g.bg.uint64() & mask; v <= max {
			return v
		}
	}
}

// Shuffle is Generator.shuffle(x) for a sequence of n items (a list or a
// one-dimensional array): for i from n-1 down to 1, swap x[i] with
// x[Interval(i)].
func (g *Generator) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i >= 1; i-- {
		swap(i, int(g.Interval(uint64(i))))
	}
}

// Permutation is Generator.permutation(n): arange(n) shuffled.
func (g *Generator) Permutation(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	g.Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}
