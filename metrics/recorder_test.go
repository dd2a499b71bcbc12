package metrics

import (
	"math"
	"reflect"
	"slices"
	"testing"
)

func TestRecorderStreams(t *testing.T) {
	rec := NewRecorder(Options{KeepText: true})
	var s Stream

	// Request 2: three token events, usage, success.
	rec.Begin(&s, 2, 10, 1_000_000, 3_000_000)
	s.Token(5_000_000, []byte("a"))
	s.Token(5_500_000, nil)
	s.Token(7_000_000, []byte("c"))
	s.Usage(12, 3)
	rec.EndStream(&s)

	// Request 0 on the same Stream: no token event.
	rec.Begin(&s, 0, 4, 0, 100)
	s.Usage(-1, 0)
	rec.EndStream(&s)

	// Request 1: reset after one token.
	rec.Begin(&s, 1, 5, 0, 200)
	s.Token(1_200_000, []byte("x"))
	rec.Fail(&s, "connection reset by peer after 1 token event")

	if rec.Completed() != 1 || rec.Failed() != 2 || rec.TokenEvents() != 4 {
		t.Errorf("counters: completed %d failed %d tokens %d; want 1, 2, 4", rec.Completed(), rec.Failed(), rec.TokenEvents())
	}
	data := gatherTest(4, rec)
	ok := data.Results[2]
	if !ok.Success || ok.TTFTNs != 2_000_000 || ok.LatencyNs != 4_000_000 || ok.QueueNs != 2_000_000 ||
		ok.PromptLen != 12 || ok.OutputTokens != 3 || ok.ChunkEvents != 3 || ok.GeneratedText != "ac" ||
		!slices.Equal(ok.ITLNs, []int64{500_000, 1_500_000}) {
		t.Errorf("successful stream: %+v", ok)
	}
	if r := data.Results[0]; r.Success || r.Error != NoTokenError || r.PromptLen != 4 || r.LatencyNs != 0 {
		t.Errorf("empty stream: %+v", r)
	}
	if r := data.Results[1]; r.Success || r.TTFTNs != 1_199_800 || r.LatencyNs != 0 || r.GeneratedText != "" {
		t.Errorf("failed stream: %+v", r)
	}
	if r := data.Results[3]; r.Success || r.Error != "cancelled" || r.Index != 3 {
		t.Errorf("request no recorder saw: %+v", r)
	}
	if r := data.Results[1]; r.NumITLs() != 0 {
		t.Errorf("failed one-token stream has gaps: %v", r.ITLNs)
	}
}

// TestRecorderKeepsExactGaps checks that every gap comes back exactly, in
// order, through the record log, from memory or from its file: long,
// negative and zero gaps alike, failed requests' too (Python keeps them
// on its output record).
func TestRecorderKeepsExactGaps(t *testing.T) {
	for _, spill := range []bool{false, true} {
		rec := NewRecorder(Options{Spool: testSpool(spill)})
		var s Stream
		rec.Begin(&s, 0, 1, 0, 0)
		for _, ts := range []int64{10, 11, 5_000_000_013, 5_000_000_013, 5_000_000_012} {
			s.Token(ts, nil)
		}
		rec.EndStream(&s)
		rec.Begin(&s, 1, 1, 0, 0)
		s.Token(7, nil)
		s.Token(9, nil)
		rec.Fail(&s, "reset")
		rec.Begin(&s, 2, 1, 0, 0)
		s.Token(20, nil)
		s.Token(20+math.MaxInt64/2, nil)
		rec.EndStream(&s)
		data := gatherTest(3, rec)
		if got := slices.Collect(data.Results[0].ITLs()); !slices.Equal(got, []int64{1, 5_000_000_002, 0, -1}) {
			t.Errorf("spill %v: request 0 gaps %v", spill, got)
		}
		if got := data.Results[1].ITLNs; !slices.Equal(got, []int64{2}) {
			t.Errorf("spill %v: failed request's gaps %v, want [2]", spill, got)
		}
		if got := slices.Collect(data.Results[2].ITLs()); !slices.Equal(got, []int64{math.MaxInt64 / 2}) {
			t.Errorf("spill %v: request 2 gaps %v", spill, got)
		}
	}
}

// TestLogAcrossChunks writes records of varied lengths, some longer than
// a chunk, through a spool into a file, and reads every one back.
func TestLogAcrossChunks(t *testing.T) {
	sp := NewSpool(LogConfig{MemoryBytes: -1, ChunkBytes: 4096})
	rec := NewRecorder(Options{Spool: sp})
	var want [][]int64
	var s Stream
	x := uint64(1)
	const n = 60
	for i := range n {
		events := []int{1, 2, 9, 700, 40_000, 70_000}[i%6]
		rec.Begin(&s, i, 1, 0, 0)
		var ts int64
		var gaps []int64
		for k := range events {
			x = x*6364136223846793005 + 1442695040888963407
			gap := int64(x>>44) * 37 // up to ~38 ms
			switch x >> 60 {
			case 0:
				gap = 4_294_967_295 + int64(x>>50) // past 32 bits
			case 1:
				gap = -int64(x >> 54)
			}
			if k > 0 {
				ts += gap
				gaps = append(gaps, gap)
			}
			s.Token(ts, nil)
		}
		rec.EndStream(&s)
		want = append(want, gaps)
	}
	data := gatherTest(n, rec)
	if disk, _ := data.Log.Bytes(); disk == 0 {
		t.Fatal("the log stayed in memory")
	}
	for i := range want {
		if g := data.Results[i].ITLNs; !slices.Equal(g, want[i]) {
			t.Fatalf("request %d: %d gaps read back differ from the %d stored", i, len(g), len(want[i]))
		}
	}
}

func TestRecorderPooling(t *testing.T) {
	rec := NewRecorder(Options{})
	var s Stream
	rec.Begin(&s, 0, 9, 0, 1000)
	s.Usage(7, -1)
	rec.EndPooling(&s, 6000, 3)
	rec.Begin(&s, 1, 9, 0, 1000)
	rec.EndPooling(&s, 2000, 1)
	data := gatherTest(2, rec)
	if r := data.Results[0]; !r.Success || r.TTFTNs != 5000 || r.LatencyNs != 5000 || r.PromptLen != 7 || r.NumInputSequences != 3 {
		t.Errorf("pooling with usage: %+v", r)
	}
	// Python: prompt_len = usage.prompt_tokens or 0.
	if r := data.Results[1]; r.PromptLen != 0 {
		t.Errorf("pooling without usage: prompt len %d; want 0", r.PromptLen)
	}
}

func TestMergeAcrossRecorders(t *testing.T) {
	a, b := NewRecorder(Options{}), NewRecorder(Options{})
	var s Stream
	a.Begin(&s, 1, 1, 0, 0)
	s.Token(1_000_000, nil)
	s.Token(2_000_000, nil)
	a.EndStream(&s)
	b.Begin(&s, 0, 1, 0, 0)
	s.Token(1_500_000, nil)
	s.Token(2_000_000, nil)
	b.EndStream(&s)
	b.Skip(2, 5, 42, "cancelled")
	data := gatherTest(3, a, b)
	for i, want := range []int64{500_000, 1_000_000} {
		if got := slices.Collect(data.Results[i].ITLs()); !slices.Equal(got, []int64{want}) {
			t.Errorf("request %d gaps %v; want [%d]", i, got, want)
		}
	}
	if r := data.Results[2]; r.ArrivalNs != 42 || r.PromptLen != 5 || r.Error != "cancelled" {
		t.Errorf("skipped request: %+v", r)
	}
	if data.Results[0].Index != 0 || data.Results[1].Index != 1 {
		t.Error("results not in request order")
	}
}

func BenchmarkStreamToken(b *testing.B) {
	rec := NewRecorder(Options{})
	var s Stream
	b.ReportAllocs()
	for i := range b.N {
		if i%1024 == 0 {
			rec.Begin(&s, 0, 1, 0, 0)
		}
		s.Token(int64(i), nil)
	}
}

// BenchmarkStreamTokenEnd is BenchmarkStreamToken with every 1,000th event
// ending the request, so encoding its record into the run's log (a spool
// that spills past 1 MiB, as a run's does past its bound, so its chunks
// are reused) is part of the cost per token event.
func BenchmarkStreamTokenEnd(b *testing.B) {
	spool := NewSpool(LogConfig{MemoryBytes: 1 << 20})
	b.Cleanup(func() { spool.Close() })
	rec := NewRecorder(Options{Spool: spool})
	var s Stream
	rec.Begin(&s, 0, 1, 0, 0)
	b.ReportAllocs()
	for i := range b.N {
		s.Token(int64(i)*20_000, nil)
		if i%1000 == 999 {
			rec.EndStream(&s)
			rec.Begin(&s, 0, 1, 0, 0)
		}
	}
}

// TestMemoryAndFileRunsAgree records the same interleaved streams on two
// shards once into a log in memory and once into one written in small
// chunks to a file: every statistic, peak included, must come out the
// same.
func TestMemoryAndFileRunsAgree(t *testing.T) {
	const n = 40
	record := func(spill bool) *Summary {
		opts := Options{Spool: testSpool(spill)}
		recs := []*Recorder{NewRecorder(opts), NewRecorder(opts)}
		ss := make([]Stream, n)
		for i := range ss {
			recs[i%2].Begin(&ss[i], i, 10+i, int64(i)*3_000_000, int64(i)*7_000_000)
		}
		for k := range 300 {
			for i := range ss {
				if k < 50+i*7 {
					ts := int64(i)*7_000_000 + int64(k)*20_000_000 + int64((i*7919+k*104729)%3_000_000)
					if i == 30 && k > 100 {
						ts += 6_000_000_000 // from event 101 on: a stall longer than a packed gap holds
					}
					ss[i].Token(ts, []byte("x "))
				}
			}
		}
		for i := range ss {
			if i == 3 {
				recs[i%2].Fail(&ss[i], "reset")
				continue
			}
			recs[i%2].EndStream(&ss[i])
		}
		d := gatherTest(n, recs...)
		d.DurationNs = 20_000_000_000
		s, err := Compute(d.RunData, ComputeOptions{Percentiles: []float64{0, 1.5, 50, 90, 99.99, 100}, CountTokens: words})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	def, det := record(false), record(true)
	if !reflect.DeepEqual(def, det) {
		t.Errorf("the file's summary differs from memory's:\n got %+v\nwant %+v", det, def)
	}
	if def.ITL.Percentiles[5].ValueMs < 6000 || def.MaxOutputTokensPerS == 0 {
		t.Errorf("max ITL %v ms, peak %v: the stall or the events went missing", def.ITL.Percentiles[5].ValueMs, def.MaxOutputTokensPerS)
	}
}

// The phases of a request's breakdown add up to its TTFT exactly, even
// when the instants behind them disagree (a stamp mapped onto the run's
// clock a little before the instant it follows).
func TestBreakdownAddsUpToTTFT(t *testing.T) {
	rec := NewRecorder(Options{})
	var s Stream
	rec.Begin(&s, 0, 1, 100, 1000)
	s.Connected(1500)
	s.Sent(1400) // before established: held at it
	s.FirstByte(3000)
	s.FirstByte(3500) // only the first counts
	s.Token(3200, nil)
	s.Token(3200, nil)
	s.Token(4000, nil)
	rec.EndStream(&s)
	res := rec.kept()[0]
	b := res.Breakdown
	want := Breakdown{Known: true, NewConn: true, ConnectNs: 500, SendNs: 0, ServerNs: 1500, FirstTokenNs: 200}
	if b != want {
		t.Errorf("breakdown %+v, want %+v", b, want)
	}
	if sum := b.ConnectNs + b.SendNs + b.ServerNs + b.FirstTokenNs; sum != res.TTFTNs {
		t.Errorf("phases add up to %d, TTFT %d", sum, res.TTFTNs)
	}
	if rec.SharedStamps() != 1 {
		t.Errorf("shared stamps %d, want 1", rec.SharedStamps())
	}
	st := ComputeBreakdown(LogOf(rec.kept()...), []float64{99})
	if st == nil || st.Requests != 1 || st.NewConnections != 1 || st.Server.MeanMs != 1500/1e6 {
		t.Errorf("breakdown stats %+v", st)
	}

	// A reused connection: no connect phase; no first byte: no breakdown.
	rec.Begin(&s, 1, 1, 0, 5000)
	s.Sent(5100)
	s.FirstByte(6000)
	s.Token(6000, nil)
	rec.EndStream(&s)
	if b := rec.kept()[1].Breakdown; b.NewConn || b.ConnectNs != 0 || b.SendNs != 100 || b.ServerNs != 900 || b.FirstTokenNs != 0 {
		t.Errorf("reused: %+v", b)
	}
	rec.Begin(&s, 2, 1, 0, 7000)
	s.Token(7100, nil)
	rec.EndStream(&s)
	if rec.kept()[2].Breakdown.Known {
		t.Errorf("breakdown known without send and first-byte times: %+v", rec.kept()[2].Breakdown)
	}
}

// OnEnd sees each result as it ends, the same values the log keeps.
func TestRecorderOnEnd(t *testing.T) {
	var told []RequestResult
	rec := NewRecorder(Options{OnEnd: func(res *RequestResult) { told = append(told, res.Clone()) }})
	const n = 700
	for i := range n {
		var s Stream
		rec.Begin(&s, n-1-i, 1, 0, int64(i))
		s.Token(int64(i)+10, nil)
		s.Token(int64(i)+15, nil)
		rec.EndStream(&s)
	}
	data := gatherTest(n, rec)
	for i, res := range data.Results {
		if res.Index != i || !res.Success || res.StartNs != int64(n-1-i) || res.TTFTNs != 10 {
			t.Fatalf("result %d: %+v", i, res)
		}
		if !reflect.DeepEqual(told[n-1-i], res) {
			t.Fatalf("OnEnd for result %d was told %+v, the log keeps %+v", i, told[n-1-i], res)
		}
	}
}
