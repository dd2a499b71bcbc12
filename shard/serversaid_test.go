package shard

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/sse"
)

func httpAnswer(status, head, body string) string {
	return "HTTP/1.1 " + status + "\r\n" + head + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

func TestFailedAnswerKeepsTheServersWords(t *testing.T) {
	tests := []struct {
		name, raw   string
		wantError   string // Python's errors entry, exactly
		wantStatus  int
		wantMessage string
	}{
		{"vLLM's unknown model",
			httpAnswer("404 Not Found", "Content-Type: application/json\r\n",
				`{"error":{"message":"The model `+"`other-model`"+` does not exist.","type":"NotFoundError","param":null,"code":404}}`),
			"Not Found", 404, "The model `other-model` does not exist."},
		{"llama.cpp's context overflow",
			httpAnswer("400 Bad Request", "",
				`{"error":{"code":400,"message":"request (302 tokens) exceeds the available context size (256 tokens)","type":"exceed_context_size_error"}}`),
			"Bad Request", 400, "request (302 tokens) exceeds the available context size (256 tokens)"},
		{"FastAPI's detail", httpAnswer("422 Unprocessable Entity", "", `{"detail":"prompt is required"}`),
			"Unprocessable Entity", 422, "prompt is required"},
		{"a plain text body is escaped", httpAnswer("503 Service Unavailable", "", "overloaded\r\n\tretry\x01later\xff\n"),
			"Service Unavailable", 503, `overloaded\r\n\tretry\x01later\xff`},
		{"no body", httpAnswer("500 Internal Server Error", "", ""), "Internal Server Error", 500, ""},
		{"an empty reason stays empty", httpAnswer("429 ", "", `{"message":"slow down"}`), "", 429, "slow down"},
		{"a redirect names its Location",
			httpAnswer("307 Temporary Redirect", "Location: https://llm.example/v1/completions\r\n", ""),
			"server answered 307 Temporary Redirect to https://llm.example/v1/completions; point --base-url there (stampede does not follow redirects)", 307, ""},
		{"a redirect without a Location", httpAnswer("301 Moved Permanently", "", "moved"),
			"server answered 301 Moved Permanently without a Location; stampede does not follow redirects", 301, "moved"},
		{"a gzip stream names its encoding",
			"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked("\x1f\x8b\x08\x00"),
			"server answered with Content-Encoding: gzip, which stampede does not decode (it sends no Accept-Encoding); make the server send the stream uncompressed", 200, ""},
		{"identity is no encoding",
			"HTTP/1.1 200 OK\r\nContent-Encoding: Identity\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked("data: {\"choices\":[{\"text\":\"a\"}]}\n\n"),
			"", 200, ""},
		{"an error inside a 200 stream is the request's message",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked("data: {\"error\":{\"message\":\"queue full\"}}\n\n"),
			metrics.NoTokenError, 200, "queue full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := answer(t, sse.Completions, true, 0, metrics.Options{}, tt.raw)
			if res.Error != tt.wantError || res.HTTPStatus != tt.wantStatus || res.ServerMessage != tt.wantMessage {
				t.Errorf("error %q, status %d, message %q; want %q, %d, %q",
					res.Error, res.HTTPStatus, res.ServerMessage, tt.wantError, tt.wantStatus, tt.wantMessage)
			}
			if res.Success != (tt.wantError == "" && tt.wantStatus == 200) {
				t.Errorf("success %v", res.Success)
			}
		})
	}
}

func TestErrorBodyIsBounded(t *testing.T) {
	body := strings.Repeat("<p>err</p>", 10_000)
	res, _ := answer(t, sse.Completions, true, 0, metrics.Options{}, httpAnswer("502 Bad Gateway", "", body))
	if res.Error != "Bad Gateway" || len(res.ServerMessage) == 0 || len(res.ServerMessage) > sse.MaxErrorMessage {
		t.Errorf("error %q, message of %d bytes; want Bad Gateway and 1..%d bytes", res.Error, len(res.ServerMessage), sse.MaxErrorMessage)
	}
}

func TestServerUsageWhereverItCame(t *testing.T) {
	stream := func(events ...string) string {
		return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(strings.Join(events, "")+"data: [DONE]\n\n")
	}
	tests := []struct {
		name       string
		raw        string
		wantPython int // RequestResult.OutputTokens, what Python reads
		wantServer int64
		wantWhere  metrics.UsageSource
	}{
		{"llama.cpp: usage in the last chunk with choices", stream(
			`data: {"choices":[{"text":"a"}]}`+"\n\n",
			`data: {"choices":[{"text":"b","finish_reason":"length"}],"usage":{"completion_tokens":2,"prompt_tokens":5}}`+"\n\n"),
			0, 2, metrics.UsageInTokenChunk},
		{"vLLM: a usage chunk", stream(
			`data: {"choices":[{"text":"a"}],"usage":null}`+"\n\n",
			`data: {"choices":[],"usage":{"completion_tokens":1,"prompt_tokens":5}}`+"\n\n"),
			1, 1, metrics.UsageChunk},
		{"a negative count is Python's as given", stream(
			`data: {"choices":[{"text":"a"}]}`+"\n\n",
			`data: {"usage":{"completion_tokens":-5}}`+"\n\n"),
			-5, -5, metrics.UsageChunk},
		{"-1 is a count, not an absent one", stream(
			`data: {"choices":[{"text":"a"}]}`+"\n\n",
			`data: {"usage":{"completion_tokens":-1}}`+"\n\n"),
			-1, -1, metrics.UsageChunk},
		{"2^53+1 is kept exactly", stream(
			`data: {"choices":[{"text":"a"}]}`+"\n\n",
			`data: {"usage":{"completion_tokens":9007199254740993}}`+"\n\n"),
			9007199254740993, 9007199254740993, metrics.UsageChunk},
		{"no count", stream(`data: {"choices":[{"text":"a"}]}`+"\n\n", `data: {"usage":{"prompt_tokens":3}}`+"\n\n"),
			0, 0, metrics.UsageNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := answer(t, sse.Completions, true, 0, metrics.Options{}, tt.raw)
			if !res.Success || res.OutputTokens != tt.wantPython || res.ServerTokens != tt.wantServer || res.ServerUsage != tt.wantWhere {
				t.Errorf("success %v, output tokens %d, server %d from %v; want %d, %d from %v",
					res.Success, res.OutputTokens, res.ServerTokens, res.ServerUsage, tt.wantPython, tt.wantServer, tt.wantWhere)
			}
		})
	}
}
