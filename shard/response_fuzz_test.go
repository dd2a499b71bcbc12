package shard

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/metrics/metricstest"
	"github.com/stampede-bench/stampede/sse"
	"github.com/valyala/fastjson"
)

// FuzzResponse feeds arbitrary server bytes, split at an arbitrary point,
// to a Response (as the shard loops, the TLS transport and the probes read
// answers) and checks the outcome against spec
// §b: a success needs status 200, and a streamed success a token event
// whose latency lies within the exchange.
func FuzzResponse(f *testing.F) {
	seeds := []string{
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"1a\r\ndata: {\"choices\":[{\"text\":\"a\"}]}\n\n\r\n" +
			"e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 38\r\n\r\ndata: {\"choices\":[{\"delta\":{}}]}\n\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n{\"usage\":{\"prompt_tokens\":1}}",
		"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\ndata: {\"choices\":[{\"text\":null}]}",
		"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\ndata: {oops\n\n",
		"HTTP/1.0 200 OK\r\n\r\n: ping\n\ndata: {\"usage\":{\"completion_tokens\":1}}\n\n",
		// What the server says when it fails, and the answers stampede
		// refuses: a redirect, a compressed stream, usage in a token chunk.
		"HTTP/1.1 404 Not Found\r\nContent-Length: 57\r\n\r\n{\"error\":{\"message\":\"The model `m` does not exist.\"}}",
		"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n13\r\n{\"detail\":[1,\"\\u0000\"]}\r\n0\r\n\r\n",
		"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://x/\x1b[2J\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\n\x1f\x8b\x08\x00",
		"HTTP/1.1 200 OK\r\nContent-Length: 71\r\n\r\ndata: {\"choices\":[{\"text\":\"a\"}],\"usage\":{\"completion_tokens\":-9007199254740993}}\n\n",
	}
	for _, s := range seeds {
		for _, streaming := range []bool{true, false} {
			f.Add([]byte(s), len(s)/2, streaming, false)
			f.Add([]byte(s), 17, streaming, true)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, split int, streaming, chat bool) {
		kind := sse.Completions
		if chat {
			kind = sse.Chat
		}
		var r Response
		r.Init(sse.NewDecoder(kind), streaming)
		// A budget some answers exceed: it must be whole again at the end.
		budget := NewBudget(int64(len(data)/2 + 1))
		r.SetLimits(0, budget)
		rec := metrics.NewRecorder(metrics.Options{})
		const startNs = 1000
		rec.Begin(&r.stream, 0, 1, startNs, startNs)
		r.Reset()

		split = min(max(split, 0), len(data))
		failure, ok, finished := "", false, false
		ts := int64(startNs)
		for _, part := range [][]byte{data[:split], data[split:]} {
			ts += 10
			if len(part) == 0 || finished {
				continue
			}
			_, failure, ok, finished = r.Consume(part, ts)
		}
		if !finished {
			failure, ok = r.Closed(ts + 10)
		}
		if !ok && failure == "" && r.status == 200 {
			t.Fatalf("failed without a failure text on a 200 answer")
		}
		if ok {
			var p fastjson.Parser
			r.End(rec, &p, 1)
		} else {
			rec.Fail(&r.stream, failure)
		}
		r.giveBack()
		if got := budget.Used(); got != 0 {
			t.Fatalf("budget holds %d bytes after the answer ended", got)
		}

		res := metricstest.Merge(1, rec).Results[0]
		if res.HTTPStatus != r.status {
			t.Fatalf("recorded status %d, read %d", res.HTTPStatus, r.status)
		}
		if len(res.ServerMessage) > sse.MaxErrorMessage || strings.ContainsAny(res.ServerMessage, "\x00\x1b\r\n") {
			t.Fatalf("server message of %d bytes, unescaped or unbounded: %q", len(res.ServerMessage), res.ServerMessage)
		}
		if !res.Success {
			if res.Error == "" && (r.status == 200 || r.status == 0) {
				t.Fatalf("failure without an error text (status %d)", r.status)
			}
			return
		}
		if r.status != 200 {
			t.Fatalf("success on status %d", r.status)
		}
		if res.Error != "" {
			t.Fatalf("success carries error %q", res.Error)
		}
		if streaming && (res.ChunkEvents == 0 || res.LatencyNs < res.TTFTNs || res.TTFTNs <= 0 || res.LatencyNs > ts+10-startNs) {
			t.Fatalf("streamed success with %d token events, ttft %d, latency %d", res.ChunkEvents, res.TTFTNs, res.LatencyNs)
		}
	})
}

// Two answers sharing a budget: the one whose growth takes the total over
// the limit fails, the other goes on, and finished events give their bytes
// back.
func TestBudgetChargesUnparsedBytes(t *testing.T) {
	budget := NewBudget(100)
	rec := metrics.NewRecorder(metrics.Options{})
	head := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 100000\r\n\r\n")
	var a, b Response
	for i, r := range []*Response{&a, &b} {
		r.Init(sse.NewDecoder(sse.Completions), true)
		r.SetLimits(0, budget)
		r.Reset()
		rec.Begin(&r.stream, i, 1, 0, 0)
		if _, failure, _, decided := r.Consume(head, 1); decided {
			t.Fatalf("head: %q", failure)
		}
	}
	partial := `data: {"choices":[{"index":0,"text":"` + strings.Repeat("a", 54)
	if _, failure, _, decided := a.Consume([]byte(partial), 2); decided {
		t.Fatalf("a, 60 bytes held: %q", failure)
	}
	if got := budget.Used(); got != int64(len(partial)) {
		t.Errorf("budget used %d; want %d", got, len(partial))
	}
	_, failure, ok, decided := b.Consume([]byte(partial), 3)
	want := fmt.Sprintf("it held %d bytes of an unfinished SSE event, all requests in flight %d bytes", len(partial), 2*len(partial))
	if !decided || ok || !strings.Contains(failure, want) {
		t.Fatalf("b over the budget: decided %v ok %v failure %q", decided, ok, failure)
	}
	if got := budget.Used(); got != int64(len(partial)) {
		t.Errorf("budget used %d after b failed; want a's %d", got, len(partial))
	}
	if _, failure, _, decided := a.Consume([]byte(`"}]}`+"\n\n"), 4); decided || a.stream.TokenEvents() != 1 {
		t.Fatalf("a's event: decided %v (%q), %d token events", decided, failure, a.stream.TokenEvents())
	}
	if got := budget.Used(); got != 0 {
		t.Errorf("budget used %d after a's event ended; want 0", got)
	}
}
