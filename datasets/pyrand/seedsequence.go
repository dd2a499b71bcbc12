package pyrand

// numpy.random.SeedSequence constants (numpy/random/bit_generator.pyx),
// after Melissa O'Neill's seed_seq_fe.
const (
	ssPoolSize = 4
	ssInitA    = 0x43b0d7e5
	ssMultA    = 0x931e8875
	ssInitB    = 0x8b51f9dd
	ssMultB    = 0x58f38ded
	ssMixMultL = 0xca01f9dd
	ssMixMultR = 0x4973f715
	ssXShift   = 16
)

// seedSequence is numpy's SeedSequence for a non-negative integer entropy
// with no spawn key; pool is its mixed entropy pool.
type seedSequence struct {
	pool [ssPoolSize]uint32
}

// newSeedSequence mixes the entropy's 32-bit words (least significant
// first; 0 is the single word 0) into the pool.
func newSeedSequence(entropy uint64) *seedSequence {
	words := []uint32{uint32(entropy)}
	if hi := uint32(entropy >> 32); hi != 0 {
		words = append(words, hi)
	}
	s := &seedSequence{}
	hashConst := uint32(ssInitA)
	hashmix := func(v uint32) uint32 {
		v ^= hashConst
		hashConst *= ssMultA
		v *= hashConst
		v ^= v >> ssXShift
		return v
	}
	mix := func(x, y uint32) uint32 {
		r := ssMixMultL*x - ssMixMultR*y
		r ^= r >> ssXShift
		return r
	}
	for i := range s.pool {
		var w uint32
		if i < len(words) {
			w = words[i]
		}
		s.pool[i] = hashmix(w)
	}
	for src := range s.pool {
		for dst := range s.pool {
			if src != dst {
				s.pool[dst] = mix(s.pool[dst], hashmix(s.pool[src]))
			}
		}
	}
	for src := len(s.pool); src < len(words); src++ {
		for dst := range s.pool {
			s.pool[dst] = mix(s.pool[dst], hashmix(words[src]))
		}
	}
	return s
}

// generateState64 is generate_state(n, np.uint64): 2n 32-bit words drawn by
// cycling over the pool, paired little-endian.
func (s *seedSequence) generateState64(n int) []uint64 {
	out := make([]uint64, n)
	hashConst := uint32(ssInitB)
	next := func(i int) uint64 {
		v := s.pool[i%ssPoolSize]
		v ^= hashConst
		hashConst *= ssMultB
		v *= hashConst
		v ^= v >> ssXShift
		return uint64(v)
	}
	for i := range out {
		out[i] = next(2*i) | next(2*i+1)<<32
	}
	return out
}
