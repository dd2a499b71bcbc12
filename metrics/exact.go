package metrics

import (
	"math"
	"slices"
)

// Exact statistics over values read in passes (a record log, or a list),
// without holding the values: numpy's numbers, bit for bit.
//
// The mean and the standard deviation need the values in their order.
// Before numpy 2.3, np.add.reduce sums a float64 array a block of
// npBufSize values at a time, each block pairwise, the block sums added
// left to right onto 0.0 (npReduce). So a pass keeps one block of 8,192
// values: the first pass sums them, the mean is sum/n, and a second pass
// sums the squared deviations from that mean block by block, as np.std
// does once it has materialised them.
//
// The median and the percentiles are values at ranks of the sorted list
// (npPercentile's ⌊h⌋ and ⌊h⌋+1). They are found by exact selection on the
// values' bits: a float64's bits, with the sign flipped (floatKey), sort as
// the floats do. The first pass counts the values by their key's top 16
// bits; a wanted rank then lies in one bucket, at a known rank within it.
// The next pass keeps the values of each such bucket when it holds at
// most selectCollect of them, else counts them by their next 16 bits, and
// so on: after at most four levels the key is whole, and a bucket of one
// key is one value, however many times it occurs. Values kept are sorted,
// and the wanted ranks read off them. Nothing is approximated: the value
// at a rank is a value of the list.

// selectCollect is the most values a selection keeps for one bucket
// (8 MB): a bucket holding more is split by its next 16 bits first.
var selectCollect int64 = 1 << 20

// floatKey maps f to a uint64 whose order is f's (NaN aside).
func floatKey(f float64) uint64 {
	b := math.Float64bits(f)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// keyFloat is floatKey's inverse.
func keyFloat(k uint64) float64 {
	if k>>63 != 0 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}

// exactStat computes one list's Stats over passes: add each value of the
// list in order on every pass, then endPass, until done.
type exactStat struct {
	percentiles []float64
	// zeroIfEmpty summarizes an empty list as the list [0], as Python's
	// blocks print 0 for no values.
	zeroIfEmpty bool
	pass        int // passes ended
	done        bool
	n           int64
	block       []float64
	sum, mean   float64
	sq          float64
	hist        []uint64 // first pass: by the key's top 16 bits
	groups      []*selGroup
	ranks       []int64 // wanted, ascending, unique
	values      map[int64]float64
}

// selGroup is the values whose key's top bits equal prefix: count of
// them, the first of them at rank base of the sorted list, holding the
// wanted ranks.
type selGroup struct {
	prefix uint64
	bits   uint
	base   int64
	count  int64
	ranks  []int64
	kept   []float64 // collecting
	hist   []uint64  // splitting by the next 16 bits
}

func (g *selGroup) match(k uint64) bool {
	return g.bits == 0 || k>>(64-g.bits) == g.prefix>>(64-g.bits)
}

func newExactStat(percentiles []float64) *exactStat {
	return &exactStat{percentiles: percentiles}
}

// add takes the list's next value.
func (s *exactStat) add(v float64) {
	if s.done {
		return
	}
	if s.pass <= 1 {
		if s.block == nil {
			s.block = make([]float64, 0, npBufSize)
		}
		s.block = append(s.block, v)
		if len(s.block) == npBufSize {
			s.flushBlock()
		}
	}
	k := floatKey(v)
	if s.pass == 0 {
		s.n++
		if s.hist == nil {
			s.hist = make([]uint64, 1<<16)
		}
		s.hist[k>>48]++
		return
	}
	for _, g := range s.groups {
		if !g.match(k) {
			continue
		}
		if g.hist != nil {
			g.hist[(k>>(48-g.bits))&0xFFFF]++
		} else {
			g.kept = append(g.kept, v)
		}
	}
}

func (s *exactStat) flushBlock() {
	if len(s.block) == 0 {
		return
	}
	if s.pass == 0 {
		s.sum += pairwiseSum(s.block, 0, false)
	} else {
		s.sq += pairwiseSum(s.block, s.mean, true)
	}
	s.block = s.block[:0]
}

// endPass ends a pass over the list.
func (s *exactStat) endPass() {
	if s.done {
		return
	}
	s.flushBlock()
	switch s.pass {
	case 0:
		if s.n == 0 && !s.zeroIfEmpty {
			s.done = true
			return
		}
		var zero []float64
		if s.n == 0 {
			s.n, zero = 1, []float64{0}
		}
		s.mean = s.sum / float64(s.n)
		s.ranks = wantedRanks(s.n, s.percentiles)
		s.values = make(map[int64]float64, len(s.ranks))
		root := &selGroup{count: s.n, ranks: s.ranks}
		if zero != nil {
			root.kept = zero
			s.groups = []*selGroup{root}
		} else if s.n <= selectCollect {
			root.kept = make([]float64, 0, s.n)
			s.groups = []*selGroup{root}
		} else {
			s.groups = s.split(root, s.hist)
		}
		s.hist = nil
	default:
		var next []*selGroup
		for _, g := range s.groups {
			if g.hist == nil {
				slices.Sort(g.kept)
				for _, r := range g.ranks {
					s.values[r] = g.kept[r-g.base]
				}
				continue
			}
			next = append(next, s.split(g, g.hist)...)
		}
		s.groups = next
	}
	s.pass++
	if s.pass >= 2 && len(s.groups) == 0 {
		s.done = true
		s.block = nil
	}
}

// split divides g by the 16 bits after its prefix, counted in hist, into
// the groups that hold its wanted ranks; a group whose key is whole is
// one value, known at once.
func (s *exactStat) split(g *selGroup, hist []uint64) []*selGroup {
	var out []*selGroup
	bits := g.bits + 16
	cum := g.base
	ri := 0
	for j, c := range hist {
		if c == 0 {
			continue
		}
		lo, hi := cum, cum+int64(c)
		cum = hi
		var ranks []int64
		for ri < len(g.ranks) && g.ranks[ri] < hi {
			if g.ranks[ri] >= lo {
				ranks = append(ranks, g.ranks[ri])
			}
			ri++
		}
		if len(ranks) == 0 {
			continue
		}
		prefix := g.prefix | uint64(j)<<(64-bits)
		if bits == 64 {
			for _, r := range ranks {
				s.values[r] = keyFloat(prefix)
			}
			continue
		}
		child := &selGroup{prefix: prefix, bits: bits, base: lo, count: int64(c), ranks: ranks}
		if child.count <= selectCollect {
			child.kept = make([]float64, 0, child.count)
		} else {
			child.hist = make([]uint64, 1<<16)
		}
		out = append(out, child)
	}
	return out
}

// wantedRanks are the ranks the median, the percentiles and the maximum
// read, ascending.
func wantedRanks(n int64, percentiles []float64) []int64 {
	var ranks []int64
	if n%2 == 1 {
		ranks = append(ranks, n/2)
	} else {
		ranks = append(ranks, n/2-1, n/2)
	}
	for _, p := range percentiles {
		lo, hi := percentileRanks(n, p)
		ranks = append(ranks, lo, hi)
	}
	ranks = append(ranks, n-1)
	slices.Sort(ranks)
	return slices.Compact(ranks)
}

// percentileRanks are the ranks np.percentile's linear method reads for
// p over n sorted values (npPercentileAt).
func percentileRanks(n int64, p float64) (lo, hi int64) {
	h := float64(n-1) * (p / 100)
	switch {
	case h >= float64(n-1):
		return n - 1, n - 1
	case h < 0:
		return 0, 0
	}
	i := int64(math.Floor(h))
	return i, i + 1
}

// at is the value at rank r of the sorted list (a wanted rank).
func (s *exactStat) at(r int) float64 { return s.values[int64(r)] }

// stats returns the list's Stats once done: its figures in seconds
// (raw) times 1000.
func (s *exactStat) stats() Stats {
	r := s.raw()
	st := Stats{MeanMs: r.MeanMs * 1000, MedianMs: r.MedianMs * 1000, StdMs: r.StdMs * 1000, Percentiles: r.Percentiles}
	for i := range st.Percentiles {
		st.Percentiles[i].ValueMs *= 1000
	}
	return st
}

// raw returns the list's figures in its own units (the Stats fields hold
// them unscaled despite their names).
func (s *exactStat) raw() Stats {
	st := Stats{Percentiles: make([]Percentile, len(s.percentiles))}
	for i, p := range s.percentiles {
		st.Percentiles[i].P = p
	}
	if s.n == 0 {
		return st
	}
	n := int(s.n)
	st.MeanMs = s.mean
	st.StdMs = math.Sqrt(s.sq / float64(s.n))
	st.MedianMs = npMedianAt(n, s.at)
	for i, p := range s.percentiles {
		st.Percentiles[i].ValueMs = npPercentileAt(n, s.at, p)
	}
	return st
}

// max is the largest value once done; 0 for none.
func (s *exactStat) max() float64 {
	if s.n == 0 {
		return 0
	}
	return s.at(int(s.n) - 1)
}

// Lists computes several lists' Stats exactly in the same passes: each
// pass over a log adds every list's values in order (Add), then EndPass,
// while More. Nothing but one numpy block a list and the selection's
// buckets is held.
type Lists struct {
	stats []*exactStat
	pass  int
}

// NewLists is lists lists, summarized with percentiles.
func NewLists(lists int, percentiles []float64) *Lists {
	s := &Lists{stats: make([]*exactStat, lists)}
	for i := range s.stats {
		s.stats[i] = newExactStat(percentiles)
	}
	return s
}

// More reports whether another pass is needed.
func (s *Lists) More() bool {
	for _, st := range s.stats {
		if !st.done {
			return true
		}
	}
	return false
}

// First reports whether the pass under way is the first.
func (s *Lists) First() bool { return s.pass == 0 }

// Add adds the next value of a list.
func (s *Lists) Add(list int, v float64) { s.stats[list].add(v) }

// Done reports whether a list needs no more values.
func (s *Lists) Done(list int) bool { return s.stats[list].done }

// EndPass ends a pass.
func (s *Lists) EndPass() {
	for _, st := range s.stats {
		st.endPass()
	}
	s.pass++
}

// Stats is a list's statistics once no pass is needed, in Stats' units
// (values in seconds give milliseconds).
func (s *Lists) Stats(list int) Stats { return s.stats[list].stats() }

// Len is how many values a list had (after the first pass).
func (s *Lists) Len(list int) int { return int(s.stats[list].n) }

// summarizeSeq computes the Stats of the list each call of pass yields.
func summarizeSeq(pass func(add func(float64)), percentiles []float64) Stats {
	st := newExactStat(percentiles)
	for !st.done {
		pass(st.add)
		st.endPass()
	}
	return st.stats()
}
