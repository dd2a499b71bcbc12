package mock

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/sse"
)

const messagesBody = `{"model":"mock-llm","max_tokens":6,"system":"Be brief.","messages":[{"role":"user","content":"hello there"}],"stream":true}`

// blockOf names a content_block_start's block and its delta events.
func blockOf(ev responsesEvent) string {
	switch ev.name {
	case "content_block_start":
		return "start:" + ev.data["content_block"].(map[string]any)["type"].(string)
	case "content_block_delta":
		return ev.data["delta"].(map[string]any)["type"].(string)
	}
	return ev.name
}

func TestMessagesStream(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		reasoning, toolCalls int
		wantEvents           string
		wantStop             string
	}{
		{"plain", 0, 0, "message_start start:text ping text_delta text_delta text_delta text_delta text_delta text_delta content_block_stop message_delta message_stop", "max_tokens"},
		{"reasoning", 2, 0, "message_start start:thinking ping thinking_delta thinking_delta signature_delta content_block_stop start:text text_delta text_delta text_delta text_delta content_block_stop message_delta message_stop", "max_tokens"},
		{"tool calls", 2, 2, "message_start start:thinking ping thinking_delta thinking_delta signature_delta content_block_stop start:tool_use input_json_delta input_json_delta content_block_stop start:tool_use input_json_delta input_json_delta content_block_stop message_delta message_stop", "tool_use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, base := startServer(t, Config{TTFT: time.Millisecond, ITL: 100 * time.Microsecond, ReasoningTokens: tc.reasoning, ToolCalls: tc.toolCalls})
			resp := post(t, base+"/v1/messages", messagesBody)
			defer resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("content-type"), "text/event-stream") {
				t.Fatalf("status %d, content-type %q", resp.StatusCode, resp.Header.Get("content-type"))
			}
			events := readTypedEvents(t, resp.Body)
			var got []string
			indexes := map[float64]bool{}
			for _, ev := range events {
				got = append(got, blockOf(ev))
				if i, ok := ev.data["index"].(float64); ok {
					indexes[i] = true
				}
			}
			if strings.Join(got, " ") != tc.wantEvents {
				t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, " "), tc.wantEvents)
			}
			if blocks := strings.Count(tc.wantEvents, "start:"); len(indexes) != blocks {
				t.Errorf("block indexes %v, want %d of them", indexes, blocks)
			}
			start := events[0].data["message"].(map[string]any)
			// "Be brief." and "hello there" in the mock's tokenizer.
			if u := start["usage"].(map[string]any); u["input_tokens"].(float64) < 2 || u["output_tokens"] != 0.0 || start["role"] != "assistant" {
				t.Errorf("message_start %v", start)
			}
			end := events[len(events)-2].data
			if end["delta"].(map[string]any)["stop_reason"] != tc.wantStop || end["usage"].(map[string]any)["output_tokens"] != 6.0 ||
				end["usage"].(map[string]any)["input_tokens"] != start["usage"].(map[string]any)["input_tokens"] {
				t.Errorf("message_delta %v", end)
			}
		})
	}
}

// TestMessagesStreamDecodes reads the mock's stream with the client's own
// decoder: one token event per delta the truth log records, the answer's
// text, and the usage of message_start and message_delta.
func TestMessagesStreamDecodes(t *testing.T) {
	truth := filepath.Join(t.TempDir(), "truth.log")
	srv, base := startServer(t, Config{TTFT: time.Millisecond, ITL: 100 * time.Microsecond, ReasoningTokens: 1, TokensPerChunk: 2, TruthLog: truth})
	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(strings.Replace(messagesBody, `"max_tokens":6`, `"max_tokens":7`, 1)))
	req.Header.Set("x-request-id", "m-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	d := sse.NewDecoder(sse.Anthropic)
	var p sse.Parser
	var tokens, reasoning int
	var text bytes.Buffer
	var prompt, completion int64 = -1, -1
	h := eventFunc(func(ev *sse.Event) error {
		var c sse.Chunk
		if err := d.DecodeEvent(ev, &c); err != nil {
			return err
		}
		if c.Token {
			tokens++
			text.Write(c.Text)
		}
		if c.Reasoning {
			reasoning++
		}
		if c.HasUsage {
			if c.PromptTokens >= 0 {
				prompt = c.PromptTokens
			}
			completion = c.CompletionTokens
		}
		return nil
	})
	if err := p.Feed(body, h); err != nil {
		t.Fatal(err)
	}
	reqs := closeAndRead(t, srv, truth)
	if len(reqs) != 1 || reqs[0].RequestID != "m-1" {
		t.Fatalf("truth log %+v", reqs)
	}
	var carried []int
	for _, tok := range reqs[0].Tokens {
		carried = append(carried, tok.Tokens)
	}
	// 7 tokens, 2 an event: the thinking token's event carries the first
	// answer token too (an event's block is its first token's).
	if fmt.Sprint(carried) != "[2 2 2 1]" || tokens != len(carried) || reasoning != 1 {
		t.Fatalf("truth log tokens per event %v, client token events %d (%d reasoning)", carried, tokens, reasoning)
	}
	if completion != 7 || prompt < 2 || !strings.HasPrefix(text.String(), " ") {
		t.Fatalf("usage %d + %d, text %q", prompt, completion, text.String())
	}
}

type eventFunc func(*sse.Event) error

func (f eventFunc) OnEvent(ev *sse.Event) error { return f(ev) }

func TestMessagesNonStreaming(t *testing.T) {
	_, base := startServer(t, Config{TTFT: time.Millisecond, ITL: 100 * time.Microsecond, ReasoningTokens: 2, ToolCalls: 1})
	m := readJSON(t, post(t, base+"/v1/messages", `{"model":"mock-llm","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`))
	if m["type"] != "message" || m["stop_reason"] != "tool_use" || !strings.HasPrefix(m["id"].(string), "msg_") {
		t.Fatalf("message %v", m)
	}
	var types []string
	for _, b := range m["content"].([]any) {
		types = append(types, b.(map[string]any)["type"].(string))
	}
	if strings.Join(types, ",") != "thinking,tool_use" {
		t.Fatalf("content blocks %v", types)
	}
	call := m["content"].([]any)[1].(map[string]any)
	if call["name"] != toolName || call["input"].(map[string]any)["query"] == "" {
		t.Errorf("tool_use %v", call)
	}
	if u := m["usage"].(map[string]any); u["output_tokens"] != 5.0 || u["input_tokens"] != 2.0 { // "hi" is two byte tokens
		t.Errorf("usage %v", u)
	}
}

// TestMessagesErrors: the Messages API's errors come in its shape, with
// vLLM's types for bad requests and the API's own for the mock's faults.
func TestMessagesErrors(t *testing.T) {
	f, err := ParseFault("http503:every=2")
	if err != nil {
		t.Fatal(err)
	}
	_, base := startServer(t, Config{TTFT: time.Millisecond, ITL: 100 * time.Microsecond, Faults: []Fault{f}})
	for _, tc := range []struct {
		body       string
		status     int
		typ, inMsg string
	}{
		{`{"model":"mock-llm","messages":[{"role":"user","content":"hi"}]}`, 400, "BadRequestError", "max_tokens: Field required"},
		{`{"model":"other","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`, 404, "NotFoundError", "The model `other` does not exist."},
		{`{"model":"mock-llm","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, 400, "BadRequestError", "max_tokens must be at least 1, got 0."},
		{`{"model":"mock-llm","max_tokens":3,"system":5,"messages":[{"role":"user","content":"hi"}]}`, 400, "BadRequestError", "system: want a string"},
		// The first valid request is the fault's first; the second gets it.
		{`{"model":"mock-llm","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`, 200, "", ""},
		{`{"model":"mock-llm","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`, 503, "overloaded_error", "injected fault: http503"},
	} {
		resp := post(t, base+"/v1/messages", tc.body)
		m := readJSON(t, resp)
		if resp.StatusCode != tc.status {
			t.Fatalf("%s: status %d, want %d (%v)", tc.body, resp.StatusCode, tc.status, m)
		}
		if tc.status == 200 {
			continue
		}
		e, _ := m["error"].(map[string]any)
		if m["type"] != "error" || e["type"] != tc.typ || !strings.Contains(e["message"].(string), tc.inMsg) {
			t.Errorf("%s: error body %v, want type %s and %q", tc.body, m, tc.typ, tc.inMsg)
		}
	}
}

// TestErrorEventFault: error-event ends a stream with its API's in-stream
// error after the tokens before it, and the response ends well.
func TestErrorEventFault(t *testing.T) {
	f, err := ParseFault("error-event:every=1,at=2")
	if err != nil {
		t.Fatal(err)
	}
	if f.String() != "error-event:every=1,at=2" {
		t.Errorf("String() = %q", f.String())
	}
	_, base := startServer(t, Config{TTFT: time.Millisecond, ITL: 100 * time.Microsecond, Faults: []Fault{f}})

	resp := post(t, base+"/v1/messages", messagesBody)
	events := readTypedEvents(t, resp.Body)
	resp.Body.Close()
	var got []string
	for _, ev := range events {
		got = append(got, blockOf(ev))
	}
	if strings.Join(got, " ") != "message_start start:text ping text_delta text_delta error" {
		t.Fatalf("events %q", got)
	}
	if e := events[len(events)-1].data["error"].(map[string]any); e["type"] != "overloaded_error" || e["message"] != streamErrorMessage {
		t.Errorf("error event %v", e)
	}

	resp = post(t, base+"/v1/chat/completions", `{"model":"mock-llm","messages":[{"role":"user","content":"hi"}],"max_tokens":6,"stream":true}`)
	s := readSSE(t, resp.Body)
	resp.Body.Close()
	last := s.chunks[len(s.chunks)-1]
	if s.tokenEvents != 3 || !s.done || last["error"].(map[string]any)["message"] != streamErrorMessage {
		t.Fatalf("chat: %d token events (role chunk and 2 tokens), done %v, last chunk %v", s.tokenEvents, s.done, last)
	}

	resp = post(t, base+"/v1/responses", `{"model":"mock-llm","input":"hi","max_output_tokens":6,"stream":true}`)
	rev := readTypedEvents(t, resp.Body)
	resp.Body.Close()
	if ev := rev[len(rev)-1]; ev.name != "error" || ev.data["message"] != streamErrorMessage {
		t.Fatalf("responses: last event %v", ev)
	}

	resp = post(t, base+"/v1/messages", strings.Replace(messagesBody, `"stream":true`, `"stream":false`, 1))
	if m := readJSON(t, resp); resp.StatusCode != 500 || m["error"].(map[string]any)["type"] != "api_error" {
		t.Fatalf("non-streaming: status %d, %v", resp.StatusCode, m)
	}
}
