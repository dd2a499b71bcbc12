package metrics

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// recordStream runs one request through rec: token events at stampsNs,
// each followed by its running count (running[i], -1 for none).
func recordStream(rec *Recorder, s *Stream, index int, stampsNs, running []int64) {
	rec.Begin(s, index, 4, 0, 0)
	for i, ts := range stampsNs {
		s.Token(ts, nil)
		s.RunningUsage(running[i])
	}
	rec.EndStream(s)
}

func TestRunningUsageStates(t *testing.T) {
	cases := []struct {
		name    string
		running []int64
		state   RunningUsage
		counts  []int
	}{
		{"counted", []int64{0, 2, 5, 6}, RunningCounted, []int{0, 2, 3, 1}},
		{"none sent", []int64{-1, -1, -1, -1}, RunningMissing, nil},
		{"one missing", []int64{1, 2, -1, 4}, RunningMissing, nil},
		{"falls", []int64{1, 3, 2, 4}, RunningInvalid, nil},
		{"too large a step", []int64{1, 2, 3, 3 + maxChunkTokens + 1}, RunningInvalid, nil},
		{"largest step", []int64{1, 2, 3, 3 + maxChunkTokens}, RunningCounted, []int{1, 1, 1, maxChunkTokens}},
	}
	for _, spill := range []bool{false, true} {
		rec := NewRecorder(Options{RunningUsage: true, Spool: testSpool(spill)})
		var s Stream // reused, as a connection reuses it
		for i, tc := range cases {
			recordStream(rec, &s, i, []int64{10, 20, 30, 40}, tc.running)
		}
		data := gatherTest(len(cases), rec)
		for i, tc := range cases {
			ct := data.Results[i].ChunkTokens
			if ct.State != tc.state || !slices.Equal(ct.Counts(), tc.counts) && tc.counts != nil || tc.counts == nil && ct.Len() != 0 {
				t.Errorf("spill %v, %s: state %v counts %v; want %v %v", spill, tc.name, ct.State, ct.Counts(), tc.state, tc.counts)
			}
		}
	}
}

func TestRunningUsageOff(t *testing.T) {
	rec := NewRecorder(Options{})
	var s Stream
	recordStream(rec, &s, 0, []int64{10, 20}, []int64{1, 3})
	if ct := gatherTest(1, rec).Results[0].ChunkTokens; ct.State != RunningUntracked || ct.Len() != 0 || s.running.counts != nil {
		t.Errorf("without the option: %+v, buffer %v", ct, s.running.counts)
	}
	if ComputePerToken(gatherTest(1, rec).Log, []float64{99}) != nil {
		t.Error("ComputePerToken summarized a run that tracked nothing")
	}
}

// TestRunningUsageZeroAllocs: counting tokens per event allocates nothing
// per token once a connection's Stream has grown.
func TestRunningUsageZeroAllocs(t *testing.T) {
	rec := NewRecorder(Options{RunningUsage: true})
	var s Stream
	stream := func() {
		rec.Begin(&s, 0, 4, 0, 0)
		for i := range int64(200) {
			s.Token(i, nil)
			s.RunningUsage(2 * i)
		}
	}
	stream()
	if n := testing.AllocsPerRun(20, stream); n != 0 {
		t.Errorf("%v allocations per 200-event stream, want 0", n)
	}
}

// TestCountedChunkTokens: counts handed over whole (a partial's) go
// through a record and back in order, in runs of equal counts.
func TestCountedChunkTokens(t *testing.T) {
	for _, n := range []int{1, 7, 1 << 16, 2<<16 + 5} {
		counts := make([]uint16, n)
		for i := range counts {
			counts[i] = uint16(i / 3 % 11)
		}
		r := RequestResult{Success: true, ChunkEvents: n, ITLNs: make([]int64, n-1), ChunkTokens: CountedChunkTokens(counts), Reasoning: noReasoning}
		back := LogOf(r).Collect()[0]
		ct := back.ChunkTokens
		got := ct.Counts()
		if ct.State != RunningCounted || ct.Len() != n || len(got) != n {
			t.Fatalf("%d counts: state %v, %d back", n, ct.State, len(got))
		}
		for i, v := range got {
			if v != i/3%11 {
				t.Fatalf("%d counts: count %d is %d, want %d", n, i, v, i/3%11)
			}
		}
	}
}

// perTokenOracle computes one counted request's per-token samples another
// way: the k tokens of an event are spread evenly over the time since the
// event that carried the previous token, each token getting its own
// arrival time; the samples are the differences of successive arrivals
// after the first event's tokens.
func perTokenOracle(stampsNs []int64, counts []int) []float64 {
	var arrivals []float64
	first := -1
	prev := 0.0
	for i, k := range counts {
		t := Seconds(stampsNs[i])
		if k == 0 {
			continue
		}
		if first < 0 {
			first = len(arrivals) + k - 1
			for range k {
				arrivals = append(arrivals, t)
			}
			prev = t
			continue
		}
		for m := 1; m <= k; m++ {
			arrivals = append(arrivals, prev+(t-prev)*float64(m)/float64(k))
		}
		prev = t
	}
	var out []float64
	for j := first + 1; j < len(arrivals); j++ {
		out = append(out, arrivals[j]-arrivals[j-1])
	}
	return out
}

func TestComputePerTokenMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 17))
	pct := []float64{50, 90, 99}
	for _, spill := range []bool{false, true} {
		rec := NewRecorder(Options{RunningUsage: true, Spool: testSpool(spill)})
		var s Stream
		var oracle []float64
		hist := map[int]int64{}
		var empty int64
		const n = 40
		for i := range n {
			events := 1 + rng.IntN(30)
			stamps := make([]int64, events)
			running := make([]int64, events)
			counts := make([]int, events)
			var ts, total int64
			for e := range events {
				ts += rng.Int64N(40_000_000)
				stamps[e] = ts
				counts[e] = rng.IntN(5) // 0..4 tokens, a role chunk's 0 included
				total += int64(counts[e])
				running[e] = total
				if counts[e] == 0 {
					empty++
				} else {
					hist[counts[e]]++
				}
			}
			if i%10 == 9 { // a request that falls back: chunk gaps as they are
				running[events-1] = -1
				for e := 1; e < events; e++ {
					oracle = append(oracle, Seconds(stamps[e]-stamps[e-1]))
				}
				for _, k := range counts {
					if k == 0 {
						empty--
					} else {
						hist[k]--
					}
				}
			} else {
				oracle = append(oracle, perTokenOracle(stamps, counts)...)
			}
			recordStream(rec, &s, i, stamps, running)
		}
		p := ComputePerToken(gatherTest(n, rec).Log, pct)
		if p.Requests != n || p.Counted != n-n/10 || p.Missing != n/10 || p.Fallback() != n/10 || p.Samples != len(oracle) {
			t.Fatalf("spill %v: %+v; want %d requests, %d fallback, %d samples", spill, p, n, n/10, len(oracle))
		}
		want := summarize(oracle, pct)
		for i, w := range want.Percentiles {
			if d := p.ITL.Percentiles[i].ValueMs - w.ValueMs; d > 1e-9 || d < -1e-9 {
				t.Errorf("P%v per-token ITL %v ms, oracle %v", w.P, p.ITL.Percentiles[i].ValueMs, w.ValueMs)
			}
		}
		if d := p.ITL.MeanMs - want.MeanMs; d > 1e-9 || d < -1e-9 {
			t.Errorf("mean per-token ITL %v ms, oracle %v", p.ITL.MeanMs, want.MeanMs)
		}
		tpc := p.TokensPerChunk
		if tpc.EmptyChunks != empty {
			t.Errorf("empty chunks %d, want %d", tpc.EmptyChunks, empty)
		}
		var expanded []float64
		for _, bin := range tpc.Histogram {
			if hist[bin.Tokens] != bin.Chunks {
				t.Errorf("histogram bin %d: %d chunks, want %d", bin.Tokens, bin.Chunks, hist[bin.Tokens])
			}
			for range bin.Chunks {
				expanded = append(expanded, float64(bin.Tokens))
			}
		}
		if int64(len(expanded)) != tpc.Chunks || npMean(expanded) != tpc.Mean ||
			npPercentileSorted(expanded, 50) != tpc.P50 || npPercentileSorted(expanded, 90) != tpc.P90 || npPercentileSorted(expanded, 99) != tpc.P99 {
			t.Errorf("tokens per chunk %+v, from its histogram: mean %v p50 %v p90 %v p99 %v", tpc,
				npMean(expanded), npPercentileSorted(expanded, 50), npPercentileSorted(expanded, 90), npPercentileSorted(expanded, 99))
		}
	}
}

// TestHistPercentile checks the histogram percentile against numpy's
// linear percentile of the list it stands for.
func TestHistPercentile(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 200 {
		hist := make([]int64, 1+rng.IntN(8))
		var list []float64
		for k := range hist {
			hist[k] = rng.Int64N(4)
			for range hist[k] {
				list = append(list, float64(k))
			}
		}
		if len(list) == 0 {
			continue
		}
		for _, p := range []float64{0, 1, 25, 50, 90, 99, 99.9, 100} {
			if got, want := histPercentile(hist, int64(len(list)), p), npPercentileSorted(list, p); got != want {
				t.Fatalf("hist %v p%v: %v, numpy %v", hist, p, got, want)
			}
		}
	}
}
