package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// extraWant is what a chunk says beyond Python's fields.
type extraWant struct {
	reasoning, toolCall bool
	started             int
	reasoningTokens     int64
}

var extraCases = []struct {
	name  string
	kind  Kind
	event string // SSE event name; "" for none
	data  string
	want  wantChunk
	extra extraWant
}{
	// Chat: as in Python, any chunk with a non-empty "choices" is a token
	// event and only delta.content is text.
	{"chat reasoning_content counts, no text", Chat, "",
		`{"choices":[{"index":0,"delta":{"reasoning_content":"Let me"},"finish_reason":null}]}`,
		token(nilText), extraWant{reasoning: true, reasoningTokens: -1}},
	{"chat reasoning counts, no text", Chat, "",
		`{"choices":[{"delta":{"reasoning":" think","content":null}}]}`,
		token(nilText), extraWant{reasoning: true, reasoningTokens: -1}},
	{"chat empty reasoning is not reasoning", Chat, "",
		`{"choices":[{"delta":{"reasoning":"","content":"a"}}]}`,
		token("a"), extraWant{reasoningTokens: -1}},
	{"chat reasoning of another type is taken for its truth", Chat, "",
		`{"choices":[{"delta":{"reasoning":{"x":1}}}]}`,
		token(nilText), extraWant{reasoning: true, reasoningTokens: -1}},
	{"chat tool call opening", Chat, "",
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}}]}`,
		token(nilText), extraWant{toolCall: true, started: 1, reasoningTokens: -1}},
	{"chat tool call arguments", Chat, "",
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}}]}`,
		token(nilText), extraWant{toolCall: true, reasoningTokens: -1}},
	{"chat two calls opened, empty id not counted", Chat, "",
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a"},{"index":1,"id":"b"},{"index":2,"id":""},{"id":null}]}}]}`,
		token(nilText), extraWant{toolCall: true, started: 2, reasoningTokens: -1}},
	{"chat empty tool_calls is no call", Chat, "",
		`{"choices":[{"delta":{"tool_calls":[],"content":"x"}}]}`,
		token("x"), extraWant{reasoningTokens: -1}},
	{"chat repeated delta: last wins", Chat, "",
		`{"choices":[{"delta":{"reasoning":"r","tool_calls":[{"id":"a"}]},"delta":{"content":"c"}}]}`,
		token("c"), extraWant{reasoningTokens: -1}},
	{"chat extras of the second choice ignored", Chat, "",
		`{"choices":[{"delta":{"content":"c"}},{"delta":{"reasoning":"r"}}]}`,
		token("c"), extraWant{reasoningTokens: -1}},
	{"chat usage with reasoning tokens", Chat, "",
		`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":6}}}`,
		usage(5, 9), extraWant{reasoningTokens: 6}},
	{"completions ignores reasoning", Completions, "",
		`{"choices":[{"text":"a","delta":{"reasoning":"r"}}]}`,
		token("a"), extraWant{reasoningTokens: -1}},

	// Responses.
	{"responses output text", Responses, "response.output_text.delta",
		`{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":" the","logprobs":[],"sequence_number":7}`,
		token(" the"), extraWant{reasoningTokens: -1}},
	{"responses type without event name", Responses, "",
		`{"type":"response.output_text.delta","delta":"caf\u00e9"}`,
		token("café"), extraWant{reasoningTokens: -1}},
	{"responses event name without type", Responses, "response.output_text.delta",
		`{"delta":"x"}`, token("x"), extraWant{reasoningTokens: -1}},
	{"responses type wins over event name", Responses, "response.created",
		`{"type":"response.output_text.delta","delta":"x"}`, token("x"), extraWant{reasoningTokens: -1}},
	{"responses null delta is an empty token", Responses, "",
		`{"type":"response.output_text.delta","delta":null}`, token(nilText), extraWant{reasoningTokens: -1}},
	{"responses reasoning text", Responses, "",
		`{"type":"response.reasoning_text.delta","item_id":"rs_1","delta":"Hmm"}`,
		token(nilText), extraWant{reasoning: true, reasoningTokens: -1}},
	{"responses reasoning summary", Responses, "",
		`{"type":"response.reasoning_summary_text.delta","summary_index":0,"delta":"Plan"}`,
		token(nilText), extraWant{reasoning: true, reasoningTokens: -1}},
	{"responses function call arguments", Responses, "",
		`{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":"{\""}`,
		token(nilText), extraWant{toolCall: true, reasoningTokens: -1}},
	{"responses refusal", Responses, "",
		`{"type":"response.refusal.delta","delta":"no"}`, token(nilText), extraWant{reasoningTokens: -1}},
	{"responses function call added", Responses, "",
		`{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":""}}`,
		noToken(), extraWant{started: 1, reasoningTokens: -1}},
	{"responses message added", Responses, "",
		`{"type":"response.output_item.added","item":{"type":"message","id":"msg_1","content":[]}}`,
		noToken(), extraWant{reasoningTokens: -1}},
	{"responses created passed over", Responses, "",
		`{"type":"response.created","response":{"id":"resp_1","status":"in_progress","usage":null,"output":[{"type":"message"}]}}`,
		noToken(), extraWant{reasoningTokens: -1}},
	{"responses completed usage", Responses, "response.completed",
		`{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[],"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":20},"total_tokens":42},"error":null}}`,
		usage(12, 30), extraWant{reasoningTokens: 20}},
	{"responses incomplete usage", Responses, "",
		`{"type":"response.incomplete","response":{"status":"incomplete","usage":{"input_tokens":3,"output_tokens":4}}}`,
		usage(3, 4), extraWant{reasoningTokens: -1}},
	{"responses usage with chat names not read", Responses, "",
		`{"type":"response.completed","response":{"usage":{"prompt_tokens":3,"completion_tokens":4}}}`,
		usage(-1, -1), extraWant{reasoningTokens: -1}},
	{"responses completed without usage", Responses, "",
		`{"type":"response.completed","response":{"usage":null}}`, noToken(), extraWant{reasoningTokens: -1}},
	{"responses failed", Responses, "",
		`{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"engine died"}}}`,
		errChunk("engine died"), extraWant{reasoningTokens: -1}},
	{"responses failed without message", Responses, "",
		`{"type":"response.failed","response":{"error":{"code":"x"}}}`,
		errChunk(`{"code":"x"}`), extraWant{reasoningTokens: -1}},
	{"responses error event", Responses, "error",
		`{"type":"error","code":"rate_limit","message":"slow down","param":null}`,
		errChunk("slow down"), extraWant{reasoningTokens: -1}},
	{"responses error event, nested", Responses, "",
		`{"type":"error","error":{"message":"bad"}}`, errChunk("bad"), extraWant{reasoningTokens: -1}},
	{"responses error event without message", Responses, "",
		`{"type":"error"}`, errChunk(`{"type":"error"}`), extraWant{reasoningTokens: -1}},
	{"responses done passed over", Responses, "", `[DONE]`,
		wantChunk{done: true, text: nilText, prompt: -1, completion: -1}, extraWant{reasoningTokens: -1}},
	{"responses no type", Responses, "", `{"delta":"x"}`, noToken(), extraWant{reasoningTokens: -1}},
	{"responses escaped type", Responses, "",
		`{"type":"response.output_text.\u0064elta","delta":"x"}`, token("x"), extraWant{reasoningTokens: -1}},
}

func TestDecodeExtras(t *testing.T) {
	for _, tc := range extraCases {
		t.Run(tc.name, func(t *testing.T) {
			var c Chunk
			ev := Event{Data: []byte(tc.data)}
			if tc.event != "" {
				ev.Name = []byte(tc.event)
			}
			if err := NewDecoder(tc.kind).DecodeEvent(&ev, &c); err != nil {
				t.Fatal(err)
			}
			checkChunk(t, &c, tc.want)
			got := extraWant{c.Reasoning, c.ToolCall, c.ToolCallsStarted, c.ReasoningTokens}
			if got != tc.extra {
				t.Errorf("extras = %+v, want %+v", got, tc.extra)
			}
		})
	}
}

func TestDecodeResponsesErrors(t *testing.T) {
	for _, tc := range []struct{ name, data, wantErr string }{
		{"not JSON", `{"type":"response.output_text.delta","delta":`, "invalid JSON"},
		{"not an object", `["response.output_text.delta"]`, "not an object"},
		{"delta not a string", `{"type":"response.output_text.delta","delta":5}`, `"delta" is a JSON number`},
		{"reasoning delta not a string", `{"type":"response.reasoning_text.delta","delta":[1]}`, `"delta" is a JSON array`},
		{"usage not an object", `{"type":"response.completed","response":{"usage":[1]}}`, "response.usage is a JSON array"},
		{"response not an object", `{"type":"response.completed","response":"x","usage":{"a":1}}`, `"response" is a JSON string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Chunk
			err := NewDecoder(Responses).Decode([]byte(tc.data), &c)
			if err == nil || !errors.Is(err, ErrMalformedChunk) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// responsesStream is a Responses stream in the shape vLLM sends: a
// reasoning item, a function call and a message, then the usage.
const responsesStream = "event: response.created\n" +
	`data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}` + "\n\n" +
	"event: response.output_item.added\n" +
	`data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}` + "\n\n" +
	"event: response.reasoning_text.delta\n" +
	`data: {"type":"response.reasoning_text.delta","sequence_number":2,"item_id":"rs_1","output_index":0,"content_index":0,"delta":"Think"}` + "\n\n" +
	"event: response.reasoning_text.delta\n" +
	`data: {"type":"response.reasoning_text.delta","sequence_number":3,"item_id":"rs_1","output_index":0,"content_index":0,"delta":" more"}` + "\n\n" +
	"event: response.output_item.added\n" +
	`data: {"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"lookup","arguments":""}}` + "\n\n" +
	"event: response.function_call_arguments.delta\n" +
	`data: {"type":"response.function_call_arguments.delta","sequence_number":5,"item_id":"fc_1","output_index":1,"delta":"{}"}` + "\n\n" +
	"event: response.output_text.delta\n" +
	`data: {"type":"response.output_text.delta","sequence_number":6,"item_id":"msg_1","output_index":2,"content_index":0,"delta":"Hello","logprobs":[]}` + "\n\n" +
	"event: response.output_text.delta\n" +
	`data: {"type":"response.output_text.delta","sequence_number":7,"item_id":"msg_1","output_index":2,"content_index":0,"delta":" world","logprobs":[]}` + "\n\n" +
	"event: response.output_text.done\n" +
	`data: {"type":"response.output_text.done","sequence_number":8,"item_id":"msg_1","output_index":2,"content_index":0,"text":"Hello world"}` + "\n\n" +
	"event: response.completed\n" +
	`data: {"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","status":"completed","usage":{"input_tokens":7,"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":12}}}` + "\n\n"

// streamTally is what a whole stream adds up to.
type streamTally struct {
	tokens, reasoning, toolDeltas, started int
	text                                   string
	prompt, completion, reasoningTokens    int64
}

type tallyHandler struct {
	d *Decoder
	c Chunk
	streamTally
}

func (h *tallyHandler) OnEvent(ev *Event) error {
	if err := h.d.DecodeEvent(ev, &h.c); err != nil {
		return err
	}
	if h.c.Token {
		h.tokens++
		h.text += string(h.c.Text)
	}
	if h.c.Reasoning {
		h.reasoning++
	}
	if h.c.ToolCall {
		h.toolDeltas++
	}
	h.started += h.c.ToolCallsStarted
	if h.c.HasUsage {
		h.prompt, h.completion, h.reasoningTokens = h.c.PromptTokens, h.c.CompletionTokens, h.c.ReasoningTokens
	}
	return nil
}

func TestResponsesStream(t *testing.T) {
	h := &tallyHandler{d: NewDecoder(Responses)}
	var p Parser
	if err := p.Feed([]byte(responsesStream), h); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(h); err != nil {
		t.Fatal(err)
	}
	want := streamTally{tokens: 5, reasoning: 2, toolDeltas: 1, started: 1, text: "Hello world", prompt: 7, completion: 5, reasoningTokens: 2}
	if h.streamTally != want {
		t.Fatalf("tally %+v, want %+v", h.streamTally, want)
	}
}

func TestDecodeExtrasZeroAllocs(t *testing.T) {
	var events []Event
	for _, tc := range extraCases {
		events = append(events, Event{Name: []byte(tc.event), Data: []byte(tc.data)})
	}
	decoders := map[Kind]*Decoder{Chat: NewDecoder(Chat), Completions: NewDecoder(Completions), Responses: NewDecoder(Responses)}
	var c Chunk
	decodeAll := func() {
		for i := range events {
			if err := decoders[extraCases[i].kind].DecodeEvent(&events[i], &c); err != nil {
				t.Fatal(err)
			}
		}
	}
	decodeAll()
	if n := testing.AllocsPerRun(100, decodeAll); n != 0 {
		t.Fatalf("%v allocs per run after warm-up, want 0", n)
	}
}

// FuzzResponsesDecoder checks the Responses decoder against encoding/json:
// it never panics, decodes the same twice, fails only with
// ErrMalformedChunk, accepts only strict JSON, reports a token event only
// for the delta events, and reads the answer's text as encoding/json does.
// Seeds: the extra cases above (chat ones too, as Responses events) and
// every event of responsesStream.
func FuzzResponsesDecoder(f *testing.F) {
	for _, tc := range extraCases {
		f.Add([]byte(tc.event), []byte(tc.data))
	}
	for _, block := range strings.Split(strings.TrimSpace(responsesStream), "\n\n") {
		name, data, _ := strings.Cut(block, "\ndata: ")
		f.Add([]byte(strings.TrimPrefix(name, "event: ")), []byte(data))
	}
	d := NewDecoder(Responses)
	tokenTypes := map[string]bool{
		"response.output_text.delta": true, "response.reasoning_text.delta": true,
		"response.reasoning_summary_text.delta": true, "response.function_call_arguments.delta": true,
		"response.refusal.delta": true,
	}
	f.Fuzz(func(t *testing.T, name, data []byte) {
		ev := Event{Name: name, Data: data}
		var c, again Chunk
		err := d.DecodeEvent(&ev, &c)
		err2 := d.DecodeEvent(&ev, &again)
		if (err == nil) != (err2 == nil) || c.Token != again.Token || c.HasUsage != again.HasUsage ||
			c.Reasoning != again.Reasoning || c.ToolCall != again.ToolCall || c.ToolCallsStarted != again.ToolCallsStarted {
			t.Fatalf("decoding twice differs: %+v, %v then %+v, %v", c, err, again, err2)
		}
		trimmed := bytes.TrimSpace(data)
		if string(trimmed) == "[DONE]" {
			return
		}
		valid := utf8.Valid(trimmed) && json.Valid(trimmed)
		if err != nil {
			if !errors.Is(err, ErrMalformedChunk) {
				t.Fatalf("error %v does not wrap ErrMalformedChunk", err)
			}
			return
		}
		if !valid {
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
		if c.Token != tokenTypes[typ] {
			t.Fatalf("Token = %v for type %q", c.Token, typ)
		}
		if (c.Reasoning || c.ToolCall) && !c.Token {
			t.Fatalf("Reasoning or ToolCall without a token event: %+v", c)
		}
		if typ == "response.output_text.delta" && !bytes.Contains(trimmed, []byte(`\u`)) {
			if text, ok := m["delta"].(string); ok && text != string(c.Text) {
				t.Fatalf("Text = %q, encoding/json reads %q", c.Text, text)
			}
		}
	})
}

// BenchmarkDecodeResponses decodes every event of responsesStream per op.
func BenchmarkDecodeResponses(b *testing.B) {
	var events []Event
	for _, block := range strings.Split(strings.TrimSpace(responsesStream), "\n\n") {
		name, data, _ := strings.Cut(block, "\ndata: ")
		events = append(events, Event{Name: []byte(strings.TrimPrefix(name, "event: ")), Data: []byte(data)})
	}
	d := NewDecoder(Responses)
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
