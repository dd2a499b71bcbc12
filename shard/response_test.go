package shard

import (
	"strconv"
	"testing"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/metrics/metricstest"
	"github.com/stampede-bench/stampede/sse"
	"github.com/valyala/fastjson"
)

// answer runs one whole answer through a Response as the loops do and
// returns the recorded result and the recorder's server messages.
func answer(t *testing.T, kind sse.Kind, streaming bool, usage sse.PoolingUsage, opts metrics.Options, raw string) (metrics.RequestResult, *metrics.ServerMessages) {
	res, msgs, _ := answerStatus(t, kind, streaming, usage, opts, raw)
	return res, msgs
}

// answerStatus is answer that also returns the status code read.
func answerStatus(t *testing.T, kind sse.Kind, streaming bool, usage sse.PoolingUsage, opts metrics.Options, raw string) (metrics.RequestResult, *metrics.ServerMessages, int) {
	t.Helper()
	var r Response
	r.Init(sse.NewDecoder(kind), streaming)
	rec := metrics.NewRecorder(opts)
	const startNs, promptLen = 1000, 9
	rec.Begin(&r.stream, 0, promptLen, startNs, startNs)
	r.Reset()
	r.SetPoolingUsage(usage, promptLen)
	_, failure, ok, decided := r.Consume([]byte(raw), startNs+10)
	if !decided {
		failure, ok = r.Closed(startNs + 20)
	}
	if ok {
		var p fastjson.Parser
		r.End(rec, &p, 1)
	} else {
		rec.Fail(&r.stream, failure)
	}
	data := metricstest.Merge(1, rec)
	return data.Results[0], &data.ServerMessages, r.status
}

func chunked(body string) string {
	return strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n0\r\n\r\n"
}

func TestPoolingUsageSources(t *testing.T) {
	const jsonBody = `{"data":[],"usage":{"prompt_tokens":7,"total_tokens":7}}`
	binary := "\x00\x00\x80\x3f\x00\x00\x00\x40" // float32 1, 2
	metadata := `{"id": "embd-1", "created": 1, "model": "m", "data": [{"index": 0, "embed_dtype": "float32", "endianness": "native", "start": 0, "end": 8, "shape": [2]}], "usage": {"prompt_tokens": 5, "total_tokens": 5}}`
	tests := []struct {
		name       string
		usage      sse.PoolingUsage
		raw        string
		wantOK     bool
		wantPrompt int
		wantError  string
	}{
		{"float: JSON body", sse.UsageInBody,
			"HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(jsonBody)) + "\r\n\r\n" + jsonBody, true, 7, ""},
		{"float: no usage counts 0", sse.UsageInBody,
			"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", true, 0, ""},
		{"float: a binary body is not JSON", sse.UsageInBody,
			"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n" + binary, false, 0, "malformed JSON response body"},
		{"bytes: usage from the metadata header", sse.UsageInMetadata,
			"HTTP/1.1 200 OK\r\nmetadata: " + metadata + "\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(binary), true, 5, ""},
		{"bytes: metadata without usage counts 0", sse.UsageInMetadata,
			"HTTP/1.1 200 OK\r\nMetadata: {\"id\": \"x\"}\r\nContent-Length: 8\r\n\r\n" + binary, true, 0, ""},
		{"bytes: no metadata header", sse.UsageInMetadata,
			"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n" + binary, false, 0, sse.MissingMetadataError},
		{"bytes: metadata not JSON", sse.UsageInMetadata,
			"HTTP/1.1 200 OK\r\nmetadata: {usage\r\nContent-Length: 8\r\n\r\n" + binary, false, 0, "malformed JSON in the metadata response header"},
		{"bytes_only: the request's prompt length", sse.UsageFromRequest,
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(binary), true, 9, ""},
		{"bytes_only: even over a JSON body", sse.UsageFromRequest,
			"HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(jsonBody)) + "\r\n\r\n" + jsonBody, true, 9, ""},
		{"float: a JSON list fails as Python's .get does", sse.UsageInBody,
			"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n[1,2]", false, 0, "'list' object has no attribute 'get'"},
		{"float: a null usage fails as Python's .get does", sse.UsageInBody,
			"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n{\"usage\": null}", false, 0, "'NoneType' object has no attribute 'get'"},
		{"bytes: usage a number", sse.UsageInMetadata,
			"HTTP/1.1 200 OK\r\nmetadata: {\"usage\": 1.5}\r\nContent-Length: 0\r\n\r\n", false, 0, "'float' object has no attribute 'get'"},
		{"bytes: metadata a string", sse.UsageInMetadata,
			"HTTP/1.1 200 OK\r\nmetadata: \"x\"\r\nContent-Length: 0\r\n\r\n", false, 0, "'str' object has no attribute 'get'"},
		{"non-200 fails on the reason", sse.UsageInMetadata,
			"HTTP/1.1 429 Too Many Requests\r\nmetadata: " + metadata + "\r\nContent-Length: 0\r\n\r\n", false, 0, "Too Many Requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := answer(t, sse.Completions, false, tt.usage, metrics.Options{}, tt.raw)
			if res.Success != tt.wantOK {
				t.Fatalf("success %v (error %q), want %v", res.Success, res.Error, tt.wantOK)
			}
			if tt.wantOK && (res.PromptLen != tt.wantPrompt || res.NumInputSequences != 1) {
				t.Errorf("prompt len %d, inputs %d; want %d, 1", res.PromptLen, res.NumInputSequences, tt.wantPrompt)
			}
			if !tt.wantOK && (len(res.Error) < len(tt.wantError) || res.Error[:len(tt.wantError)] != tt.wantError) {
				t.Errorf("error %q, want it to start with %q", res.Error, tt.wantError)
			}
		})
	}
}

// TestStreamErrorEvents: an error event inside a 200 stream is passed over
// as Python passes it (the request fails only when no token event came,
// with the no-token text) and counted by its text.
func TestStreamErrorEvents(t *testing.T) {
	const head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	errEvent := "data: {\"error\": {\"message\": \"the queue is full\", \"type\": \"TooManyRequests\", \"code\": 429}}\n\n"
	token := "data: {\"choices\":[{\"text\":\"hi\"}]}\n\n"
	done := "data: [DONE]\n\n"
	tests := []struct {
		name      string
		body      string
		wantOK    bool
		wantError string
		wantText  string
	}{
		{"error only", errEvent + done, false, metrics.NoTokenError, ""},
		{"error after a token", token + errEvent + done, true, "", "hi"},
		{"error before a token", errEvent + token + done, true, "", "hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, msgs := answer(t, sse.Completions, true, sse.UsageInBody, metrics.Options{KeepText: true}, head+chunked(tt.body))
			if res.Success != tt.wantOK || res.Error != tt.wantError || res.GeneratedText != tt.wantText {
				t.Errorf("success %v, error %q, text %q; want %v, %q, %q", res.Success, res.Error, res.GeneratedText, tt.wantOK, tt.wantError, tt.wantText)
			}
			top, rest := msgs.Top(5)
			if len(top) != 1 || top[0] != (metrics.MessageCount{Text: "the queue is full", Count: 1}) || rest != 0 {
				t.Errorf("server messages %v (+%d), want one \"the queue is full\"", top, rest)
			}
		})
	}
}

// TestCutStreamKeepsNoText: a stream cut after token events fails with
// an empty generated_text even when the run keeps text, as in Python.
func TestCutStreamKeepsNoText(t *testing.T) {
	event := "data: {\"choices\":[{\"text\":\"ab\"}]}\n\n"
	raw := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
		strconv.FormatInt(int64(len(event)), 16) + "\r\n" + event + "\r\n"
	res, _ := answer(t, sse.Completions, true, sse.UsageInBody, metrics.Options{KeepText: true, KeepUncountedText: true}, raw)
	if res.Success || res.ChunkEvents != 1 || res.GeneratedText != "" || res.Error == "" {
		t.Errorf("cut stream: %+v; want a failure with 1 token event and no text", res)
	}
}

// TestAudioUsageIgnoresPromptTokens: openai-audio keeps the dataset's
// prompt length whatever usage.prompt_tokens says.
func TestAudioUsageIgnoresPromptTokens(t *testing.T) {
	raw := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(
		"data: {\"choices\":[{\"delta\":{\"content\":\"hello\"}}]}\n\n"+
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":123,\"completion_tokens\":4}}\n\n"+
			"data: [DONE]\n\n")
	for _, tt := range []struct {
		kind       sse.Kind
		wantPrompt int
	}{{sse.Audio, 9}, {sse.Chat, 123}} {
		res, _ := answer(t, tt.kind, true, sse.UsageInBody, metrics.Options{}, raw)
		if !res.Success || res.PromptLen != tt.wantPrompt || res.OutputTokens != 4 {
			t.Errorf("%v: success %v, prompt len %d, output tokens %d; want true, %d, 4", tt.kind, res.Success, res.PromptLen, res.OutputTokens, tt.wantPrompt)
		}
	}
}

// FuzzPoolingResponse: whatever the server sends, a pooling answer read
// under any usage source never panics, a success has status 200 and a
// non-negative prompt length, and a failure of a 200 answer says why.
func FuzzPoolingResponse(f *testing.F) {
	seeds := []string{
		"HTTP/1.1 200 OK\r\nmetadata: {\"usage\": {\"prompt_tokens\": 5}}\r\nContent-Length: 4\r\n\r\n\x00\x00\x80\x3f",
		"HTTP/1.1 200 OK\r\nmetadata: {\"usage\": null}\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n\x00\x00\x80\x3f\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nmetadata: [1,2]\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nmetadata:\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n{\"usage\":{\"prompt_tokens\":1}}",
		"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n\xff\xfe",
	}
	for _, s := range seeds {
		for u := range 3 {
			f.Add([]byte(s), uint8(u))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, usage uint8) {
		res, _, status := answerStatus(t, sse.Completions, false, sse.PoolingUsage(usage%3), metrics.Options{}, string(raw))
		if res.Success && (res.Error != "" || status != 200 || res.PromptLen < 0) {
			t.Fatalf("success on status %d: %+v", status, res)
		}
		// Python's error for a non-200 answer is its reason phrase, which
		// may be empty.
		if !res.Success && res.Error == "" && (status == 200 || status == 0) {
			t.Fatalf("failure without an error text on status %d: %+v", status, res)
		}
	})
}
