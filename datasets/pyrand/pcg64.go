package pyrand

import "math/bits"

// PCG64's 128-bit LCG multiplier, 0x2360ed051fc65da44385df649fccf645.
const (
	pcgMultHi = 0x2360ed051fc65da4
	pcgMultLo = 0x4385df649fccf645
)

// pcg64 is numpy's PCG64 bit generator: a 128-bit LCG with the XSL-RR
// output function, plus the half-word buffer numpy keeps for 32-bit draws.
type pcg64 struct {
	stateHi, stateLo uint64
	incHi, incLo     uint64
	hasUint32        bool
	uinteger         uint32
}

// seed is pcg64_set_seed → pcg_setseq_128_srandom_r.
func (p *pcg64) seed(stateHi, stateLo, seqHi, seqLo uint64) {
	p.stateHi, p.stateLo = 0, 0
	p.incHi = seqHi<<1 | seqLo>>63
	p.incLo = seqLo<<1 | 1
	p.step()
	var carry uint64
	p.stateLo, carry = bits.Add64(p.stateLo, stateLo, 0)
	p.stateHi, _ = bits.Add64(p.stateHi, stateHi, carry)
	p.step()
	p.hasUint32 = false
}

// step advances the LCG: state = state*mult + inc (mod 2^128).
func (p *pcg64) step() {
	hi, lo := bits.Mul64(p.stateLo, pcgMultLo)
	hi += p.stateHi*pcgMultLo + p.stateLo*pcgMultHi
	var carry uint64
	lo, carry = bits.Add64(lo, p.incLo, 0)
	hi, _ = bits.Add64(hi, p.incHi, carry)
	p.stateHi, p.stateLo = hi, lo
}

// uint64 steps, then outputs rotr64(hi ^ lo, hi >> 58) of the new state.
func (p *pcg64) uint64() uint64 {
	p.step()
	return bits.RotateLeft64(p.stateHi^p.stateLo, -int(p.stateHi>>58))
}

// uint32 serves the low half of a 64-bit draw, then its high half.
func (p *pcg64) uint32() uint32 {
	if p.hasUint32 {
		p.hasUint32 = false
		return p.uinteger
	}
	v := p.uint64()
	p.hasUint32 = true
	p.uinteger = uint32(v >> 32)
	return uint32(v)
}
