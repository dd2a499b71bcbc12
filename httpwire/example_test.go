package httpwire_test

import (
	"fmt"
	"strings"

	"github.com/stampede-bench/stampede/httpwire"
)

// printer prints what the parser reports.
type printer struct{}

func (printer) OnHead(h *httpwire.Head, tsNs int64) {
	fmt.Printf("t=%d head: %d %s, %s\n", tsNs, h.StatusCode, h.Reason, h.ContentType)
}
func (printer) OnBody(b []byte, tsNs int64) { fmt.Printf("t=%d body: %q\n", tsNs, b) }
func (printer) OnEnd(tsNs int64)            { fmt.Printf("t=%d end\n", tsNs) }

func ExampleParser() {
	// Three reads of one streamed response, as a socket might deliver them:
	// each carries the timestamp of its arrival.
	reads := []string{
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
		"e\r\ndata: {\"a\":1}\n\r\ne\r\ndata: {\"a\":2}\n\r\n0\r",
		"\n\r\n",
	}
	var p httpwire.Parser
	p.Reset(false)
	for i, r := range reads {
		if _, err := p.Feed([]byte(r), int64(100+i), printer{}); err != nil {
			fmt.Println("error:", err)
			return
		}
	}
	fmt.Println("done:", p.Done(), "keep-alive:", p.KeepAlive())
	// Output:
	// t=100 head: 200 OK, text/event-stream
	// t=101 body: "data: {\"a\":1}\n"
	// t=101 body: "data: {\"a\":2}\n"
	// t=102 end
	// done: true keep-alive: true
}

func ExampleAppendRequest() {
	r := httpwire.Request{
		Method: "POST", Host: "localhost:8000", Path: "/v1/completions",
		ContentType: "application/json", RequestID: "bench-0",
		Headers: []httpwire.Header{{Key: "User-Agent", Value: "custom"}},
		Body:    []byte(`{"prompt":"hi"}`),
	}
	if err := r.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	wire := httpwire.AppendRequest(nil, &r)
	fmt.Println(strings.ReplaceAll(string(wire), "\r\n", "\\r\\n\n"))
	// Output:
	// POST /v1/completions HTTP/1.1\r\n
	// Host: localhost:8000\r\n
	// Accept: */*\r\n
	// Content-Type: application/json\r\n
	// Content-Length: 15\r\n
	// x-request-id: bench-0\r\n
	// User-Agent: custom\r\n
	// \r\n
	// {"prompt":"hi"}
}
