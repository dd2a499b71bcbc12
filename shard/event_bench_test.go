package shard

import (
	"strconv"
	"testing"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/sse"
)

// newBenchConn returns a connection whose response head has been parsed,
// ready to take chunked SSE body bytes, with no socket behind it.
func newBenchConn(tb testing.TB, kind sse.Kind) (*conn, *metrics.Recorder) {
	tb.Helper()
	rec := metrics.NewRecorder(metrics.Options{})
	s, err := New(Config{Slots: 1, Streaming: true, Kind: kind, Recorder: rec, Queue: NewQueue(1, 0)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.closeAll)
	c := &conn{fd: -1, heapIndex: -1, state: connBusy}
	c.Init(s.decoder, true)
	// Grow the token buffer once, as a connection's first long response
	// would; later requests reuse it.
	rec.Begin(&c.stream, 0, 1, 0, 0)
	for range 4096 {
		c.stream.Token(0, nil)
	}
	rec.Begin(&c.stream, 0, 1, 0, 0)
	c.beginRequest(&Request{})
	head := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	if _, err := c.http.Feed(head, 1, c); err != nil {
		tb.Fatal(err)
	}
	return c, rec
}

func chunkedEvent(payload string) []byte {
	ev := "data: " + payload + "\n\n"
	return []byte(strconv.FormatInt(int64(len(ev)), 16) + "\r\n" + ev + "\r\n")
}

// BenchmarkEventPath measures one token event from wire bytes to the
// recorder: httpwire de-chunking, SSE parsing, chunk decoding, recording.
func BenchmarkEventPath(b *testing.B) {
	for _, c := range []struct {
		name string
		kind sse.Kind
		data string
	}{
		{"completions", sse.Completions, `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`},
		{"chat", sse.Chat, `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			cn, rec := newBenchConn(b, c.kind)
			wire := chunkedEvent(c.data)
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			b.ResetTimer()
			for i := range b.N {
				if i%4096 == 0 {
					// A connection's next request reuses the stream's buffers.
					rec.Begin(&cn.stream, 0, 1, 0, 0)
				}
				if _, err := cn.http.Feed(wire, int64(i), cn); err != nil || cn.handlerErr != nil {
					b.Fatal(err, cn.handlerErr)
				}
			}
			if cn.stream.TokenEvents() == 0 {
				b.Fatal("no token events recorded")
			}
		})
	}
}

func TestEventPathAllocatesNothing(t *testing.T) {
	cn, _ := newBenchConn(t, sse.Completions)
	wire := chunkedEvent(`{"choices":[{"index":0,"text":"x"}]}`)
	for range 64 { // warm the buffers
		cn.http.Feed(wire, 0, cn)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		cn.http.Feed(wire, 0, cn)
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per token event; want 0", allocs)
	}
	if cn.handlerErr != nil || cn.stream.TokenEvents() < 1000 {
		t.Errorf("events %d, error %v", cn.stream.TokenEvents(), cn.handlerErr)
	}
}

// BenchmarkEventPathStreams is BenchmarkEventPath over 10,000 connections
// of one shard served in turn, one token event each, as a decode step
// reaches the loop: every connection's parser and stream state has left
// the cache by the time its next event comes, so this measures the misses
// per event that the single hot connection of BenchmarkEventPath hides.
// Each connection's request ends after 20 events and the next begins.
func BenchmarkEventPathStreams(b *testing.B) {
	const streams, tokens = 10000, 20
	rec := metrics.NewRecorder(metrics.Options{})
	s, err := New(Config{Slots: 1, Streaming: true, Kind: sse.Completions, Recorder: rec, Queue: NewQueue(1, 0)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.closeAll)
	head := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	req := &Request{}
	begin := func(c *conn) {
		rec.Begin(&c.stream, 0, 1, 0, 0)
		c.beginRequest(req)
		if _, err := c.http.Feed(head, 1, c); err != nil {
			b.Fatal(err)
		}
	}
	conns := make([]*conn, streams)
	for i := range conns {
		c := &conn{fd: -1, heapIndex: -1, state: connBusy}
		c.Init(s.decoder, true)
		begin(c)
		conns[i] = c
	}
	wire := chunkedEvent(`{"id":"cmpl-a4e9e9c8ce8edd9cc09f90c665568f40","object":"text_completion","created":1796134829,"model":"mock-llm","choices":[{"index":0,"text":" are","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(wire)))
	b.ResetTimer()
	for i := range b.N {
		c := conns[i%streams]
		if c.stream.TokenEvents() == tokens {
			begin(c)
		}
		if _, err := c.http.Feed(wire, int64(i), c); err != nil || c.handlerErr != nil {
			b.Fatal(err, c.handlerErr)
		}
	}
}
