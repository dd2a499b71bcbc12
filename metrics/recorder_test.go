package metrics

import (
	"slices"
	"testing"
)

func TestRecorderStreams(t *testing.T) {
	rec := NewRecorder(Options{KeepDetail: true, KeepText: true})
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
	data := Merge(4, rec)
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
	// Only the successful request's gaps and events count.
	if data.ITL.TotalCount() != 2 || data.ITL.Max() < 1_499_000 || data.ITL.Max() > 1_501_000 {
		t.Errorf("ITL histogram: count %d max %d", data.ITL.TotalCount(), data.ITL.Max())
	}
	if len(data.TokenEventsPerMs) != 8 || data.TokenEventsPerMs[5] != 2 || data.TokenEventsPerMs[7] != 1 || data.TokenEventsPerMs[1] != 0 {
		t.Errorf("token events per ms: %v", data.TokenEventsPerMs)
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
	data := Merge(2, rec)
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
	data := Merge(3, a, b)
	if data.ITL.TotalCount() != 2 {
		t.Errorf("merged ITL count %d; want 2", data.ITL.TotalCount())
	}
	if !slices.Equal(data.TokenEventsPerMs, []uint32{0, 2, 2}) {
		t.Errorf("merged bins %v; want [0 2 2]", data.TokenEventsPerMs)
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
