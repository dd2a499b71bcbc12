package metrics

import (
	"math"
	"sort"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// histogramSummary computes Stats from a histogram of nanosecond values
// with the same formulas as summarize, reading the histogram as the sorted
// list it stands for: every recorded value is replaced by the midpoint of
// its bucket (HdrHistogram's "median equivalent value", the value its own
// Mean uses), the k-th smallest value is found from cumulative counts, and
// numpy's linear interpolation runs between neighbouring ranks.
//
// The result is an approximation: with 3 significant digits a bucket spans
// at most 1/1024 of its values (about ±0.05 %), so a 25.000 ms ITL is
// reported within ±12 µs. Mean and standard deviation are sums over
// buckets rather than numpy's pairwise sums over values. Exact per-token
// values (--save-detailed) avoid the approximation.
func histogramSummary(h *hdrhistogram.Histogram, percentiles []float64) Stats {
	bars := nonEmptyBars(h)
	var n int64
	if len(bars) > 0 {
		n = bars[len(bars)-1].cum
	}
	st := Stats{Percentiles: make([]Percentile, len(percentiles))}
	for i, p := range percentiles {
		st.Percentiles[i].P = p
	}
	if n == 0 {
		return st
	}
	total := float64(n)
	var sum float64
	for i, b := range bars {
		sum += float64(b.count(bars, i)) * b.valueS
	}
	mean := sum / total
	var sq float64
	for i, b := range bars {
		d := b.valueS - mean
		sq += float64(b.count(bars, i)) * (d * d)
	}
	at := func(k int) float64 { return rankValue(bars, int64(k)) }
	st.MeanMs = mean * 1000
	st.StdMs = math.Sqrt(sq/total) * 1000
	if n%2 == 1 {
		st.MedianMs = at(int(n/2)) * 1000
	} else {
		st.MedianMs = (at(int(n/2)-1) + at(int(n/2))) / 2 * 1000
	}
	for i, p := range percentiles {
		st.Percentiles[i].ValueMs = lerpAt(at, int(n), p) * 1000
	}
	return st
}

// histBar is one non-empty histogram bucket: its representative value in
// seconds and the number of values up to and including it.
type histBar struct {
	valueS float64
	cum    int64
}

func (b histBar) count(bars []histBar, i int) int64 {
	if i == 0 {
		return b.cum
	}
	return b.cum - bars[i-1].cum
}

func nonEmptyBars(h *hdrhistogram.Histogram) []histBar {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	var bars []histBar
	var cum int64
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		cum += b.Count
		mid := b.From + (b.To-b.From+1)/2
		bars = append(bars, histBar{valueS: float64(mid) / 1e9, cum: cum})
	}
	return bars
}

// rankValue returns the k-th smallest value (0-based).
func rankValue(bars []histBar, k int64) float64 {
	i := sort.Search(len(bars), func(i int) bool { return bars[i].cum > k })
	if i == len(bars) {
		i = len(bars) - 1
	}
	return bars[i].valueS
}
