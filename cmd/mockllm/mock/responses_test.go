package mock

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// responsesEvent is one typed event as a client reads it.
type responsesEvent struct {
	name string
	data map[string]any
}

// readTypedEvents reads a Responses stream: "event:" and "data:" lines,
// events at blank lines; the event name must match the data's type.
func readTypedEvents(t *testing.T, body io.Reader) []responsesEvent {
	t.Helper()
	raw, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	var out []responsesEvent
	for _, block := range strings.Split(strings.TrimSpace(string(raw)), "\n\n") {
		name, data, ok := strings.Cut(block, "\n")
		if !ok || !strings.HasPrefix(name, "event: ") || !strings.HasPrefix(data, "data: ") {
			t.Fatalf("block %q is not an event line and a data line", block)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &m); err != nil {
			t.Fatalf("data %q: %v", data, err)
		}
		ev := responsesEvent{strings.TrimPrefix(name, "event: "), m}
		if m["type"] != ev.name {
			t.Fatalf("event %q carries type %v", ev.name, m["type"])
		}
		out = append(out, ev)
	}
	return out
}

func TestResponsesStream(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		reasoning, toolCalls int
		wantTypes            map[string]int
		wantText             string
	}{
		{"plain", 0, 0, map[string]int{"response.output_text.delta": 6, "response.output_item.added": 1, "response.content_part.added": 1}, ""},
		{"reasoning", 2, 0, map[string]int{"response.reasoning_text.delta": 2, "response.output_text.delta": 4, "response.output_item.added": 2}, ""},
		{"tool calls", 2, 2, map[string]int{"response.reasoning_text.delta": 2, "response.function_call_arguments.delta": 4, "response.output_item.added": 3, "response.output_text.delta": 0}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, base := startServer(t, Config{TTFT: time.Millisecond, ITL: 100 * time.Microsecond, ReasoningTokens: tc.reasoning, ToolCalls: tc.toolCalls})
			resp := post(t, base+"/v1/responses", `{"model":"mock-llm","input":"hello there","max_output_tokens":6,"stream":true}`)
			defer resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("content-type"), "text/event-stream") {
				t.Fatalf("status %d, content-type %q", resp.StatusCode, resp.Header.Get("content-type"))
			}
			events := readTypedEvents(t, resp.Body)
			counts := map[string]int{}
			for i, ev := range events {
				counts[ev.name]++
				if seq, _ := ev.data["sequence_number"].(float64); int(seq) != i {
					t.Errorf("event %d (%s): sequence_number %v", i, ev.name, ev.data["sequence_number"])
				}
			}
			for typ, n := range tc.wantTypes {
				if counts[typ] != n {
					t.Errorf("%d %s events, want %d (all: %v)", counts[typ], typ, n, counts)
				}
			}
			if events[0].name != "response.created" || events[len(events)-1].name != "response.completed" {
				t.Fatalf("first %s, last %s", events[0].name, events[len(events)-1].name)
			}
			final := events[len(events)-1].data["response"].(map[string]any)
			usage := final["usage"].(map[string]any)
			details := usage["output_tokens_details"].(map[string]any)
			if usage["output_tokens"] != 6.0 || usage["input_tokens"].(float64) < 1 || details["reasoning_tokens"] != float64(tc.reasoning) {
				t.Errorf("usage %v", usage)
			}
			// max_output_tokens ends a text answer; tool calls end on their own.
			if want := map[bool]string{true: "completed", false: "incomplete"}[tc.toolCalls > 0]; final["status"] != want {
				t.Errorf("status %v, want %s", final["status"], want)
			}
		})
	}
}

func TestResponsesNonStreaming(t *testing.T) {
	_, base := startServer(t, Config{TTFT: time.Millisecond, ITL: 100 * time.Microsecond, ReasoningTokens: 2, ToolCalls: 1})
	m := readJSON(t, post(t, base+"/v1/responses", `{"model":"mock-llm","input":[{"role":"user","content":"hi"}],"max_output_tokens":5}`))
	if m["object"] != "response" || m["status"] != "completed" {
		t.Fatalf("response %v", m)
	}
	output := m["output"].([]any)
	var types []string
	for _, it := range output {
		types = append(types, it.(map[string]any)["type"].(string))
	}
	if strings.Join(types, ",") != "reasoning,function_call" {
		t.Fatalf("output items %v", types)
	}
	if args := output[1].(map[string]any)["arguments"].(string); args == "" {
		t.Error("the call has no arguments")
	}
	if u := m["usage"].(map[string]any); u["output_tokens"] != 5.0 {
		t.Errorf("usage %v", u)
	}
	bad := post(t, base+"/v1/responses", `{"model":"mock-llm","max_output_tokens":5}`)
	if bad.StatusCode != 400 || !strings.Contains(readJSON(t, bad)["error"].(map[string]any)["message"].(string), "input") {
		t.Errorf("a request without input: status %d", bad.StatusCode)
	}
}

// The chat stream of a reasoning model: reasoning deltas first, then tool
// calls whose first delta carries the id, every chunk a token event.
func TestChatReasoningAndToolCalls(t *testing.T) {
	_, base := startServer(t, Config{TTFT: time.Millisecond, ITL: 100 * time.Microsecond, ReasoningTokens: 2, ToolCalls: 2})
	resp := post(t, base+"/v1/chat/completions", `{"model":"mock-llm","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":6,"stream":true,"stream_options":{"include_usage":true}}`)
	defer resp.Body.Close()
	s := readSSE(t, resp.Body)
	var kinds []string
	ids := 0
	for _, c := range s.chunks {
		choices, _ := c["choices"].([]any)
		if len(choices) == 0 {
			continue
		}
		d := choices[0].(map[string]any)["delta"].(map[string]any)
		switch {
		case d["reasoning"] != nil:
			kinds = append(kinds, "r")
		case d["tool_calls"] != nil:
			kinds = append(kinds, "t")
			if _, ok := d["tool_calls"].([]any)[0].(map[string]any)["id"]; ok {
				ids++
			}
		case d["role"] != nil:
			kinds = append(kinds, "role")
		default:
			kinds = append(kinds, "c")
		}
	}
	if got := strings.Join(kinds, " "); got != "role r r t t t t" || ids != 2 {
		t.Fatalf("chunks %q with %d call ids", got, ids)
	}
	if s.tokenEvents != 7 || s.usage["completion_tokens"] != 6.0 || s.text != "" {
		t.Fatalf("%d token events, usage %v, text %q", s.tokenEvents, s.usage, s.text)
	}
	last := s.chunks[len(s.chunks)-2]["choices"].([]any)[0].(map[string]any)
	if last["finish_reason"] != "tool_calls" {
		t.Errorf("finish_reason %v", last["finish_reason"])
	}
}
