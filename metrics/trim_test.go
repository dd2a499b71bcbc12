package metrics

import (
	"math"
	"strings"
	"testing"
)

// trimRun is five requests on a run clock starting at 0; every time is a
// multiple of 0.5 s, so the float sums below are exact. Token events:
//
//	#0 success  start 1.0  events 2.0 3.0 4.0 5.0   (gaps 1 1 1)
//	#1 success  start 1.5  events 2.0 4.0 4.5 7.5   (gaps 2 0.5 3)
//	#2 failed   start 3.0  no token event
//	#3 failed   start 2.5  events 3.5 4.0           (gap 0.5; broke off)
//	#4 skipped  never sent
//
// so t0 = 1.0 (the skipped request does not pull it to 0) and tEnd = 7.5.
func trimRun() *RunData {
	s := func(x float64) int64 { return int64(x * 1e9) }
	return runOf(s(7.5),
		[]RequestResult{
			{Index: 0, Success: true, ChunkEvents: 4, StartNs: s(1), TTFTNs: s(1), LatencyNs: s(4),
				ITLNs: []int64{s(1), s(1), s(1)}},
			{Index: 1, Success: true, ChunkEvents: 4, StartNs: s(1.5), TTFTNs: s(0.5), LatencyNs: s(6),
				ITLNs: []int64{s(2), s(0.5), s(3)}},
			{Index: 2, Error: "Internal Server Error", StartNs: s(3)},
			{Index: 3, Error: "connection reset", ChunkEvents: 2, StartNs: s(2.5), TTFTNs: s(1),
				ITLNs: []int64{s(0.5)}},
			{Index: 4, Error: "cancelled"},
		}...,
	)
}

func TestComputeTrimmed(t *testing.T) {
	tests := []struct {
		name               string
		warmup, cooldown   float64
		lo, hi             float64
		requests, tokens   int
		meanMs, medianMs   float64
		stdMs, p50, p100Ms float64
	}{
		{
			// Window [1, 7.5): every event but #1's last (at tEnd).
			// Gaps 1 1 1 2 0.5 0.5.
			name: "no trimming", lo: 1, hi: 7.5, requests: 3, tokens: 9,
			meanMs: 1000, medianMs: 1000, stdMs: 500, p50: 1000, p100Ms: 2000,
		},
		{
			// Window [2.5, 5.5): #0 3.0 4.0 5.0, #1 4.0 4.5, #3 3.5 4.0.
			// Gaps 1 1 1 2 0.5 0.5: #1's 2-second gap started before the
			// window and is kept whole; #3's first event counts without a gap.
			name: "warm-up and cool-down", warmup: 1.5, cooldown: 2, lo: 2.5, hi: 5.5,
			requests: 3, tokens: 7, meanMs: 1000, medianMs: 1000, stdMs: 500, p50: 1000, p100Ms: 2000,
		},
		{
			// Window [4.5, 7.5): #0 5.0 and #1 4.5 (its 7.5 is at the edge).
			name: "warm-up only", warmup: 3.5, lo: 4.5, hi: 7.5, requests: 2, tokens: 2,
			meanMs: 750, medianMs: 750, stdMs: 250, p50: 750, p100Ms: 1000,
		},
		{
			// Window [1, 2): no event is strictly before 2.0.
			name: "empty of events", cooldown: 5.5, lo: 1, hi: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ComputeTrimmed(trimRun(), TrimOptions{
				WarmupS: tc.warmup, CooldownS: tc.cooldown, Percentiles: []float64{50, 100},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got.WindowStartS != tc.lo || got.WindowEndS != tc.hi || got.DurationS != tc.hi-tc.lo {
				t.Errorf("window [%v, %v) duration %v, want [%v, %v)", got.WindowStartS, got.WindowEndS, got.DurationS, tc.lo, tc.hi)
			}
			if got.Requests != tc.requests || got.Tokens != tc.tokens {
				t.Errorf("requests %d tokens %d, want %d and %d", got.Requests, got.Tokens, tc.requests, tc.tokens)
			}
			if want := float64(tc.tokens) / (tc.hi - tc.lo); got.OutputThroughput != want {
				t.Errorf("output throughput %v, want %v", got.OutputThroughput, want)
			}
			itl := got.ITL
			if itl.MeanMs != tc.meanMs || itl.MedianMs != tc.medianMs || itl.StdMs != tc.stdMs {
				t.Errorf("ITL mean %v median %v std %v, want %v %v %v", itl.MeanMs, itl.MedianMs, itl.StdMs, tc.meanMs, tc.medianMs, tc.stdMs)
			}
			if len(itl.Percentiles) != 2 || itl.Percentiles[0].ValueMs != tc.p50 || itl.Percentiles[1].ValueMs != tc.p100Ms {
				t.Errorf("ITL percentiles %v, want p50 %v p100 %v", itl.Percentiles, tc.p50, tc.p100Ms)
			}
		})
	}
}

func TestComputeTrimmedErrors(t *testing.T) {
	unsent := runOf(0, RequestResult{Index: 0, Error: "cancelled"})
	tests := []struct {
		name string
		d    *RunData
		opts TrimOptions
		want string
	}{
		{"nil data", nil, TrimOptions{}, "no run data"},
		{"bad percentile", trimRun(), TrimOptions{Percentiles: []float64{101}}, "101"},
		{"nothing sent", unsent, TrimOptions{WarmupS: 1}, "no request was sent"},
		{"window closed", trimRun(), TrimOptions{WarmupS: 4, CooldownS: 2.5}, "window is empty"},
		{"window inverted", trimRun(), TrimOptions{WarmupS: 10}, "window is empty"},
		{"window NaN", trimRun(), TrimOptions{WarmupS: math.NaN()}, "window is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ComputeTrimmed(tc.d, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// largeRun is n requests of tokens token events each, 20 ms apart, with
// starts spread over a second.
func largeRun(n, tokens int) *RunData {
	rs := make([]RequestResult, n)
	for i := range rs {
		gaps := make([]int64, tokens-1)
		for k := range gaps {
			gaps[k] = 20*ms + int64(k%7)*ms
		}
		rs[i] = RequestResult{Index: i, Success: true, ChunkEvents: tokens,
			StartNs: int64(i) * 1000 * ms / int64(n), TTFTNs: 100 * ms, LatencyNs: 100*ms + int64(tokens-1)*23*ms, ITLNs: gaps}
	}
	return runOf(0, rs...)
}

// BenchmarkComputeTrimmed measures a post-run trim of one million token
// events (1,000 requests × 1,000 tokens).
func BenchmarkComputeTrimmed(b *testing.B) {
	d := largeRun(1000, 1000)
	opts := TrimOptions{WarmupS: 5, CooldownS: 5, Percentiles: []float64{50, 90, 99}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ComputeTrimmed(d, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ns/token")
}
