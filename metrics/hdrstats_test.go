package metrics

import (
	"math"
	"testing"

	"github.com/stampede-bench/stampede/metrics/pyfmt"
)

func TestHistogramSummaryTracksExact(t *testing.T) {
	// 20,000 gaps from 1 ms to ~60 ms with a long tail.
	values := make([]float64, 20000)
	h := NewITLHistogram()
	for i := range values {
		ns := int64(1e6 + (i*7919)%50000*1000 + (i%97)*(i%89)*1000)
		values[i] = Seconds(ns)
		h.RecordValue(ns)
	}
	ps := []float64{0, 12.5, 50, 90, 99, 99.9, 100}
	exact := summarize(values, ps)
	approx := histogramSummary(h, ps)
	// Three significant digits: every bucket is within 1/1024 of its values.
	within := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > want/1024 {
			t.Errorf("%s = %v, exact %v: off by more than 1/1024", name, got, want)
		}
	}
	within("mean", approx.MeanMs, exact.MeanMs)
	within("median", approx.MedianMs, exact.MedianMs)
	within("std", approx.StdMs, exact.StdMs)
	for i := range ps {
		within("P"+pyfmt.FloatRepr(ps[i]), approx.Percentiles[i].ValueMs, exact.Percentiles[i].ValueMs)
	}
}

func TestHistogramSummaryEmpty(t *testing.T) {
	for _, st := range []Stats{histogramSummary(nil, []float64{99}), histogramSummary(NewITLHistogram(), []float64{99})} {
		if st.MeanMs != 0 || st.MedianMs != 0 || st.StdMs != 0 || st.Percentiles[0] != (Percentile{P: 99}) {
			t.Errorf("empty histogram summary = %+v, want zeros", st)
		}
	}
}

func TestHistogramMedianEvenCount(t *testing.T) {
	h := NewITLHistogram()
	for _, v := range []int64{100, 200, 300, 400} { // one-value buckets below 2048 ns
		h.RecordValue(v)
	}
	st := histogramSummary(h, []float64{50})
	if st.MedianMs != 0.00025 || st.Percentiles[0].ValueMs != 0.00025 {
		t.Errorf("median = %v, p50 = %v; want 0.00025 ms (250 ns)", st.MedianMs, st.Percentiles[0].ValueMs)
	}
}

// BenchmarkCompute measures the post-run statistics of 10,000 requests of
// 200 token events each (2M exact gaps, the --save-detailed case) and the
// same run from the histogram.
func BenchmarkCompute(b *testing.B) {
	d := &RunData{DurationNs: int64(60e9), ITL: NewITLHistogram(), TokenEventsPerMs: make([]uint32, 60000)}
	for i := range 10000 {
		r := RequestResult{Index: i, Success: true, PromptLen: 1000, OutputTokens: 200, ChunkEvents: 200,
			StartNs: int64(i) * 4e6, TTFTNs: int64(50e6 + i%1000*1000)}
		ts := r.StartNs + r.TTFTNs
		d.TokenEventsPerMs[ts/1e6]++
		for g := range 199 {
			gap := int64(20e6 + (i*31+g*17)%5000*1000)
			r.ITLNs = append(r.ITLNs, gap)
			d.ITL.RecordValue(gap)
			ts += gap
			if ts/1e6 < int64(len(d.TokenEventsPerMs)) {
				d.TokenEventsPerMs[ts/1e6]++
			}
		}
		r.LatencyNs = ts - r.StartNs
		d.Results = append(d.Results, r)
	}
	opts := ComputeOptions{Percentiles: []float64{50, 90, 99}}
	b.Run("exact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Compute(d, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	hist := *d
	hist.Results = make([]RequestResult, len(d.Results))
	copy(hist.Results, d.Results)
	for i := range hist.Results {
		hist.Results[i].ITLNs = nil
	}
	b.Run("histogram", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Compute(&hist, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
}
