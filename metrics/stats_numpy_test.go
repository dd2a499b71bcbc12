package metrics

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// numpyGolden is testdata/numpy/numpy_stats.json, numpy's statistics over
// the lists numpyDraw makes; testdata/numpy/gen.py writes it.
type numpyGolden struct {
	Numpy string
	Cases []struct {
		Dist                   string
		N                      int
		Seed                   uint64
		Sum, Mean, Median, Std float64
		Percentiles            [][2]float64
	}
}

// numpyDraw is gen.py's draw: n float seconds from integer nanoseconds
// drawn with a 64-bit LCG.
func numpyDraw(dist string, n int, seed uint64) []float64 {
	x := seed
	out := make([]float64, n)
	for i := range out {
		x = x*6364136223846793005 + 1442695040888963407
		r := x >> 11
		var ns uint64
		switch dist {
		case "itl":
			if r%512 != 0 {
				ns = 15_000_000 + r%20_000_000
			} else {
				ns = r % 4_000_000_000
			}
		case "wide":
			ns = 1_000 + r%10_000*uint64(math.Pow10(int(r>>40&7)))
		case "tpot":
			out[i] = Seconds(int64(r%2_000_000_000)) / float64(1+(r>>45)%999)
			continue
		default:
			ns = 50_000_000 + r%1_950_000_000
		}
		out[i] = Seconds(int64(ns))
	}
	return out
}

// TestStatisticsMatchNumpy checks every statistic against numpy itself
// (numpy < 2.3, as vLLM pins) on lists of up to 100,003 values, most longer
// than numpy's 8,192-value reduction buffer: sums, means and standard
// deviations must follow its blocked order to the last bit.
func TestStatisticsMatchNumpy(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "numpy", "numpy_stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g numpyGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) < 10 {
		t.Fatalf("%d cases in the golden file", len(g.Cases))
	}
	// Cases where one pairwise sum over the whole list (numpy ≥ 2.3's
	// order, and stampede's before) gets the sum or the std wrong.
	unblockedSum, unblockedStd := 0, 0
	for _, c := range g.Cases {
		a := numpyDraw(c.Dist, c.N, c.Seed)
		bit := func(what string, got, want float64) {
			t.Helper()
			if got != want {
				t.Errorf("%s n=%d seed=%d: %s = %v, numpy %v", c.Dist, c.N, c.Seed, what, got, want)
			}
		}
		bit("sum", npSum(a), c.Sum)
		bit("mean", npMean(a), c.Mean)
		bit("std", npStd(a), c.Std)
		sorted := slices.Sorted(slices.Values(a))
		bit("median", npMedianSorted(sorted), c.Median)
		for _, p := range c.Percentiles {
			bit("percentile", npPercentileSorted(sorted, p[0]), p[1])
		}
		// summarize reports the same values in milliseconds.
		st := summarize(a, []float64{99.9})
		bit("summarize mean", st.MeanMs, c.Mean*1000)
		bit("summarize std", st.StdMs, c.Std*1000)
		sum := 0.0 + pairwiseSum(a, 0, false)
		if sum != c.Sum {
			unblockedSum++
		}
		if math.Sqrt((0.0+pairwiseSum(a, sum/float64(len(a)), true))/float64(len(a))) != c.Std {
			unblockedStd++
		}
	}
	if unblockedSum == 0 || unblockedStd == 0 {
		t.Errorf("test premise broken: one pairwise sum gets %d sums and %d stds wrong; want some of each",
			unblockedSum, unblockedStd)
	}
}
