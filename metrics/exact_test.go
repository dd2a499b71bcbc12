package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortedStats is the statistics as numpy computes them from the whole
// list: the list's own order for the mean and deviation, a sorted copy
// for the rest.
func sortedStats(values, percentiles []float64) (st Stats, maxV float64) {
	st = Stats{MeanMs: npMean(values) * 1000, StdMs: npStd(values) * 1000}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	st.MedianMs = npMedianSorted(sorted) * 1000
	for _, p := range percentiles {
		st.Percentiles = append(st.Percentiles, Percentile{P: p, ValueMs: npPercentileSorted(sorted, p) * 1000})
	}
	if len(sorted) > 0 {
		maxV = sorted[len(sorted)-1]
	}
	return st, maxV
}

// TestExactSelectionMatchesSort checks the passes' selection against a
// sort of the whole list, over lists built to defeat it: values in one
// binade, many equal values, negative ones, one value repeated
// throughout. The bound on what a bucket keeps is lowered so that every
// level of the selection runs.
func TestExactSelectionMatchesSort(t *testing.T) {
	old := selectCollect
	defer func() { selectCollect = old }()
	pct := []float64{0, 0.1, 1, 25, 50, 90, 99, 99.9, 99.99, 100}
	rng := rand.New(rand.NewPCG(11, 13))
	lists := map[string]func(n int) []float64{
		"spread": func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = rng.ExpFloat64() * 0.02
			}
			return v
		},
		"one binade": func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = 0.001 + rng.Float64()*0.000999
			}
			return v
		},
		"integer ns": func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = Seconds(20_000_000 + rng.Int64N(3000))
			}
			return v
		},
		"all equal": func(n int) []float64 { return slices.Repeat([]float64{0.25}, n) },
		"signed": func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = rng.NormFloat64()
			}
			v[0], v[1] = 0, math.Inf(1)
			return v
		},
		"two values": func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = []float64{1e-3, math.Nextafter(1e-3, 1)}[rng.IntN(2)]
			}
			return v
		},
	}
	for name, gen := range lists {
		for _, n := range []int{1, 2, 3, 8191, 8192, 8193, 50_000} {
			for _, collect := range []int64{old, 64} {
				selectCollect = collect
				if name == "signed" && n < 2 {
					continue
				}
				values := gen(n)
				want, wantMax := sortedStats(values, pct)
				st := newExactStat(pct)
				for !st.done {
					for _, v := range values {
						st.add(v)
					}
					st.endPass()
				}
				got := st.stats()
				if math.IsInf(wantMax, 1) { // the mean and deviation are inf/NaN: compare the rest
					got.MeanMs, got.StdMs, want.MeanMs, want.StdMs = 0, 0, 0, 0
				}
				if !statsEqual(got, want) || st.max() != wantMax {
					t.Fatalf("%s, n %d, bucket bound %d: got %+v max %v\nwant %+v max %v", name, n, collect, got, st.max(), want, wantMax)
				}
			}
		}
	}
}

func statsEqual(a, b Stats) bool {
	eq := func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }
	if !eq(a.MeanMs, b.MeanMs) || !eq(a.MedianMs, b.MedianMs) || !eq(a.StdMs, b.StdMs) || len(a.Percentiles) != len(b.Percentiles) {
		return false
	}
	for i := range a.Percentiles {
		if a.Percentiles[i].P != b.Percentiles[i].P || !eq(a.Percentiles[i].ValueMs, b.Percentiles[i].ValueMs) {
			return false
		}
	}
	return true
}

// TestFloatKeyOrder: the keys sort as the floats do.
func TestFloatKeyOrder(t *testing.T) {
	values := []float64{math.Inf(-1), -1e300, -1, -1e-300, math.Copysign(0, -1), 0, 1e-300, 1, 1e300, math.Inf(1)}
	for i := 1; i < len(values); i++ {
		if floatKey(values[i-1]) >= floatKey(values[i]) {
			t.Errorf("key(%v) >= key(%v)", values[i-1], values[i])
		}
	}
	for _, v := range values {
		if back := keyFloat(floatKey(v)); math.Float64bits(back) != math.Float64bits(v) {
			t.Errorf("key of %v reads back as %v", v, back)
		}
	}
}

// TestEventSortSpills: pairs sorted through files in several runs come
// out as one in-memory sort gives them.
func TestEventSortSpills(t *testing.T) {
	old := eventRun
	defer func() { eventRun = old }()
	eventRun = 1000
	rng := rand.New(rand.NewPCG(5, 9))
	es := newEventSort(t.TempDir())
	var want []event
	for range 10_500 {
		e := event{rng.Uint64N(3000), rng.Uint64N(2)}
		es.add(e.key, e.aux)
		want = append(want, e)
	}
	slices.SortFunc(want, compareEvents)
	var got []event
	es.each(func(k, a uint64) { got = append(got, event{k, a}) })
	es.close()
	if len(es.runs) < 10 || !slices.Equal(got, want) {
		t.Fatalf("%d runs; %d pairs back, sorted alike: %v", len(es.runs), len(got), slices.Equal(got, want))
	}
}
