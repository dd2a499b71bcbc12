package shard

import (
	"testing"

	"github.com/stampede-bench/stampede/metrics"
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

		res := metrics.Merge(1, rec).Results[0]
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
