package metrics

import (
	"cmp"
	"math"
)

// Stats is one metric's summary as `vllm bench serve` reports it: mean,
// median, population standard deviation and the selected percentiles, all
// in milliseconds. Each value is numpy's result in seconds multiplied by
// 1000, in that order, so the printed and saved digits equal Python's.
type Stats struct {
	MeanMs   float64
	MedianMs float64
	StdMs    float64
	// Percentiles follows ComputeOptions.Percentiles, in the order given.
	Percentiles []Percentile
}

// Percentile is one requested percentile P (0..100) and its value.
type Percentile struct {
	P       float64
	ValueMs float64
}

// pwBlockSize is numpy's PW_BLOCKSIZE: below it pairwise summation
// degenerates to eight interleaved running sums.
const pwBlockSize = 128

// npBufSize is numpy's default ufunc buffer size. Before numpy 2.3 (vLLM
// pins 2.2) a reduction over a float64 array hands the add loop at most
// this many values at a time: np.add.reduce sums the array in blocks of
// 8,192, each block pairwise, the block sums added left to right onto the
// identity 0.0.
const npBufSize = 8192

// pairwiseSum is numpy's pairwise_sum for float64 (numpy/_core/src/umath/
// loops_utils.h.src), the add loop of a reduction over one block: fewer
// than 8 values are added left to right; up to 128 values go into 8
// accumulators r[j] += a[i+j], combined as ((r0+r1)+(r2+r3))+((r4+r5)+
// (r6+r7)) before the tail is added; longer blocks are split at n/2 rounded
// down to a multiple of 8 and the halves summed recursively.
//
// With sqDev set it sums (a[i]-mean)² instead of a[i], in the same order:
// the squared deviations np.std materialises before reducing them, computed
// where numpy would read them, so they need no array of their own.
func pairwiseSum(a []float64, mean float64, sqDev bool) float64 {
	at := func(i int) float64 {
		if sqDev {
			d := a[i] - mean
			return d * d
		}
		return a[i]
	}
	n := len(a)
	switch {
	case n < 8:
		res := 0.0
		for i := range a {
			res += at(i)
		}
		return res
	case n <= pwBlockSize:
		var r [8]float64
		for j := range r {
			r[j] = at(j)
		}
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += at(i + j)
			}
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += at(i)
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(a[:n2], mean, sqDev) + pairwiseSum(a[n2:], mean, sqDev)
	}
}

// npReduce is np.add.reduce over a float64 array, numpy 2.2's order: the
// identity 0.0, plus the pairwise sum of each block of npBufSize values in
// turn. See pairwiseSum for sqDev.
func npReduce(a []float64, mean float64, sqDev bool) float64 {
	res := 0.0
	for len(a) > 0 {
		k := min(len(a), npBufSize)
		res += pairwiseSum(a[:k], mean, sqDev)
		a = a[k:]
	}
	return res
}

// npSum is np.add.reduce (np.sum) over a float64 array.
func npSum(a []float64) float64 { return npReduce(a, 0, false) }

// npMean is np.mean: npSum / n. An empty list gives 0, as Python's
// `np.mean(values or 0)` does.
func npMean(a []float64) float64 {
	if len(a) == 0 {
		return 0
	}
	return npSum(a) / float64(len(a))
}

// npStd is np.std with ddof=0 as numpy's _var computes it: the mean by
// add.reduce / n, the deviations x - mean squared element by element, their
// add.reduce / n, its square root.
func npStd(a []float64) float64 {
	if len(a) == 0 {
		return 0
	}
	mean := npMean(a)
	return math.Sqrt(npReduce(a, mean, true) / float64(len(a)))
}

// npMedianAt is np.median of n values, at(r) giving the value of rank r of
// their ascending order: the middle value, or for an even count the mean
// of the two middle ones, as np.mean computes it ((0.0 + a) + b) / 2.
func npMedianAt(n int, at func(int) float64) float64 {
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return at(n / 2)
	}
	return (0 + (0 + at(n/2-1) + at(n/2))) / 2
}

// npPercentileAt is np.percentile(values, p) with numpy's default
// "linear" method, on n values whose ascending order at(r) reads,
// x[0..n-1]:
//
//	q = p/100, h = (n-1)·q, i = ⌊h⌋, g = h - i
//	h ≥ n-1  ⇒ x[n-1]
//	g < 0.5  ⇒ x[i] + (x[i+1]-x[i])·g
//	g ≥ 0.5  ⇒ x[i+1] - (x[i+1]-x[i])·(1-g)
//
// The two branches are numpy's _lerp, which interpolates from the nearer
// end; the products are rounded before the sum (no fused multiply-add) as
// numpy's separate ufunc calls are. No values give 0. p must be in
// [0, 100] (Compute checks). percentileRanks names the ranks it reads.
func npPercentileAt(n int, at func(int) float64, p float64) float64 {
	if n == 0 {
		return 0
	}
	q := p / 100
	h := float64(n-1) * q
	if h >= float64(n-1) {
		return at(n - 1)
	}
	if h < 0 {
		return at(0)
	}
	i := math.Floor(h)
	return npLerp(at(int(i)), at(int(i)+1), h-i)
}

// npPercentileSorted is npPercentileAt over an ascending slice.
func npPercentileSorted(sorted []float64, p float64) float64 {
	return npPercentileAt(len(sorted), func(r int) float64 { return sorted[r] }, p)
}

// npMedianSorted is npMedianAt over an ascending slice.
func npMedianSorted(sorted []float64) float64 {
	return npMedianAt(len(sorted), func(r int) float64 { return sorted[r] })
}

// NearestRank is the nearest-rank p-quantile of sorted (ascending), p in
// (0, 1]: the smallest value with at least a share p of the values at or
// below it, sorted[⌈p·n⌉ − 1], so that every quantile is a value that was
// measured (the health line's schedule lag, the benchmarks' token errors;
// Python's percentiles interpolate, npPercentileSorted). A p outside
// (0, 1] gives the first or the last value; an empty sorted the zero
// value.
func NearestRank[T cmp.Ordered](sorted []T, p float64) T {
	n := len(sorted)
	if n == 0 {
		var zero T
		return zero
	}
	return sorted[min(max(int(math.Ceil(p*float64(n)))-1, 0), n-1)]
}

// npLerp is numpy's _lerp from a to b at g in [0, 1), as
// npPercentileSorted describes it.
func npLerp(a, b, g float64) float64 {
	diff := b - a
	if g >= 0.5 {
		return b - float64(diff*(1-g))
	}
	return a + float64(diff*g)
}

// summarize computes Stats from values in seconds, in their order, by
// the same exact passes as a log's statistics (exact.go); values is left
// as it is.
func summarize(values []float64, percentiles []float64) Stats {
	return summarizeSeq(func(add func(float64)) {
		for _, v := range values {
			add(v)
		}
	}, percentiles)
}
