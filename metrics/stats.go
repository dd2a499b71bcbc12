package metrics

import (
	"math"
	"slices"
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

// pairwiseSum is numpy's pairwise_sum for float64 (numpy/_core/src/umath/
// loops_utils.h.src), which np.add.reduce, and so np.mean and np.std, use on
// a contiguous array: fewer than 8 values are added left to right; up to 128
// values go into 8 accumulators r[j] += a[i+j], combined as
// ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)) before the tail is added; longer
// arrays are split at n/2 rounded down to a multiple of 8 and the halves
// summed recursively. Reproducing the order reproduces numpy's rounding.
func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		res := 0.0
		for _, v := range a {
			res += v
		}
		return res
	case n <= pwBlockSize:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += a[i+j]
			}
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += a[i]
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
	}
}

// npSum is np.add.reduce over a float64 array: the add identity 0.0 plus
// the pairwise sum of all values.
func npSum(a []float64) float64 {
	return 0.0 + pairwiseSum(a)
}

// npMean is np.mean: npSum / n. An empty list gives 0, as Python's
// `np.mean(values or 0)` does.
func npMean(a []float64) float64 {
	if len(a) == 0 {
		return 0
	}
	return npSum(a) / float64(len(a))
}

// npStd is np.std with ddof=0: the square root of the mean of squared
// deviations from npMean, every sum pairwise as numpy does it.
func npStd(a []float64) float64 {
	if len(a) == 0 {
		return 0
	}
	mean := npMean(a)
	sq := make([]float64, len(a))
	for i, v := range a {
		d := v - mean
		sq[i] = d * d
	}
	return math.Sqrt(npSum(sq) / float64(len(a)))
}

// npMedianSorted is np.median of ascending values: the middle value, or for
// an even count the mean of the two middle ones, (a+b)/2.
func npMedianSorted(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return npSum(sorted[n/2-1:n/2+1]) / 2
}

// npPercentileSorted is np.percentile(values, p) with numpy's default
// "linear" method, on ascending values x[0..n-1]:
//
//	q = p/100, h = (n-1)·q, i = ⌊h⌋, g = h - i
//	h ≥ n-1  ⇒ x[n-1]
//	g < 0.5  ⇒ x[i] + (x[i+1]-x[i])·g
//	g ≥ 0.5  ⇒ x[i+1] - (x[i+1]-x[i])·(1-g)
//
// The two branches are numpy's _lerp, which interpolates from the nearer
// end; the products are rounded before the sum (no fused multiply-add) as
// numpy's separate ufunc calls are. An empty list gives 0. p must be in
// [0, 100] (Compute checks).
func npPercentileSorted(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	return lerpAt(func(k int) float64 { return sorted[k] }, n, p)
}

// lerpAt applies numpy's linear percentile to n ascending values read
// through at(k), so exact lists and histograms share one formula.
func lerpAt(at func(k int) float64, n int, p float64) float64 {
	q := p / 100
	h := float64(n-1) * q
	if h >= float64(n-1) {
		return at(n - 1)
	}
	if h < 0 {
		return at(0)
	}
	i := math.Floor(h)
	g := h - i
	a, b := at(int(i)), at(int(i)+1)
	diff := b - a
	if g >= 0.5 {
		return b - float64(diff*(1-g))
	}
	return a + float64(diff*g)
}

// summarize computes Stats from values in seconds; it sorts a copy and
// leaves values (whose order the mean depends on) untouched.
func summarize(values []float64, percentiles []float64) Stats {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	st := Stats{
		MeanMs:      npMean(values) * 1000,
		MedianMs:    npMedianSorted(sorted) * 1000,
		StdMs:       npStd(values) * 1000,
		Percentiles: make([]Percentile, len(percentiles)),
	}
	for i, p := range percentiles {
		st.Percentiles[i] = Percentile{P: p, ValueMs: npPercentileSorted(sorted, p) * 1000}
	}
	return st
}
