package backend

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/sse"
)

func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }

func obj(pairs ...string) plan.JSONObject {
	var o plan.JSONObject
	for i := 0; i < len(pairs); i += 2 {
		o.Set(pairs[i], json.RawMessage(pairs[i+1]))
	}
	return o
}

// The expected bodies were printed by CPython's json.dumps on the payload
// dicts the Python request functions build for the same inputs.
func TestBuildRequestBody(t *testing.T) {
	five := 5
	image := rawJSON(`{"type":"image_url","image_url":{"url":"file://cat.png"}}`)
	tests := []struct {
		name    string
		backend string
		req     datasets.Request
		p       BodyParams
		want    string
	}{
		{"completions, extra body overwrites in place and appends", "vllm",
			datasets.Request{Prompt: "h\u00e9llo \"q\"\n\x7f\U0001F600", ExpectedOutputLen: 128},
			BodyParams{Model: "m", IgnoreEOS: true, ExtraBody: obj("temperature", "0.5", "max_tokens", "7", "top_k", "5")},
			`{"model": "m", "prompt": "h\u00e9llo \"q\"\n\u007f\ud83d\ude00", "repetition_penalty": 1.0, "max_tokens": 7, "logprobs": null, "stream": true, "stream_options": {"include_usage": true}, "ignore_eos": true, "temperature": 0.5, "top_k": 5}`},
		{"completions, token ids, logprobs, served name", "openai",
			datasets.Request{PromptIDs: []int32{1, 2, 30000}, ExpectedOutputLen: 16},
			BodyParams{Model: "org/m", ModelName: "served", Logprobs: &five},
			`{"model": "served", "prompt": [1, 2, 30000], "repetition_penalty": 1.0, "max_tokens": 16, "logprobs": 5, "stream": true, "stream_options": {"include_usage": true}}`},
		{"chat with media and request overrides", "openai-chat",
			datasets.Request{Prompt: "describe", ExpectedOutputLen: 64, MultiModal: []json.RawMessage{image}, Overrides: rawJSON(`{"tools":[{"type":"function"}],"tool_choice":"auto"}`)},
			BodyParams{Model: "m", ExtraBody: obj("temperature", "0.0")},
			`{"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "describe"}, {"type": "image_url", "image_url": {"url": "file://cat.png"}}]}], "max_completion_tokens": 64, "stream": true, "stream_options": {"include_usage": true}, "temperature": 0.0, "tools": [{"type": "function"}], "tool_choice": "auto"}`},
		{"chat messages verbatim, re-encoded as Python would", "openai-chat",
			datasets.Request{ChatMessages: rawJSON(`[{"role":"system","content":"Ünïcode","n":1e3,"z":-0}]`), ExpectedOutputLen: 1},
			BodyParams{Model: "m"},
			`{"model": "m", "messages": [{"role": "system", "content": "\u00dcn\u00efcode", "n": 1000.0, "z": 0}], "max_completion_tokens": 1, "stream": true, "stream_options": {"include_usage": true}}`},
		{"embeddings of a batch", "openai-embeddings",
			datasets.Request{PromptList: []string{"a", "b"}},
			BodyParams{Model: "m"},
			`{"model": "m", "input": ["a", "b"], "truncate_prompt_tokens": -1}`},
		{"vlm2vec: media first, odd id asks the question", "openai-embeddings-vlm2vec",
			datasets.Request{Prompt: "what?", RequestID: "bench-1a-3", MultiModal: []json.RawMessage{rawJSON(`{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,AA=="}}`)}},
			BodyParams{Model: "m"},
			`{"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AA=="}}, {"type": "text", "text": "Represent the given image with the following question: what?"}]}], "truncate_prompt_tokens": -1}`},
		{"clip blanks the text when media is attached", "openai-embeddings-clip",
			datasets.Request{Prompt: "ignored", MultiModal: []json.RawMessage{rawJSON(`{"type":"image_url","image_url":{"url":"u"}}`)}},
			BodyParams{Model: "m"},
			`{"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": ""}, {"type": "image_url", "image_url": {"url": "u"}}]}], "truncate_prompt_tokens": -1}`},
		{"infinity clip sends the media URL", "infinity-embeddings-clip",
			datasets.Request{Prompt: "ignored", MultiModal: []json.RawMessage{rawJSON(`{"type":"image_url","image_url":{"url":"http://x/cat.png"}}`)}},
			BodyParams{Model: "m"},
			`{"model": "m", "input": "http://x/cat.png", "modality": "image"}`},
		{"pooling", "vllm-pooling",
			datasets.Request{Prompt: "text"},
			BodyParams{Model: "m", IgnoreEOS: true},
			`{"model": "m", "truncate_prompt_tokens": -1, "input": "text", "ignore_eos": true}`},
		{"rerank ignores ignore_eos and the extra body", "vllm-rerank",
			datasets.Request{PromptList: []string{"q", "d1", "d2"}},
			BodyParams{Model: "m", IgnoreEOS: true, ExtraBody: obj("temperature", "0.5")},
			`{"model": "m", "query": "q", "documents": ["d1", "d2"], "truncate_prompt_tokens": -1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BuildRequestBody(tt.backend, &tt.req, tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("body\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestBuildRequestBodyErrors(t *testing.T) {
	tests := []struct {
		backend string
		req     datasets.Request
		want    string
	}{
		{"openai-audio", datasets.Request{Prompt: "x"}, "multipart/form-data"},
		{"vllm-rerank", datasets.Request{PromptList: []string{"only query"}}, "needs a query and at least one document"},
		{"tgi", datasets.Request{Prompt: "x"}, `--backend "tgi": not a known backend`},
		{"openai", datasets.Request{Prompt: "x", Overrides: rawJSON(`[1]`)}, "request overrides must be a JSON object"},
		{"infinity-embeddings", datasets.Request{}, "needs exactly one media item"},
	}
	for _, tt := range tests {
		_, err := BuildRequestBody(tt.backend, &tt.req, BodyParams{Model: "m"})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to contain %q", tt.backend, err, tt.want)
		}
	}
}

func TestCheckEndpoint(t *testing.T) {
	tests := []struct {
		backend, url, want string
	}{
		{"vllm", "http://h:8000/v1/completions", ""},
		{"openai-chat", "http://h:8000/v1/chat/completions", ""},
		{"openai-chat", "http://h:8000/start_profile", ""},
		{"openai-chat", "http://h:8000/v1/completions", "OpenAI Chat Completions API URL must end with one of: {'chat/completions', 'profile'}."},
		{"openai-audio", "http://h/v1/audio", "OpenAI Audio API URL must end with one of: {'transcriptions', 'translations', 'profile'}."},
		{"openai-embeddings", "http://h/v1/completions", "OpenAI Embeddings API URL must end with one of: {'embeddings', 'profile'}."},
		{"infinity-embeddings", "http://h/x", "Infinity Embeddings API URL must end with one of: {'embeddings', 'profile'}."},
		{"vllm-pooling", "http://h/x", "vLLM Pooling API URL must end with one of: {'pooling', 'profile'}."},
		{"vllm-rerank", "http://h/x", "vLLM score API URL must end with one of: {'rerank', 'profile'}."},
		{"vllm", "http://h/v1/chat", "OpenAI Completions API URL must end with one of: {'completions', 'profile'}."},
	}
	for _, tt := range tests {
		err := CheckEndpoint(tt.backend, tt.url)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckEndpoint(%s, %s) = %v, want nil", tt.backend, tt.url, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("CheckEndpoint(%s, %s) = %v, want %q", tt.backend, tt.url, err, tt.want)
		}
	}
}

func TestRequestHeaders(t *testing.T) {
	tests := []struct {
		name    string
		backend string
		req     datasets.Request
		apiKey  string
		extra   []plan.Header
		want    []plan.Header
	}{
		{"completions leaves Content-Type to the client", "vllm", datasets.Request{RequestID: "bench-1-0"}, "", nil,
			[]plan.Header{{Key: "x-request-id", Value: "bench-1-0"}}},
		{"chat with key, user headers last but in place", "openai-chat", datasets.Request{RequestID: "r7"}, "sk-1",
			[]plan.Header{{Key: "X-Team", Value: "a"}, {Key: "Authorization", Value: "Bearer user"}, {Key: "x-request-id", Value: "mine"}},
			[]plan.Header{{Key: "Content-Type", Value: "application/json"}, {Key: "Authorization", Value: "Bearer user"}, {Key: "X-Team", Value: "a"}, {Key: "x-request-id", Value: "r7"}}},
		{"no id, no key", "openai-embeddings", datasets.Request{}, "", nil,
			[]plan.Header{{Key: "Content-Type", Value: "application/json"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RequestHeaders(tt.backend, &tt.req, tt.apiKey, tt.extra)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("headers %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("headers %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestNumInputSequences(t *testing.T) {
	if n := NumInputSequences("vllm-rerank", &datasets.Request{PromptList: []string{"q", "a", "b"}}); n != 2 {
		t.Errorf("rerank: %d, want 2", n)
	}
	if n := NumInputSequences("openai-embeddings", &datasets.Request{PromptList: []string{"a", "b", "c"}}); n != 3 {
		t.Errorf("batch: %d, want 3", n)
	}
	if n := NumInputSequences("openai-embeddings", &datasets.Request{Prompt: "a"}); n != 1 {
		t.Errorf("single: %d, want 1", n)
	}
	// The embeddings-chat family posts one message list and leaves
	// Python's default of 1, whatever the prompt.
	for _, b := range []string{"openai-embeddings-chat", "openai-embeddings-clip", "openai-embeddings-vlm2vec"} {
		if n := NumInputSequences(b, &datasets.Request{PromptList: []string{"a", "b", "c"}}); n != 1 {
			t.Errorf("%s over a list of 3: %d, want 1", b, n)
		}
	}
	if n := NumInputSequences("infinity-embeddings", &datasets.Request{PromptList: []string{"a", "b"}}); n != 2 {
		t.Errorf("infinity batch: %d, want 2", n)
	}
}

func TestPoolingUsage(t *testing.T) {
	tests := []struct {
		backend string
		extra   plan.JSONObject
		over    string // request overrides
		want    sse.PoolingUsage
	}{
		{"openai-embeddings", plan.JSONObject{}, "", sse.UsageInBody},
		{"openai-embeddings", obj("encoding_format", `"float"`), "", sse.UsageInBody},
		{"openai-embeddings", obj("encoding_format", `"base64"`), "", sse.UsageInBody},
		{"openai-embeddings", obj("encoding_format", `"bytes"`), "", sse.UsageInMetadata},
		{"openai-embeddings-chat", obj("encoding_format", `"bytes_only"`), "", sse.UsageFromRequest},
		{"vllm-pooling", obj("encoding_format", `"bytes"`), "", sse.UsageInMetadata},
		{"infinity-embeddings", obj("encoding_format", `"bytes_only"`), "", sse.UsageFromRequest},
		{"openai-embeddings", obj("encoding_format", `"bytes"`), `{"encoding_format": "float"}`, sse.UsageInBody},
		{"openai-embeddings", obj("encoding_format", `["bytes"]`), "", sse.UsageInBody},
		{"openai-embeddings", obj("encoding_format", `"BYTES"`), "", sse.UsageInBody},
		// Rerank posts no extra body; streams have no pooling answer.
		{"vllm-rerank", obj("encoding_format", `"bytes"`), "", sse.UsageInBody},
		{"openai", obj("encoding_format", `"bytes"`), "", sse.UsageInBody},
	}
	for _, tt := range tests {
		req := &datasets.Request{Prompt: "a", PromptLen: 3}
		if tt.over != "" {
			req.Overrides = json.RawMessage(tt.over)
		}
		got, err := PoolingUsage(tt.backend, req, BodyParams{ExtraBody: tt.extra})
		if err != nil || got != tt.want {
			t.Errorf("%s with %s (overrides %q): %v, %v; want %v", tt.backend, tt.extra.EncodePy(), tt.over, got, err, tt.want)
		}
	}
}

func BenchmarkBuildRequestBodyCompletions(b *testing.B) {
	req := &datasets.Request{Prompt: strings.Repeat("The quick brown fox jumps over the lazy dog. ", 200), ExpectedOutputLen: 128, RequestID: "bench-0"}
	p := BodyParams{Model: "meta-llama/Llama-3.1-8B-Instruct", IgnoreEOS: true, ExtraBody: obj("temperature", "0.0")}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BuildRequestBody("vllm", req, p); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPerTokenITLRequestBody(t *testing.T) {
	req := &datasets.Request{Prompt: "hi", PromptLen: 1, ExpectedOutputLen: 5}
	for _, backend := range []string{"openai", "openai-chat"} {
		for _, on := range []bool{false, true} {
			body, err := BuildRequestBody(backend, req, BodyParams{Model: "m", ContinuousUsage: on})
			if err != nil {
				t.Fatal(err)
			}
			want := `"stream_options": {"include_usage": true}`
			if on {
				want = `"stream_options": {"include_usage": true, "continuous_usage_stats": true}`
			}
			if !bytes.Contains(body, []byte(want)) {
				t.Errorf("%s, continuous %v: body %s lacks %s", backend, on, body, want)
			}
		}
	}
	if _, err := parseArgs([]string{"--backend", "openai-embeddings", "--endpoint", "/v1/embeddings", "--per-token-itl"}, noEnv); err == nil ||
		!strings.Contains(err.Error(), "argument --per-token-itl: backend openai-embeddings returns one response") {
		t.Errorf("--per-token-itl with a pooling backend: %v", err)
	}
}
