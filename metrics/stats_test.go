package metrics

import (
	"math"
	"slices"
	"testing"

	"github.com/stampede-bench/stampede/internal/py"
)

// Expected values were computed by hand from numpy's algorithms (pairwise
// summation, linear percentile with _lerp) and cross-checked with a
// line-by-line Python transcription of them.

func TestPairwiseSumMatchesNumpy(t *testing.T) {
	tenths := slices.Repeat([]float64{0.1}, 10)
	// np.sum([0.1]*10) is exactly 1.0; left-to-right summation is not.
	if got := npSum(tenths); got != 1.0 {
		t.Errorf("npSum(0.1×10) = %v, want 1 (numpy's 8-way unrolled sum)", got)
	}
	naive := 0.0
	for _, v := range tenths {
		naive += v
	}
	if naive == 1.0 {
		t.Fatal("test premise broken: naive sum of 0.1×10 is exactly 1")
	}
}

// spread returns n deterministic values in seconds (1 ms .. 11 ms).
func spread(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64((i*7919)%1009)/1e5 + 0.001
	}
	return v
}

func TestSummaryStatistics(t *testing.T) {
	tests := []struct {
		name        string
		values      []float64
		percentiles []float64
		mean        float64
		median      float64
		std         float64
		pcts        []float64
	}{
		{
			name: "empty gives zeros", values: nil, percentiles: []float64{50, 99},
			pcts: []float64{0, 0},
		},
		{
			name: "single value", values: []float64{0.25}, percentiles: []float64{0, 99, 100},
			mean: 0.25, median: 0.25, std: 0, pcts: []float64{0.25, 0.25, 0.25},
		},
		{
			name: "four values", values: []float64{4, 1, 3, 2},
			percentiles: []float64{0, 12.5, 50, 99, 99.9, 100},
			mean:        2.5, median: 2.5, std: math.Sqrt(1.25),
			pcts: []float64{1, 1.375, 2.5, 3.9699999999999998, 3.9970000000000003, 4},
		},
		{
			name: "population std", values: []float64{2, 4, 4, 4, 5, 5, 7, 9},
			percentiles: []float64{25},
			mean:        5, median: 4.5, std: 2, pcts: []float64{4},
		},
		{
			// 1000 values: the pairwise split (496/504, ...) decides the
			// last digit of the mean; a plain loop gives ...7999999999.
			name: "1000 values, numpy's digits", values: spread(1000),
			percentiles: []float64{12.5, 99, 99.9},
			mean:        0.00604678, median: 0.006055, std: 0.0029135907110642706,
			pcts: []float64{0.00225875, 0.0109801, 0.011070010000000002},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := slices.Clone(tt.values)
			st := summarize(tt.values, tt.percentiles)
			if !slices.Equal(orig, tt.values) {
				t.Error("summarize reordered its input")
			}
			check := func(what string, got, wantS float64) {
				t.Helper()
				if want := wantS * 1000; got != want {
					t.Errorf("%s = %v ms, want %v", what, got, want)
				}
			}
			check("mean", st.MeanMs, tt.mean)
			check("median", st.MedianMs, tt.median)
			check("std", st.StdMs, tt.std)
			if len(st.Percentiles) != len(tt.pcts) {
				t.Fatalf("%d percentiles, want %d", len(st.Percentiles), len(tt.pcts))
			}
			for i, p := range st.Percentiles {
				if p.P != tt.percentiles[i] {
					t.Errorf("percentile %d is P%v, want P%v", i, p.P, tt.percentiles[i])
				}
				check("P"+py.FloatRepr(p.P), p.ValueMs, tt.pcts[i])
			}
		})
	}
}

func TestMeanOfThousandDiffersFromNaiveLoop(t *testing.T) {
	v := spread(1000)
	naive := 0.0
	for _, x := range v {
		naive += x
	}
	naive /= 1000
	if naive == npMean(v) {
		t.Fatal("test premise broken: naive mean equals numpy's")
	}
	if got, want := npMean(v)*1000, 6.04678; got != want {
		t.Errorf("mean = %v ms, want %v", got, want)
	}
}

func BenchmarkSummarize(b *testing.B) {
	v := spread(10000)
	ps := []float64{50, 90, 99}
	b.ReportAllocs()
	for b.Loop() {
		summarize(v, ps)
	}
}

// TestNearestRank: the quantile is a measured value, ⌈p·n⌉-th of the
// sorted values, the ends clamped, nothing for no values.
func TestNearestRank(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	for _, c := range []struct{ p, want float64 }{{0.2, 1}, {0.21, 2}, {0.5, 3}, {0.99, 5}, {1, 5}, {0, 1}, {-1, 1}, {2, 5}} {
		if got := NearestRank(xs, c.p); got != c.want {
			t.Errorf("NearestRank(%v, %g) = %g, want %g", xs, c.p, got, c.want)
		}
	}
	lags := []int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	if p50, p99 := NearestRank(lags, 0.5), NearestRank(lags, 0.99); p50 != 50 || p99 != 100 {
		t.Errorf("p50, p99 of ten = %d, %d, want 50, 100", p50, p99)
	}
	if got := NearestRank([]int64(nil), 0.5); got != 0 {
		t.Errorf("NearestRank of nothing = %d, want 0", got)
	}
}
