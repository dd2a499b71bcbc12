package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/sse"
)

// streamAPI is a streaming API the fidelity run drives the mock through
// (-backend): the request it posts and how its answers are read. Both
// send every token as one SSE event, so a client token event matches the
// mock's T record of the same index.
type streamAPI struct {
	name string
	path string
	kind sse.Kind
	// body is the request body asking for tokens tokens.
	body    func(tokens int) string
	headers []httpwire.Header
	// framingEvents are the SSE events of one of the mock's answers that
	// carry no token, for the floor's count of token events: completions'
	// usage chunk and [DONE]; the Messages API's message_start,
	// content_block_start, ping, content_block_stop, message_delta and
	// message_stop.
	framingEvents int
}

var streamAPIs = []streamAPI{
	{name: "completions", path: "/v1/completions", kind: sse.Completions, framingEvents: 2,
		body: func(tokens int) string {
			return `{"model":"mock-llm","prompt":"hello","max_tokens":` + strconv.Itoa(tokens) +
				`,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`
		}},
	{name: "anthropic-messages", path: "/v1/messages", kind: sse.Anthropic, framingEvents: 6,
		headers: []httpwire.Header{{Key: "anthropic-version", Value: "2023-06-01"}},
		body: func(tokens int) string {
			return `{"model":"mock-llm","max_tokens":` + strconv.Itoa(tokens) +
				`,"messages":[{"role":"user","content":"hello"}],"stream":true,"ignore_eos":true}`
		}},
}

// findStreamAPI is -backend's API.
func findStreamAPI(name string) (streamAPI, error) {
	names := make([]string, len(streamAPIs))
	for i, a := range streamAPIs {
		if a.name == name {
			return a, nil
		}
		names[i] = a.name
	}
	return streamAPI{}, fmt.Errorf("-backend %q: want one of %s", name, strings.Join(names, ", "))
}

// wire is the whole request for tokens tokens under request id id.
func (a streamAPI) wire(addr, id string, tokens int) []byte {
	return httpwire.AppendRequest(nil, &httpwire.Request{
		Method: "POST", Host: addr, Path: a.path, ContentType: "application/json",
		RequestID: id, Headers: a.headers, Body: []byte(a.body(tokens)),
	})
}
