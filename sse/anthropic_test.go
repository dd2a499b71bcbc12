package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// anthropicCases are single Anthropic Messages events: the SSE event name
// ("" for none), the data, and what they decode to.
var anthropicCases = []struct {
	name  string
	event string
	data  string
	want  wantChunk
	extra extraWant
}{
	{"text delta", "content_block_delta",
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
		token("Hello"), extraWant{reasoningTokens: -1}},
	{"text delta, escapes unescaped", "",
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" caf\u00e9\n"}}`,
		token(" café\n"), extraWant{reasoningTokens: -1}},
	{"empty text delta is a token without answer text", "",
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`,
		token(""), extraWant{reasoningTokens: -1}},
	{"null text is an empty token", "",
		`{"type":"content_block_delta","delta":{"type":"text_delta","text":null}}`,
		token(nilText), extraWant{reasoningTokens: -1}},
	{"event name without type", "content_block_delta",
		`{"index":0,"delta":{"type":"text_delta","text":"x"}}`,
		token("x"), extraWant{reasoningTokens: -1}},
	{"type wins over event name", "ping",
		`{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}`,
		token("x"), extraWant{reasoningTokens: -1}},
	{"escaped type", "",
		`{"type":"content_block_\u0064elta","delta":{"type":"text_\u0064elta","text":"x"}}`,
		token("x"), extraWant{reasoningTokens: -1}},
	{"thinking delta is reasoning", "content_block_delta",
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me"}}`,
		token(nilText), extraWant{reasoning: true, reasoningTokens: -1}},
	{"empty thinking is not reasoning", "",
		`{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":""}}`,
		token(nilText), extraWant{reasoningTokens: -1}},
	{"tool arguments", "content_block_delta",
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": "}}`,
		token(nilText), extraWant{toolCall: true, reasoningTokens: -1}},
	{"signature delta carries no token", "",
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}`,
		noToken(), extraWant{reasoningTokens: -1}},
	{"citations delta carries no token", "",
		`{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location"}}}`,
		noToken(), extraWant{reasoningTokens: -1}},
	{"a delta of another type is a token without text", "",
		`{"type":"content_block_delta","delta":{"type":"audio_delta","data":"AAAA"}}`,
		token(nilText), extraWant{reasoningTokens: -1}},
	{"a delta without a type is known by its text", "",
		`{"type":"content_block_delta","delta":{"text":"t"}}`,
		token("t"), extraWant{reasoningTokens: -1}},
	{"a delta without a type is known by its thinking", "",
		`{"type":"content_block_delta","delta":{"thinking":"t"}}`,
		token(nilText), extraWant{reasoning: true, reasoningTokens: -1}},
	{"a delta without a type is known by its partial_json", "",
		`{"type":"content_block_delta","delta":{"partial_json":"{"}}`,
		token(nilText), extraWant{toolCall: true, reasoningTokens: -1}},
	{"repeated delta: last wins", "",
		`{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":"r"},"delta":{"type":"text_delta","text":"c"}}`,
		token("c"), extraWant{reasoningTokens: -1}},
	{"text of another delta type is not text", "",
		`{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":"r","text":"no"}}`,
		token(nilText), extraWant{reasoning: true, reasoningTokens: -1}},

	{"tool_use block opens a call", "content_block_start",
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`,
		noToken(), extraWant{started: 1, reasoningTokens: -1}},
	{"server_tool_use block opens a call", "",
		`{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
		noToken(), extraWant{started: 1, reasoningTokens: -1}},
	{"text block start", "content_block_start",
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		noToken(), extraWant{reasoningTokens: -1}},

	{"message_start: input tokens only", "message_start",
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}`,
		usage(25, -1), extraWant{reasoningTokens: -1}},
	{"message_start: cached tokens are prompt tokens", "",
		`{"type":"message_start","message":{"usage":{"input_tokens":5,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":0}}}`,
		usage(2105, -1), extraWant{reasoningTokens: -1}},
	{"message_start: null cache counts add nothing", "",
		`{"type":"message_start","message":{"usage":{"input_tokens":5,"cache_creation_input_tokens":null,"cache_read_input_tokens":null}}}`,
		usage(5, -1), extraWant{reasoningTokens: -1}},
	{"message_start without usage", "",
		`{"type":"message_start","message":{"id":"msg_1","usage":null}}`,
		noToken(), extraWant{reasoningTokens: -1}},
	{"message_delta: output tokens", "message_delta",
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`,
		usage(-1, 15), extraWant{reasoningTokens: -1}},
	{"message_delta as vLLM sends it", "message_delta",
		`{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"input_tokens":12,"output_tokens":30}}`,
		usage(12, 30), extraWant{reasoningTokens: -1}},
	{"message_delta: OpenAI's names are not read", "",
		`{"type":"message_delta","usage":{"prompt_tokens":3,"completion_tokens":4}}`,
		usage(-1, -1), extraWant{reasoningTokens: -1}},

	{"message_stop passed over", "message_stop", `{"type":"message_stop"}`, noToken(), extraWant{reasoningTokens: -1}},
	{"content_block_stop passed over", "content_block_stop", `{"type":"content_block_stop","index":0}`, noToken(), extraWant{reasoningTokens: -1}},
	{"ping passed over", "ping", `{"type": "ping"}`, noToken(), extraWant{reasoningTokens: -1}},
	{"unknown type passed over", "", `{"type":"message_ping","delta":5}`, noToken(), extraWant{reasoningTokens: -1}},
	{"no type passed over", "", `{"delta":{"text":"x"}}`, noToken(), extraWant{reasoningTokens: -1}},
	{"done passed over", "", `[DONE]`, wantChunk{done: true, text: nilText, prompt: -1, completion: -1}, extraWant{reasoningTokens: -1}},
}

func TestDecodeAnthropic(t *testing.T) {
	for _, tc := range anthropicCases {
		t.Run(tc.name, func(t *testing.T) {
			var c Chunk
			ev := Event{Data: []byte(tc.data)}
			if tc.event != "" {
				ev.Name = []byte(tc.event)
			}
			if err := NewDecoder(Anthropic).DecodeEvent(&ev, &c); err != nil {
				t.Fatal(err)
			}
			checkChunk(t, &c, tc.want)
			if got := (extraWant{c.Reasoning, c.ToolCall, c.ToolCallsStarted, c.ReasoningTokens}); got != tc.extra {
				t.Errorf("extras = %+v, want %+v", got, tc.extra)
			}
			if tc.want.usage && c.CompletionGiven != (tc.want.completion >= 0) {
				t.Errorf("CompletionGiven = %v with completion %d", c.CompletionGiven, tc.want.completion)
			}
		})
	}
}

// TestDecodeAnthropicMalformed: what a chat chunk may not be, an Anthropic
// event may not be either; every error wraps ErrMalformedChunk and leaves
// the chunk without an event.
func TestDecodeAnthropicMalformed(t *testing.T) {
	for _, tc := range []struct{ name, data, wantErr string }{
		{"not JSON", `{"type":"content_block_delta","delta":`, "invalid JSON"},
		{"not UTF-8", "{\"type\":\"content_block_delta\",\"delta\":{\"text\":\"\xff\"}}", "not valid UTF-8"},
		{"not an object", `["content_block_delta"]`, "not an object"},
		{"delta missing", `{"type":"content_block_delta","index":0}`, `content_block_delta has no "delta"`},
		{"delta not an object", `{"type":"content_block_delta","delta":"x"}`, `"delta" is a JSON string, not an object`},
		{"text not a string", `{"type":"content_block_delta","delta":{"type":"text_delta","text":5}}`, "delta.text is a JSON number"},
		{"thinking not a string", `{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":[1]}}`, "delta.thinking is a JSON array"},
		{"partial_json not a string", `{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":{"a":1}}}`, "delta.partial_json is a JSON object"},
		{"usage not an object", `{"type":"message_delta","usage":[1]}`, `"usage" is a JSON array`},
		{"message usage not an object", `{"type":"message_start","message":{"usage":"x"}}`, `"usage" is a JSON string`},
		{"trailing bytes", `{"type":"ping"} x`, "invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Chunk
			err := NewDecoder(Anthropic).Decode([]byte(tc.data), &c)
			if err == nil || !errors.Is(err, ErrMalformedChunk) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one wrapping ErrMalformedChunk containing %q", err, tc.wantErr)
			}
			if c.Token || c.HasUsage {
				t.Fatalf("after an error the chunk still reads as an event: %+v", c)
			}
		})
	}
}

// TestDecodeAnthropicErrorEvent: an error event fails the request with the
// server's type and message, bounded and escaped, whatever the stream
// carried before it.
func TestDecodeAnthropicErrorEvent(t *testing.T) {
	long := strings.Repeat("é", MaxErrorMessage)
	for _, tc := range []struct {
		name, event, data string
		want              StreamError
	}{
		{"overloaded", "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			StreamError{"overloaded_error", "Overloaded"}},
		{"as vLLM sends it", "error", `{"type":"error","error":{"type":"internal_error","message":"Invalid data format received"}}`,
			StreamError{"internal_error", "Invalid data format received"}},
		{"by event name", "error", `{"error":{"type":"api_error","message":"boom"}}`, StreamError{"api_error", "boom"}},
		{"no type, but an error", "", `{"error":{"message":"engine died"}}`, StreamError{"", "engine died"}},
		{"string error", "", `{"type":"error","error":"upstream\ttimeout\n"}`, StreamError{"", `upstream\ttimeout\n`}},
		{"error without a message", "", `{"type":"error","error":{"type":"x","code":7}}`, StreamError{"x", `{"type":"x","code":7}`}},
		{"no error object", "", `{"type":"error"}`, StreamError{"", `{"type":"error"}`}},
		{"long message is cut", "", `{"type":"error","error":{"type":"api_error","message":"` + long + `"}}`,
			StreamError{"api_error", strings.Repeat("é", MaxErrorMessage/2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Chunk
			ev := Event{Name: []byte(tc.event), Data: []byte(tc.data)}
			err := NewDecoder(Anthropic).DecodeEvent(&ev, &c)
			var se *StreamError
			if !errors.As(err, &se) || errors.Is(err, ErrMalformedChunk) {
				t.Fatalf("err = %v, want a *StreamError", err)
			}
			if *se != tc.want {
				t.Fatalf("error %+v, want %+v", *se, tc.want)
			}
		})
	}
	err := &StreamError{Type: "overloaded_error", Message: "Overloaded"}
	if got := err.Error(); got != "the server sent an error event: overloaded_error: Overloaded" {
		t.Fatalf("Error() = %q", got)
	}
}

// anthropicStream is a Messages stream in the shape Anthropic's API sends
// it: a ping, a thinking block with its signature, a text block and a tool
// call, then the usage.
const anthropicStream = "event: message_start\n" +
	`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":7,"cache_read_input_tokens":3,"output_tokens":1}}}` + "\n\n" +
	"event: ping\n" +
	`data: {"type": "ping"}` + "\n\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Think"}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" more"}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}` + "\n\n" +
	"event: content_block_stop\n" +
	`data: {"type":"content_block_stop","index":0}` + "\n\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello"}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" world"}}` + "\n\n" +
	"event: content_block_stop\n" +
	`data: {"type":"content_block_stop","index":1}` + "\n\n" +
	"event: content_block_start\n" +
	`data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"lookup","input":{}}}` + "\n\n" +
	"event: content_block_delta\n" +
	`data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"q\": 1}"}}` + "\n\n" +
	"event: content_block_stop\n" +
	`data: {"type":"content_block_stop","index":2}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}` + "\n\n" +
	"event: message_stop\n" +
	`data: {"type":"message_stop"}` + "\n\n"

func TestAnthropicStream(t *testing.T) {
	h := &tallyHandler{d: NewDecoder(Anthropic)}
	var p Parser
	if err := p.Feed([]byte(anthropicStream), h); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(h); err != nil {
		t.Fatal(err)
	}
	// The usage of message_delta has no input tokens: the tally keeps the
	// last usage's, as the recorder keeps message_start's prompt count.
	want := streamTally{tokens: 5, reasoning: 2, toolDeltas: 1, started: 1, text: "Hello world", prompt: -1, completion: 5, reasoningTokens: -1}
	if h.streamTally != want {
		t.Fatalf("tally %+v, want %+v", h.streamTally, want)
	}
}

// TestAnthropicStreamErrorMidway: an error event after tokens fails the
// parse with the server's message, and nothing after it is read.
func TestAnthropicStreamErrorMidway(t *testing.T) {
	body := anthropicStream[:strings.Index(anthropicStream, "event: content_block_stop")] +
		"event: error\n" + `data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` + "\n\n" +
		anthropicStream[strings.Index(anthropicStream, "event: content_block_stop"):]
	h := &tallyHandler{d: NewDecoder(Anthropic)}
	var p Parser
	err := p.Feed([]byte(body), h)
	var se *StreamError
	if !errors.As(err, &se) || se.Message != "Overloaded" {
		t.Fatalf("Feed: %v, want the error event's", err)
	}
	if h.tokens != 2 || h.text != "" {
		t.Fatalf("tally %+v: want the two thinking deltas before the error and nothing after", h.streamTally)
	}
}

func TestDecodeAnthropicZeroAllocs(t *testing.T) {
	var events []Event
	for _, tc := range anthropicCases {
		events = append(events, Event{Name: []byte(tc.event), Data: []byte(tc.data)})
	}
	d := NewDecoder(Anthropic)
	var c Chunk
	decodeAll := func() {
		for i := range events {
			if err := d.DecodeEvent(&events[i], &c); err != nil {
				t.Fatal(err)
			}
		}
	}
	decodeAll()
	if n := testing.AllocsPerRun(100, decodeAll); n != 0 {
		t.Fatalf("%v allocs per run after warm-up, want 0", n)
	}
}

// anthropicStreamEvents are the events of anthropicStream.
func anthropicStreamEvents() []Event {
	var events []Event
	for _, block := range strings.Split(strings.TrimSpace(anthropicStream), "\n\n") {
		name, data, _ := strings.Cut(block, "\ndata: ")
		events = append(events, Event{Name: []byte(strings.TrimPrefix(name, "event: ")), Data: []byte(data)})
	}
	return events
}

// FuzzAnthropicDecoder checks the Anthropic decoder against encoding/json:
// it never panics, decodes the same twice, fails only with
// ErrMalformedChunk or a *StreamError (and the latter only for an error
// event), accepts only strict JSON, reports a token event only for a
// content_block_delta, and reads a text delta's text as encoding/json
// does. Seeds: the cases above, the OpenAI and Responses cases as
// Anthropic events, and every event of anthropicStream.
func FuzzAnthropicDecoder(f *testing.F) {
	for _, tc := range anthropicCases {
		f.Add([]byte(tc.event), []byte(tc.data))
	}
	for _, tc := range extraCases {
		f.Add([]byte(tc.event), []byte(tc.data))
	}
	for _, ev := range anthropicStreamEvents() {
		f.Add(ev.Name, ev.Data)
	}
	f.Add([]byte("error"), []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	d := NewDecoder(Anthropic)
	f.Fuzz(func(t *testing.T, name, data []byte) {
		ev := Event{Name: name, Data: data}
		var c, again Chunk
		err := d.DecodeEvent(&ev, &c)
		err2 := d.DecodeEvent(&ev, &again)
		if (err == nil) != (err2 == nil) || c.Token != again.Token || c.HasUsage != again.HasUsage ||
			c.Reasoning != again.Reasoning || c.ToolCall != again.ToolCall || c.ToolCallsStarted != again.ToolCallsStarted ||
			c.PromptTokens != again.PromptTokens || c.CompletionTokens != again.CompletionTokens {
			t.Fatalf("decoding twice differs: %+v, %v then %+v, %v", c, err, again, err2)
		}
		trimmed := bytes.TrimSpace(data)
		if string(trimmed) == "[DONE]" {
			return
		}
		valid := utf8.Valid(trimmed) && json.Valid(trimmed)
		var se *StreamError
		switch {
		case errors.As(err, &se):
			if !valid {
				t.Fatalf("an error event from %q, which is not strict JSON in UTF-8", data)
			}
			if len(se.Message) > MaxErrorMessage || len(se.Type) > MaxErrorMessage {
				t.Fatalf("error event's text is not bounded: %+v", se)
			}
		case err != nil:
			if !errors.Is(err, ErrMalformedChunk) {
				t.Fatalf("error %v does not wrap ErrMalformedChunk", err)
			}
			return
		case !valid:
			t.Fatalf("accepted %q, which is not strict JSON in UTF-8", data)
		}
		var m map[string]any
		if err := json.Unmarshal(trimmed, &m); err != nil {
			t.Fatalf("accepted a chunk that is not a JSON object: %v", err)
		}
		typ, ok := m["type"].(string)
		if !ok {
			typ = string(name)
		}
		if se != nil {
			if _, hasError := m["error"]; typ != "error" && !(typ == "" && hasError) {
				t.Fatalf("an error event from type %q", typ)
			}
			return
		}
		if c.Token && typ != "content_block_delta" {
			t.Fatalf("Token for type %q", typ)
		}
		if (c.Reasoning || c.ToolCall) && !c.Token {
			t.Fatalf("Reasoning or ToolCall without a token event: %+v", c)
		}
		if c.HasUsage && typ != "message_start" && typ != "message_delta" {
			t.Fatalf("usage from type %q", typ)
		}
		delta, _ := m["delta"].(map[string]any)
		if c.Token && delta["type"] == "text_delta" && !bytes.Contains(trimmed, []byte(`\u`)) {
			if text, ok := delta["text"].(string); ok && text != string(c.Text) {
				t.Fatalf("Text = %q, encoding/json reads %q", c.Text, text)
			}
		}
	})
}

// BenchmarkDecodeAnthropicDelta decodes one text delta as Anthropic's API
// sends it, beside BenchmarkDecodeChat's one chat chunk.
func BenchmarkDecodeAnthropicDelta(b *testing.B) {
	ev := Event{Name: []byte("content_block_delta"),
		Data: []byte(`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" the"}}`)}
	d := NewDecoder(Anthropic)
	var c Chunk
	b.SetBytes(int64(len(ev.Data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := d.DecodeEvent(&ev, &c); err != nil {
			b.Fatal(err)
		}
	}
	if !c.Token || string(c.Text) != " the" {
		b.Fatalf("decoded %+v, want a token with text", c)
	}
}

// BenchmarkDecodeAnthropic decodes every event of anthropicStream per op,
// beside BenchmarkDecodeResponses.
func BenchmarkDecodeAnthropic(b *testing.B) {
	events := anthropicStreamEvents()
	d := NewDecoder(Anthropic)
	var c Chunk
	b.ReportAllocs()
	for b.Loop() {
		for i := range events {
			if err := d.DecodeEvent(&events[i], &c); err != nil {
				b.Fatal(err)
			}
		}
	}
}
