package mock

import (
	"fmt"
	"io"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// timing holds the distributions the summary reports, in nanoseconds. The
// writer records into it; Summary reads it under the same lock.
type timing struct {
	mu          sync.Mutex
	ttftNs      *hdrhistogram.Histogram
	itlNs       *hdrhistogram.Histogram
	latenessNs  *hdrhistogram.Histogram
	negativeLag int64
}

// maxTrackedNs is the largest recorded value (one hour); larger ones are
// clamped so that a stuck stream still counts.
const maxTrackedNs = int64(time.Hour)

func newTiming() *timing {
	return &timing{
		ttftNs:     hdrhistogram.New(1, maxTrackedNs, 3),
		itlNs:      hdrhistogram.New(1, maxTrackedNs, 3),
		latenessNs: hdrhistogram.New(1, maxTrackedNs, 3),
	}
}

func recordClamped(h *hdrhistogram.Histogram, v int64) {
	_ = h.RecordValue(min(max(v, 1), maxTrackedNs))
}

// token records one token event under one lock: its lateness, and its
// TTFT (first token) or its gap since the stream's previous token.
func (t *timing) token(latenessNs, sinceNs int64, first bool) {
	t.mu.Lock()
	if latenessNs < 0 {
		t.negativeLag++
	}
	recordClamped(t.latenessNs, latenessNs)
	if first {
		recordClamped(t.ttftNs, sinceNs)
	} else {
		recordClamped(t.itlNs, sinceNs)
	}
	t.mu.Unlock()
}

// Percentiles summarises one distribution, in nanoseconds.
type Percentiles struct {
	Count                    int64
	P50, P90, P99, P999, Max int64
}

func percentilesOf(h *hdrhistogram.Histogram) Percentiles {
	return Percentiles{
		Count: h.TotalCount(),
		P50:   h.ValueAtQuantile(50),
		P90:   h.ValueAtQuantile(90),
		P99:   h.ValueAtQuantile(99),
		P999:  h.ValueAtQuantile(99.9),
		Max:   h.Max(),
	}
}

// TimingSummary is what the mock measured of itself: true TTFT (request
// bytes first seen to first token handed to write(2)), true ITL (between
// consecutive tokens of a stream) and lateness (actual minus intended send
// time of every token).
type TimingSummary struct {
	TTFT, ITL, Lateness Percentiles
}

func (t *timing) summary() TimingSummary {
	t.mu.Lock()
	defer t.mu.Unlock()
	return TimingSummary{
		TTFT:     percentilesOf(t.ttftNs),
		ITL:      percentilesOf(t.itlNs),
		Lateness: percentilesOf(t.latenessNs),
	}
}

// WriteTo prints the summary as a small table.
func (s TimingSummary) WriteTo(w io.Writer) (int64, error) {
	var n int64
	line := func(name string, p Percentiles, unit time.Duration, unitName string) error {
		f := func(ns int64) float64 { return float64(ns) / float64(unit) }
		k, err := fmt.Fprintf(w, "  %-14s n=%-9d p50 %9.3f  p90 %9.3f  p99 %9.3f  p99.9 %9.3f  max %9.3f %s\n",
			name, p.Count, f(p.P50), f(p.P90), f(p.P99), f(p.P999), f(p.Max), unitName)
		n += int64(k)
		return err
	}
	k, err := fmt.Fprintln(w, "mockllm timing summary (CLOCK_MONOTONIC, at write(2)):")
	n += int64(k)
	if err != nil {
		return n, err
	}
	if err := line("true TTFT", s.TTFT, time.Millisecond, "ms"); err != nil {
		return n, err
	}
	if err := line("true ITL", s.ITL, time.Millisecond, "ms"); err != nil {
		return n, err
	}
	err = line("lateness", s.Lateness, time.Microsecond, "µs")
	return n, err
}
