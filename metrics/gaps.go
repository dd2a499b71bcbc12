package metrics

import (
	"iter"
	"math"
	"slices"
)

// A gapArena holds the inter-token gaps of every successful request one
// shard ended, exactly, at four bytes a gap: each gap is a uint32 count of
// nanoseconds in fixed-size chunks, appended in the order the requests end.
// A gap that does not fit (negative, or 2^32-1 ns ≈ 4.29 s and longer) is
// stored as gapEscaped and its value in escapes, which stay sorted by
// position because gaps are only appended.
//
// Chunks are never moved or grown, so appending allocates one chunk per
// gapChunkLen gaps and nothing else (an escape list grows by append, once
// per several seconds of stalled stream). Only the shard's own thread
// appends; readers come after the run.
type gapArena struct {
	chunks  [][]uint32
	n       int // gaps stored
	escapes []gapEscape
}

type gapEscape struct {
	pos int
	ns  int64
}

const (
	gapChunkBits = 16
	gapChunkLen  = 1 << gapChunkBits // 256 KiB a chunk
	gapEscaped   = math.MaxUint32
)

// appendGaps stores the gaps between successive stamps and returns them as
// Gaps.
func (a *gapArena) appendGaps(stampsNs []int64) Gaps {
	g := Gaps{arena: a, pos: a.n, n: max(len(stampsNs)-1, 0)}
	for i := 1; i < len(stampsNs); {
		off := a.n & (gapChunkLen - 1)
		if off == 0 && a.n>>gapChunkBits == len(a.chunks) {
			a.chunks = append(a.chunks, make([]uint32, gapChunkLen))
		}
		chunk := a.chunks[a.n>>gapChunkBits][off:]
		k := min(len(chunk), len(stampsNs)-i)
		dst, src := chunk[:k], stampsNs[i-1:i+k]
		prev := src[0]
		for j, ts := range src[1:] {
			gap := ts - prev
			prev = ts
			if uint64(gap) >= gapEscaped { // negative, or too long
				a.escapes = append(a.escapes, gapEscape{a.n + j, gap})
				gap = gapEscaped
			}
			dst[j] = uint32(gap)
		}
		i += k
		a.n += k
	}
	return g
}

// escaped returns the value of the escaped gap at pos.
func (a *gapArena) escaped(pos int) int64 {
	i, _ := slices.BinarySearchFunc(a.escapes, pos, func(e gapEscape, pos int) int { return e.pos - pos })
	return a.escapes[i].ns
}

// Gaps is one request's inter-token gaps in nanoseconds as its shard's
// recorder keeps them when the run keeps no per-request detail: a range of
// the shard's arena. The zero value holds no gap.
type Gaps struct {
	arena *gapArena
	pos   int
	n     int
}

// Len returns the number of gaps.
func (g Gaps) Len() int { return g.n }

// All yields the gaps in order.
func (g Gaps) All() iter.Seq[int64] {
	return func(yield func(int64) bool) {
		for p := g.pos; p < g.pos+g.n; {
			chunk := g.arena.chunks[p>>gapChunkBits][p&(gapChunkLen-1):]
			chunk = chunk[:min(len(chunk), g.pos+g.n-p)]
			for j, v := range chunk {
				ns := int64(v)
				if v == gapEscaped {
					ns = g.arena.escaped(p + j)
				}
				if !yield(ns) {
					return
				}
			}
			p += len(chunk)
		}
	}
}

// NumITLs returns how many inter-token gaps the request has: len(ITLNs) in
// a detailed run, else Gaps.Len().
func (r *RequestResult) NumITLs() int {
	if r.ITLNs != nil {
		return len(r.ITLNs)
	}
	return r.Gaps.Len()
}

// ITLs yields the request's inter-token gaps in nanoseconds, in order, from
// ITLNs in a detailed run, else from Gaps: Python's itl list, exactly.
func (r *RequestResult) ITLs() iter.Seq[int64] {
	if r.ITLNs != nil {
		return slices.Values(r.ITLNs)
	}
	return r.Gaps.All()
}
