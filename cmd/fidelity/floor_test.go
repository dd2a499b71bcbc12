package main

import (
	"bytes"
	"testing"

	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
)

// mockResponse is the mock's framing of a stream of n tokens: the head,
// one chunk per token, then the usage chunk, [DONE] and the last chunk.
func mockResponse(n int) []byte {
	b := []byte("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n")
	chunk := func(event string) {
		b = append(b, []byte("1a\r\n")...)
		b = append(b, event...)
		b = append(b, "\r\n"...)
	}
	for range n {
		chunk(`data: {"choices":[{"text":" a"}]}` + "\n\n")
	}
	chunk(`data: {"choices":[],"usage":{}}` + "\n\n")
	chunk("data: [DONE]\n\n")
	return append(b, "0\r\n\r\n"...)
}

// countSplit counts b fed in pieces cut at cuts (offsets, ascending).
func countSplit(b []byte, cuts []int) (events int, ended, endedEarly bool) {
	var c floorConn
	from := 0
	for _, at := range append(cuts, len(b)) {
		if at <= from || at > len(b) {
			continue
		}
		if ended {
			endedEarly = true
		}
		ended = c.count(b[from:at], &events)
		from = at
	}
	return events, ended, endedEarly
}

func TestFloorCount(t *testing.T) {
	b := mockResponse(5)
	for _, cuts := range [][]int{nil, {1}, {len(b) - 1}, {len(b) - 3}, {bytes.Index(b, []byte("\n\n")) + 1}, {10, 11, 12, 13, 200, 201}} {
		events, ended, early := countSplit(b, cuts)
		if events != 7 || !ended || early {
			t.Errorf("cut at %v: %d events, ended %v (early %v), want 7 events and the end last", cuts, events, ended, early)
		}
	}
	// Every single-byte feed.
	cuts := make([]int, len(b))
	for i := range cuts {
		cuts[i] = i + 1
	}
	if events, ended, early := countSplit(b, cuts); events != 7 || !ended || early {
		t.Errorf("byte by byte: %d events, ended %v (early %v)", events, ended, early)
	}
}

// FuzzFloorCount: however bytes are cut into reads, the floor counts what
// it counts whole. Runs of three line feeds are left out: the floor reads
// the mock's framing only, whose events end with exactly two.
func FuzzFloorCount(f *testing.F) {
	f.Add(mockResponse(3), uint16(1), uint16(7))
	f.Add(mockResponse(1), uint16(90), uint16(91))
	f.Add([]byte("a\n\nb\n\n\r\n0\r\n\r\n"), uint16(2), uint16(14))
	f.Fuzz(func(t *testing.T, b []byte, cut1, cut2 uint16) {
		if len(b) == 0 || bytes.Contains(b, []byte("\n\n\n")) {
			return
		}
		events, ended, _ := countSplit(b, nil)
		a, bb := int(cut1)%len(b), int(cut2)%len(b)
		split, splitEnded, _ := countSplit(b, []int{min(a, bb), max(a, bb)})
		if split != events || splitEnded != ended {
			t.Fatalf("whole: %d events, ended %v; cut at %d, %d: %d, %v", events, ended, a, bb, split, splitEnded)
		}
	})
}

// TestTokenEventsCountClientStamps: the one count of stampede's token
// events, which both CPU figures divide by, is the events the matching
// rebuilds: a successful request's first token and one per gap, nothing
// of a failed one.
func TestTokenEventsCountClientStamps(t *testing.T) {
	results := []metrics.RequestResult{
		{Success: true, ChunkEvents: 3, ITLNs: []int64{5, 7}},
		{Success: true, ChunkEvents: 1},
		{Success: true},
		{Error: "reset", ChunkEvents: 2, ITLNs: []int64{4}},
	}
	res := &engine.Result{Data: metrics.RunData{Log: metrics.LogOf(results...)}}
	want := 0
	for i := range results {
		if r := &results[i]; r.Success {
			want += len(clientStamps(0, r))
		}
	}
	if got := tokenEvents(res); got != want || got != 4 {
		t.Errorf("tokenEvents = %d, want %d (4)", got, want)
	}
}
