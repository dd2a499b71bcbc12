package sse_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/sse"
)

// pipelineTokens is the length of the benchmark's completion: vLLM's
// default --random-output-len.
const pipelineTokens = 128

// vllmChunkedResponse renders a whole /v1/completions streaming response as
// vLLM (uvicorn) sends it: the head, then every SSE event in its own HTTP
// chunk, then the last chunk. It returns the response split into the reads
// a client sees when the server writes one event per decode step: the head
// with the first event, then one chunk per read.
func vllmChunkedResponse(tokens int) (reads [][]byte, total int) {
	words := []string{" the", " model", " streams", " one", " token", " per", " decode", " step", ",", " and", "\n", " é"}
	head := httpwire.AppendStatusLine(nil, 200, "OK")
	head = httpwire.AppendHeader(head, "date", "Sun, 29 Nov 2026 17:00:00 GMT")
	head = httpwire.AppendHeader(head, "server", "uvicorn")
	head = httpwire.AppendHeader(head, "content-type", "text/event-stream; charset=utf-8")
	head = httpwire.AppendHeader(head, "transfer-encoding", "chunked")
	head = httpwire.AppendEndOfHeaders(head)

	const prefix = `{"id":"cmpl-4f3c2a1b9e8d4c7fa6b5e4d3c2b1a090","object":"text_completion","created":1764403200,"model":"meta-llama/Llama-3.1-8B-Instruct",`
	var events [][]byte
	for i := range tokens {
		finish := "null"
		if i == tokens-1 {
			finish = `"length"`
		}
		json := prefix + `"choices":[{"index":0,"text":` + strconv.Quote(words[i%len(words)]) +
			`,"logprobs":null,"finish_reason":` + finish + `,"stop_reason":null}],"usage":null}`
		events = append(events, sse.AppendData(nil, []byte(json)))
	}
	usage := fmt.Sprintf(`"choices":[],"usage":{"prompt_tokens":1024,"total_tokens":%d,"completion_tokens":%d,"prompt_tokens_details":null}}`, 1024+tokens, tokens)
	events = append(events, sse.AppendData(nil, []byte(prefix+usage)), sse.AppendDone(nil))

	reads = append(reads, httpwire.AppendChunk(head, events[0]))
	for _, ev := range events[1:] {
		reads = append(reads, httpwire.AppendChunk(nil, ev))
	}
	reads = append(reads, httpwire.AppendLastChunk(nil))
	for _, r := range reads {
		total += len(r)
	}
	return reads, total
}

// streamSink is the per-connection state a shard keeps: HTTP framing, SSE
// events, the chunk decoder, and what a request records.
type streamSink struct {
	http  httpwire.Parser
	sse   sse.Parser
	dec   *sse.Decoder
	chunk sse.Chunk

	status            int
	tokens, textBytes int
	completion        int64
	lastTokenNs       int64
	done, ended       bool
	err               error
	readNs            int64 // timestamp of the read being parsed
}

func (s *streamSink) OnHead(h *httpwire.Head, tsNs int64) { s.status = h.StatusCode }

func (s *streamSink) OnBody(b []byte, tsNs int64) {
	if s.err == nil {
		s.readNs = tsNs
		s.err = s.sse.Feed(b, s)
	}
}

func (s *streamSink) OnEnd(tsNs int64) {
	s.ended = true
	if s.err == nil {
		s.err = s.sse.Flush(s)
	}
}

func (s *streamSink) OnEvent(ev *sse.Event) error {
	if err := s.dec.Decode(ev.Data, &s.chunk); err != nil {
		return err
	}
	switch c := &s.chunk; {
	case c.Done:
		s.done = true
	case c.Token:
		s.tokens++
		s.textBytes += len(c.Text)
		s.lastTokenNs = s.readNs
	case c.HasUsage:
		s.completion = c.CompletionTokens
	}
	return nil
}

func (s *streamSink) reset() {
	s.http.Reset(false)
	s.sse.Reset()
	s.status, s.tokens, s.textBytes, s.completion = 0, 0, 0, 0
	s.done, s.ended, s.err = false, false, nil
}

// BenchmarkStreamPipeline parses a realistic vLLM completions response read
// by read through httpwire, sse.Parser and sse.Decoder, as a shard does.
// One op is one whole response; ns/event is per SSE event.
func BenchmarkStreamPipeline(b *testing.B) {
	reads, total := vllmChunkedResponse(pipelineTokens)
	events := pipelineTokens + 2 // tokens, usage, [DONE]
	s := &streamSink{dec: sse.NewDecoder(sse.Completions)}
	parse := func() {
		s.reset()
		for i, r := range reads {
			if _, err := s.http.Feed(r, int64(i), s); err != nil {
				b.Fatal(err)
			}
		}
	}
	parse() // grow the parsers' buffers once, as a connection's first response does
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		parse()
		if s.err != nil || !s.ended || !s.done || s.status != 200 ||
			s.tokens != pipelineTokens || s.completion != pipelineTokens {
			b.Fatalf("response parsed to status %d, %d tokens, usage %d, done %v, ended %v, err %v",
				s.status, s.tokens, s.completion, s.done, s.ended, s.err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
}
