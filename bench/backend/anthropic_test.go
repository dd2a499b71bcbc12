package backend

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// anthropicBodyCases are the Messages bodies testdata/anthropic_bodies.golden
// holds, one per case, as `go test -update` writes them.
var anthropicBodyCases = []struct {
	name string
	req  datasets.Request
	p    BodyParams
}{
	{"a text prompt, ignore_eos and sampling parameters",
		datasets.Request{Prompt: "Tell me about h\u00e9rons", ExpectedOutputLen: 128, RequestID: "bench-1-0"},
		BodyParams{Model: "org/model", IgnoreEOS: true, ExtraBody: obj("temperature", "0.0", "top_p", "0.9", "top_k", "20", "min_p", "0.1")}},
	{"the served name, --extra-body overriding max_tokens and adding a key",
		datasets.Request{Prompt: "hi", ExpectedOutputLen: 16},
		BodyParams{Model: "org/model", ModelName: "served", ExtraBody: obj("max_tokens", "7", "stop_sequences", `["\n\n"]`)}},
	{"chat messages: the system prompt to system, turns as they are",
		datasets.Request{ChatMessages: rawJSON(`[{"role":"system","content":"You are terse."},{"role":"user","content":"Hello"},{"role":"assistant","content":"Hi."},{"role":"user","content":[{"type":"text","text":"And now?"}]}]`), ExpectedOutputLen: 32},
		BodyParams{Model: "m"}},
	{"two system messages become text blocks",
		datasets.Request{ChatMessages: rawJSON(`[{"role":"system","content":"A"},{"role":"system","content":[{"type":"text","text":"B"}]},{"role":"user","content":"q"}]`), ExpectedOutputLen: 4},
		BodyParams{Model: "m"}},
	{"media: the text, then image blocks from a data URL and a URL",
		datasets.Request{Prompt: "describe", ExpectedOutputLen: 64, MultiModal: []json.RawMessage{
			rawJSON(`{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}}`),
			rawJSON(`{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}`)}},
		BodyParams{Model: "m"}},
	{"multimodal chat messages (--enable-multimodal-chat)",
		datasets.Request{ChatMessages: rawJSON(`[{"role":"user","content":[{"text":"what is it?","type":"text"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]`), ExpectedOutputLen: 8},
		BodyParams{Model: "m"}},
	{"BFCL tools and tool_choice to the Messages API's form",
		datasets.Request{ChatMessages: rawJSON(`[{"role":"user","content":"Find the area of a triangle with base 10 and height 5."}]`), ExpectedOutputLen: 512,
			Overrides: rawJSON(`{"tools":[{"type":"function","function":{"name":"calculate_triangle_area","description":"Calculate the area of a triangle.","parameters":{"type":"object","properties":{"base":{"type":"integer"},"height":{"type":"integer"}},"required":["base","height"]}}},{"type":"function","function":{"name":"now"}}],"tool_choice":"auto"}`)},
		BodyParams{Model: "m", ExtraBody: obj("temperature", "0.0")}},
	{"tools already in the Messages form, a named tool choice",
		datasets.Request{Prompt: "weather?", ExpectedOutputLen: 50},
		BodyParams{Model: "m", ExtraBody: obj("tools", `[{"name":"get_weather","input_schema":{"type":"object"}}]`, "tool_choice", `{"type":"function","function":{"name":"get_weather"}}`)}},
	{"a required tool choice",
		datasets.Request{Prompt: "x", ExpectedOutputLen: 1},
		BodyParams{Model: "m", ExtraBody: obj("tool_choice", `"required"`)}},
}

// TestAnthropicBodyGolden checks each case's body against the golden file
// and that every body is JSON whose keys come in the Messages API's order.
func TestAnthropicBodyGolden(t *testing.T) {
	var got bytes.Buffer
	for _, tc := range anthropicBodyCases {
		body, err := BuildRequestBody("anthropic-messages", &tc.req, tc.p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !json.Valid(body) {
			t.Fatalf("%s: not JSON: %s", tc.name, body)
		}
		keys := topKeys(t, body)
		wantFirst := []string{"model", "max_tokens"}
		if !slices.Equal(keys[:2], wantFirst) || !slices.Contains(keys, "messages") || !slices.Contains(keys, "stream") {
			t.Errorf("%s: keys %q", tc.name, keys)
		}
		got.WriteString("# " + tc.name + "\n")
		got.Write(body)
		got.WriteString("\n")
	}
	path := filepath.Join("testdata", "anthropic_bodies.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("bodies differ from %s (go test -update rewrites it):\n%s", path, got.String())
	}
}

// topKeys are the keys of a JSON object in their order.
func topKeys(t *testing.T, body []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestAnthropicBodyTranslation reads the translated parts back: the system
// prompt, the image sources and the tool schemas, so that the golden file
// is not the only witness.
func TestAnthropicBodyTranslation(t *testing.T) {
	decode := func(i int) map[string]any {
		tc := anthropicBodyCases[i]
		body, err := BuildRequestBody("anthropic-messages", &tc.req, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	chat := decode(2)
	if chat["system"] != "You are terse." || len(chat["messages"].([]any)) != 3 {
		t.Errorf("system %v, messages %v", chat["system"], chat["messages"])
	}
	media := decode(4)
	content := media["messages"].([]any)[0].(map[string]any)["content"].([]any)
	data := content[1].(map[string]any)["source"].(map[string]any)
	url := content[2].(map[string]any)["source"].(map[string]any)
	if data["type"] != "base64" || data["media_type"] != "image/jpeg" || data["data"] != "/9j/4AAQ" || url["type"] != "url" || url["url"] != "https://example.com/cat.png" {
		t.Errorf("image sources %v, %v", data, url)
	}
	tools := decode(6)
	list := tools["tools"].([]any)
	first, second := list[0].(map[string]any), list[1].(map[string]any)
	if first["name"] != "calculate_triangle_area" || first["input_schema"].(map[string]any)["required"] == nil || second["input_schema"] == nil {
		t.Errorf("tools %v", list)
	}
	if choice := tools["tool_choice"].(map[string]any); choice["type"] != "auto" {
		t.Errorf("tool_choice %v", choice)
	}
	if choice := decode(7)["tool_choice"].(map[string]any); choice["type"] != "tool" || choice["name"] != "get_weather" {
		t.Errorf("named tool_choice %v", choice)
	}
	if choice := decode(8)["tool_choice"].(map[string]any); choice["type"] != "any" {
		t.Errorf("required tool_choice %v", choice)
	}
}

func TestAnthropicBodyRefusals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		req     datasets.Request
		wantErr string
	}{
		{"token ids", datasets.Request{PromptIDs: []int32{1, 2}, RequestID: "r1"}, "a prompt of token ids"},
		{"prompt list", datasets.Request{PromptList: []string{"a", "b"}, RequestID: "r2"}, "a prompt of token ids or a list of prompts"},
		{"video", datasets.Request{Prompt: "x", RequestID: "r3", MultiModal: []json.RawMessage{rawJSON(`{"type":"video_url","video_url":{"url":"data:video/mp4;base64,AA"}}`)}},
			`media item 0: a "video_url" part, which has no Messages API block`},
		{"audio part in messages", datasets.Request{RequestID: "r4", ChatMessages: rawJSON(`[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA","format":"wav"}}]}]`)},
			`message 0, content part 0: a "input_audio" part`},
		{"tool turn", datasets.Request{RequestID: "r5", ChatMessages: rawJSON(`[{"role":"tool","content":"42"}]`)}, `message 0: role "tool"`},
		{"tool calls", datasets.Request{RequestID: "r6", ChatMessages: rawJSON(`[{"role":"assistant","content":null,"tool_calls":[]}]`)}, `message 0: key "tool_calls"`},
		{"data URL not base64", datasets.Request{Prompt: "x", RequestID: "r7", MultiModal: []json.RawMessage{rawJSON(`{"type":"image_url","image_url":{"url":"data:image/png,raw"}}`)}},
			"want data:<media type>;base64,<data>"},
		{"image in the system prompt", datasets.Request{RequestID: "r8", ChatMessages: rawJSON(`[{"role":"system","content":[{"type":"image_url","image_url":{"url":"u"}}]}]`)},
			"a system prompt holds text alone"},
		{"messages not a list", datasets.Request{RequestID: "r9", ChatMessages: rawJSON(`{"role":"user"}`)}, "chat messages are a JSON dict, not a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BuildRequestBody("anthropic-messages", &tc.req, BodyParams{Model: "m"})
			if err == nil || !strings.Contains(err.Error(), "--backend anthropic-messages: request \""+tc.req.RequestID+"\"") || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one naming the backend, the request and %q", err, tc.wantErr)
			}
		})
	}
}

func TestAnthropicHeaders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		req    datasets.Request
		apiKey string
		extra  []plan.Header
		want   []plan.Header
	}{
		{"key in x-api-key, then the version, then the request id", datasets.Request{RequestID: "r1"}, "sk-ant", nil,
			[]plan.Header{{Key: "Content-Type", Value: "application/json"}, {Key: "x-api-key", Value: "sk-ant"}, {Key: "anthropic-version", Value: "2023-06-01"}, {Key: "x-request-id", Value: "r1"}}},
		{"no key: no x-api-key", datasets.Request{}, "", nil,
			[]plan.Header{{Key: "Content-Type", Value: "application/json"}, {Key: "anthropic-version", Value: "2023-06-01"}}},
		{"--header replaces the version and adds its own", datasets.Request{}, "k",
			[]plan.Header{{Key: "anthropic-version", Value: "2024-01-01"}, {Key: "anthropic-beta", Value: "x"}},
			[]plan.Header{{Key: "Content-Type", Value: "application/json"}, {Key: "x-api-key", Value: "k"}, {Key: "anthropic-version", Value: "2024-01-01"}, {Key: "anthropic-beta", Value: "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RequestHeaders("anthropic-messages", &tc.req, tc.apiKey, tc.extra)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("headers %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAnthropicCommandLine: the backend's endpoint is /v1/messages unless
// --endpoint says otherwise, its key is $ANTHROPIC_API_KEY, else
// $OPENAI_API_KEY, and the URL check names the Messages API.
func TestAnthropicCommandLine(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for _, tc := range []struct {
		name          string
		args          []string
		vars          map[string]string
		wantURL, want string
	}{
		{"default endpoint, Anthropic's key", nil, map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "OPENAI_API_KEY": "sk-oai"},
			"http://127.0.0.1:8000/v1/messages", "sk-ant"},
		{"OpenAI's key when there is no Anthropic key", nil, map[string]string{"OPENAI_API_KEY": "sk-oai"},
			"http://127.0.0.1:8000/v1/messages", "sk-oai"},
		{"no key", []string{"--base-url", "http://h:1"}, nil, "http://h:1/v1/messages", ""},
		{"--endpoint wins", []string{"--endpoint", "/anthropic/v1/messages"}, nil, "http://127.0.0.1:8000/anthropic/v1/messages", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parseArgs(append([]string{"--backend", "anthropic-messages", "--model", "m"}, tc.args...), env(tc.vars))
			if err != nil {
				t.Fatal(err)
			}
			if p.APIURL != tc.wantURL || p.APIKey != tc.want {
				t.Fatalf("api_url %q, key %q; want %q, %q", p.APIURL, p.APIKey, tc.wantURL, tc.want)
			}
			if err := CheckEndpoint("anthropic-messages", p.APIURL); err != nil {
				t.Fatal(err)
			}
		})
	}
	// Python's backends keep Python's endpoint and key.
	p, err := parseArgs([]string{"--backend", "openai-chat", "--model", "m"}, env(map[string]string{"ANTHROPIC_API_KEY": "sk-ant"}))
	if err != nil || p.Endpoint != "/v1/completions" || p.APIKey != "" {
		t.Fatalf("openai-chat: endpoint %q, key %q, %v", p.Endpoint, p.APIKey, err)
	}
	if err := CheckEndpoint("anthropic-messages", "http://h/v1/chat/completions"); err == nil ||
		err.Error() != "Anthropic Messages API URL must end with one of: {'messages', 'profile'}." {
		t.Fatalf("endpoint check: %v", err)
	}
	// The key goes in x-api-key, so it does not clash with --base-url's
	// user:password as a Bearer token would.
	if _, err := parseArgs([]string{"--backend", "anthropic-messages", "--model", "m", "--base-url", "http://u:p@h:1"}, env(map[string]string{"ANTHROPIC_API_KEY": "k"})); err != nil {
		t.Fatalf("x-api-key beside URL credentials: %v", err)
	}
	if _, err := parseArgs([]string{"--backend", "anthropic-messages", "--model", "m"}, env(map[string]string{"ANTHROPIC_API_KEY": "bad\nkey"})); err == nil ||
		!strings.Contains(err.Error(), "environment variable ANTHROPIC_API_KEY") {
		t.Fatalf("a key that is no header value: %v", err)
	}
}
