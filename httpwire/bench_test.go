package httpwire

import (
	"fmt"
	"strings"
	"testing"
)

// countingHandler is the cheapest Handler that still looks at every byte
// count, so a benchmark measures the parser.
type countingHandler struct {
	heads, bodyBytes, ends int
}

func (c *countingHandler) OnHead(*Head, int64)      { c.heads++ }
func (c *countingHandler) OnBody(b []byte, _ int64) { c.bodyBytes += len(b) }
func (c *countingHandler) OnEnd(int64)              { c.ends++ }

// vllmStream returns the reads of a streamed vLLM completion as they arrive
// from the socket: the response head, then one chunk per read, each carrying
// one SSE event of about 250 bytes, then the usage event, [DONE] and the
// last chunk.
func vllmStream(events int) [][]byte {
	head := "HTTP/1.1 200 OK\r\n" +
		"date: Sun, 29 Nov 2026 17:00:00 GMT\r\n" +
		"server: uvicorn\r\n" +
		"content-type: text/event-stream; charset=utf-8\r\n" +
		"x-request-id: bench-1a2b3c4d-0\r\n" +
		"transfer-encoding: chunked\r\n\r\n"
	reads := [][]byte{[]byte(head)}
	for i := range events {
		event := fmt.Sprintf(`data: {"id":"cmpl-8f14e45fceea167a5a36dedd4bea2543","object":"text_completion",`+
			`"created":1795971600,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" tok%03d",`+
			`"logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`+"\n\n", i)
		reads = append(reads, AppendChunk(nil, []byte(event)))
	}
	usage := `data: {"id":"cmpl-8f14e45fceea167a5a36dedd4bea2543","object":"text_completion","created":1795971600,` +
		`"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":1024,"total_tokens":1224,` +
		`"completion_tokens":200}}` + "\n\n"
	reads = append(reads, AppendChunk(nil, []byte(usage)))
	reads = append(reads, AppendLastChunk(AppendChunk(nil, []byte("data: [DONE]\n\n"))))
	return reads
}

func BenchmarkParseChunkedSSE(b *testing.B) {
	reads := vllmStream(200)
	benchmarkReads(b, reads)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(len(reads)-1)), "ns/chunk")
}

// BenchmarkParseChunkedSSESplit feeds the same stream in 127-byte reads,
// which cut the head and many chunk-size lines in two: the worst case for
// copying.
func BenchmarkParseChunkedSSESplit(b *testing.B) {
	var stream []byte
	for _, r := range vllmStream(200) {
		stream = append(stream, r...)
	}
	var reads [][]byte
	for rest := stream; len(rest) > 0; {
		n := min(len(rest), 127)
		reads = append(reads, rest[:n])
		rest = rest[n:]
	}
	benchmarkReads(b, reads)
}

// benchmarkReads parses the response that reads make up, once per iteration.
func benchmarkReads(b *testing.B, reads [][]byte) {
	total := 0
	for _, r := range reads {
		total += len(r)
	}
	var p Parser
	var h countingHandler
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.Reset(false)
		for _, r := range reads {
			if _, err := p.Feed(r, int64(i), &h); err != nil {
				b.Fatal(err)
			}
		}
		if !p.Done() {
			b.Fatal("response not complete")
		}
	}
}

func BenchmarkParseContentLength(b *testing.B) {
	body := `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"` + strings.Repeat("x", 800) +
		`"}],"usage":{"prompt_tokens":10,"completion_tokens":200}}`
	resp := "HTTP/1.1 200 OK\r\ndate: Sun, 29 Nov 2026 17:00:00 GMT\r\nserver: uvicorn\r\n" +
		"content-type: application/json\r\ncontent-length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body
	benchmarkReads(b, [][]byte{[]byte(resp)})
}

func BenchmarkAppendRequest(b *testing.B) {
	r := Request{
		Method: "POST", Host: "localhost:8000", Path: "/v1/completions",
		ContentType: "application/json", Authorization: "Bearer sk-0123456789abcdef", RequestID: "bench-1a2b3c4d-12345",
		Headers: []Header{{"X-Tenant", "bench"}},
		Body: []byte(`{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":"` + strings.Repeat("lorem ipsum ", 85) +
			`","max_tokens":200,"stream":true,"stream_options":{"include_usage":true}}`),
	}
	dst := AppendRequest(nil, &r)
	b.SetBytes(int64(len(dst)))
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendRequest(dst[:0], &r)
	}
}

func TestParseAllocations(t *testing.T) {
	reads := vllmStream(20)
	var p Parser
	var h countingHandler
	feed := func() {
		p.Reset(false)
		for _, r := range reads {
			if _, err := p.Feed(r, 1, &h); err != nil {
				t.Fatal(err)
			}
		}
	}
	feed()
	if n := testing.AllocsPerRun(50, feed); n != 0 {
		t.Errorf("parsing a chunked SSE stream allocates %v times per stream, want 0", n)
	}
	if h.ends == 0 || h.bodyBytes == 0 {
		t.Fatalf("handler saw %d ends, %d body bytes", h.ends, h.bodyBytes)
	}
}
