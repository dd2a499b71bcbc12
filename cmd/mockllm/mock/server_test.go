package mock

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestStreamingFields(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{ITL: time.Millisecond})
	tests := []struct {
		name         string
		path, body   string
		chat, usage  bool
		wantMaxToken int
	}{
		{"completions with usage", "/v1/completions",
			`{"model":"mock-llm","prompt":"hello the world","max_tokens":7,"stream":true,"stream_options":{"include_usage":true}}`, false, true, 7},
		{"completions without usage", "/v1/completions",
			`{"prompt":"hello","max_tokens":5,"stream":true}`, false, false, 5},
		{"chat with usage", "/v1/chat/completions",
			`{"model":"mock-llm","messages":[{"role":"user","content":"hi the"}],"max_completion_tokens":6,"stream":true,"stream_options":{"include_usage":true}}`, true, true, 6},
		{"chat max_tokens and text parts", "/v1/chat/completions",
			`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":3,"stream":true}`, true, false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, base+tt.path, tt.body)
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
				t.Errorf("content-type %q", ct)
			}
			if !reflect.DeepEqual(resp.TransferEncoding, []string{"chunked"}) {
				t.Errorf("transfer-encoding %v, want chunked", resp.TransferEncoding)
			}
			s := readSSE(t, resp.Body)
			if !s.done {
				t.Error("no data: [DONE]")
			}
			// vLLM's chat stream opens with a role-only chunk, which a
			// spec §b client counts as its first token event.
			wantEvents := tt.wantMaxToken
			if tt.chat {
				wantEvents++
			}
			if s.tokenEvents != wantEvents {
				t.Errorf("token events = %d, want %d", s.tokenEvents, wantEvents)
			}
			if got := len(NewMockTokenizer().Encode(nil, s.text, false)); got != tt.wantMaxToken {
				t.Errorf("text %q re-tokenises to %d tokens, want %d", s.text, got, tt.wantMaxToken)
			}
			if tt.usage {
				if s.usage == nil || s.usage["completion_tokens"] != float64(tt.wantMaxToken) {
					t.Fatalf("usage = %v, want completion_tokens %d", s.usage, tt.wantMaxToken)
				}
				if !reflect.DeepEqual(keysOf(s.usage), sorted("prompt_tokens", "total_tokens", "completion_tokens")) {
					t.Errorf("usage keys %v", keysOf(s.usage))
				}
				if s.usage["total_tokens"] != s.usage["prompt_tokens"].(float64)+float64(tt.wantMaxToken) {
					t.Errorf("usage total_tokens %v", s.usage)
				}
			} else if s.usage != nil {
				t.Errorf("usage chunk without include_usage: %v", s.usage)
			}
			id := s.chunks[0]["id"].(string)
			for i, c := range s.chunks {
				checkChunk(t, i, c, id, tt.chat, tt.usage, i == len(s.chunks)-1 && tt.usage, i == tt.wantMaxToken-1+btoi(tt.chat))
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkChunk checks one stream chunk's fields against vLLM's.
func checkChunk(t *testing.T, i int, c map[string]any, id string, chat, usage, usageChunk, lastToken bool) {
	t.Helper()
	object, prefix := "text_completion", "cmpl-"
	if chat {
		object, prefix = "chat.completion.chunk", "chatcmpl-"
	}
	if c["id"] != id || !strings.HasPrefix(id, prefix) || len(id) != len(prefix)+32 {
		t.Errorf("chunk %d id %v, want %q (%s + 32 hex)", i, c["id"], id, prefix)
	}
	if c["object"] != object || c["model"] != "mock-llm" {
		t.Errorf("chunk %d object %v model %v", i, c["object"], c["model"])
	}
	if _, ok := c["created"].(float64); !ok {
		t.Errorf("chunk %d created %v", i, c["created"])
	}
	choices := c["choices"].([]any)
	if usageChunk {
		if len(choices) != 0 || !reflect.DeepEqual(keysOf(c), sorted("id", "object", "created", "model", "choices", "usage")) {
			t.Errorf("usage chunk %v", c)
		}
		return
	}
	wantKeys := sorted("id", "object", "created", "model", "choices")
	if usage && !chat {
		wantKeys = sorted("id", "object", "created", "model", "choices", "usage")
		if v, ok := c["usage"]; !ok || v != nil {
			t.Errorf("chunk %d usage = %v, want null", i, v)
		}
	}
	if !reflect.DeepEqual(keysOf(c), wantKeys) {
		t.Errorf("chunk %d keys %v, want %v", i, keysOf(c), wantKeys)
	}
	choice := choices[0].(map[string]any)
	want := sorted("index", "text", "logprobs", "finish_reason", "stop_reason")
	if chat {
		want = sorted("index", "delta", "logprobs", "finish_reason")
		if lastToken {
			want = sorted("index", "delta", "logprobs", "finish_reason", "stop_reason")
		}
	}
	if !reflect.DeepEqual(keysOf(choice), want) {
		t.Errorf("chunk %d choice keys %v, want %v", i, keysOf(choice), want)
	}
	if chat && i == 0 {
		if d := choice["delta"].(map[string]any); d["role"] != "assistant" || d["content"] != "" || len(d) != 2 {
			t.Errorf("first chat chunk delta %v, want role-only", d)
		}
	}
	wantFinish := any(nil)
	if lastToken {
		wantFinish = "length"
	}
	if choice["finish_reason"] != wantFinish {
		t.Errorf("chunk %d finish_reason %v, want %v", i, choice["finish_reason"], wantFinish)
	}
}

// TestOneChunkPerEvent reads the raw bytes of a stream: every HTTP chunk
// carries exactly one SSE event, then the zero chunk ends the body.
func TestOneChunkPerEvent(t *testing.T) {
	t.Parallel()
	srv, _ := startServer(t, Config{})
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"prompt":"x","max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	raw, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok := strings.Cut(string(raw), "\r\n\r\n")
	if !ok || !strings.HasPrefix(head, "HTTP/1.1 200 OK\r\n") || !strings.Contains(head, "connection: close") {
		t.Fatalf("head %q", head)
	}
	var events []string
	for {
		sizeLine, after, ok := strings.Cut(rest, "\r\n")
		if !ok {
			t.Fatalf("no chunk-size line in %q", rest)
		}
		var size int
		if _, err := fmt.Sscanf(sizeLine, "%x", &size); err != nil {
			t.Fatalf("chunk size %q: %v", sizeLine, err)
		}
		if size == 0 {
			if after != "\r\n" {
				t.Fatalf("after the last chunk: %q", after)
			}
			break
		}
		payload := after[:size]
		if !strings.HasPrefix(payload, "data: ") || !strings.HasSuffix(payload, "\n\n") || strings.Count(payload, "\n\n") != 1 {
			t.Fatalf("chunk is not one SSE event: %q", payload)
		}
		events = append(events, payload)
		rest = after[size+2:]
	}
	if len(events) != 5 || events[4] != "data: [DONE]\n\n" {
		t.Fatalf("events %q, want 3 tokens, usage, [DONE]", events)
	}
}

func TestNonStreaming(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{})
	tests := []struct {
		name, path, body string
		object           string
		choices          int
		promptTokens     float64
		choiceKeys       []string
	}{
		{"completions", "/v1/completions", `{"prompt":"abc","max_tokens":4}`, "text_completion", 1, 3,
			sorted("index", "text", "logprobs", "finish_reason", "stop_reason")},
		{"completions token ids", "/v1/completions", `{"prompt":[1,2,3,4,5],"max_tokens":4,"stream":false}`, "text_completion", 1, 5,
			sorted("index", "text", "logprobs", "finish_reason", "stop_reason")},
		{"completions batch", "/v1/completions", `{"prompt":["ab","cde"],"max_tokens":4}`, "text_completion", 2, 5,
			sorted("index", "text", "logprobs", "finish_reason", "stop_reason")},
		{"chat", "/v1/chat/completions", `{"messages":[{"role":"system","content":"ab"},{"role":"user","content":"c"}],"max_completion_tokens":4}`, "chat.completion", 1, 3,
			sorted("index", "message", "logprobs", "finish_reason", "stop_reason")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, base+tt.path, tt.body)
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			m := readJSON(t, resp)
			if !reflect.DeepEqual(keysOf(m), sorted("id", "object", "created", "model", "choices", "usage")) || m["object"] != tt.object {
				t.Errorf("response keys %v object %v", keysOf(m), m["object"])
			}
			choices := m["choices"].([]any)
			if len(choices) != tt.choices {
				t.Fatalf("%d choices, want %d", len(choices), tt.choices)
			}
			for i, c := range choices {
				c := c.(map[string]any)
				if !reflect.DeepEqual(keysOf(c), tt.choiceKeys) || c["index"] != float64(i) || c["finish_reason"] != "length" {
					t.Errorf("choice %d: %v", i, c)
				}
				text, _ := c["text"].(string)
				if msg, ok := c["message"].(map[string]any); ok {
					text, _ = msg["content"].(string)
					if msg["role"] != "assistant" {
						t.Errorf("message role %v", msg["role"])
					}
				}
				if n := len(NewMockTokenizer().Encode(nil, text, false)); n != 4 {
					t.Errorf("choice %d text %q is %d tokens, want 4", i, text, n)
				}
			}
			u := m["usage"].(map[string]any)
			wantCompletion := float64(4 * tt.choices)
			if u["prompt_tokens"] != tt.promptTokens || u["completion_tokens"] != wantCompletion || u["total_tokens"] != tt.promptTokens+wantCompletion {
				t.Errorf("usage %v, want prompt %v completion %v", u, tt.promptTokens, wantCompletion)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{MaxModelLen: 64})
	tests := []struct {
		name, method, path, body string
		status                   int
		typ, msg                 string
	}{
		{"bad json", "POST", "/v1/completions", `{"prompt":`, 400, "BadRequestError", "malformed JSON"},
		{"not an object", "POST", "/v1/completions", `[1]`, 400, "BadRequestError", "want an object"},
		{"no prompt", "POST", "/v1/completions", `{"max_tokens":3}`, 400, "BadRequestError", "prompt: field required"},
		{"bad prompt type", "POST", "/v1/completions", `{"prompt":3}`, 400, "BadRequestError", "prompt: want"},
		{"max_tokens zero", "POST", "/v1/completions", `{"prompt":"a","max_tokens":0}`, 400, "BadRequestError", "at least 1"},
		{"max_tokens too large", "POST", "/v1/completions", `{"prompt":"abcd","max_tokens":61}`, 400, "BadRequestError", "maximum context length is 64 tokens"},
		{"prompt too long", "POST", "/v1/completions", `{"prompt":"` + strings.Repeat("x", 64) + `"}`, 400, "BadRequestError", "has 64 input tokens"},
		{"min above max", "POST", "/v1/completions", `{"prompt":"a","max_tokens":2,"min_tokens":3}`, 400, "BadRequestError", "min_tokens"},
		{"stream options without stream", "POST", "/v1/completions", `{"prompt":"a","stream_options":{"include_usage":true}}`, 400, "BadRequestError", "Stream options"},
		{"bad stream", "POST", "/v1/completions", `{"prompt":"a","stream":"yes"}`, 400, "BadRequestError", "stream"},
		{"no messages", "POST", "/v1/chat/completions", `{"messages":[]}`, 400, "BadRequestError", "messages"},
		{"message without role", "POST", "/v1/chat/completions", `{"messages":[{"content":"a"}]}`, 400, "BadRequestError", "role"},
		{"unknown model", "POST", "/v1/completions", `{"model":"gpt","prompt":"a"}`, 404, "NotFoundError", "The model `gpt` does not exist."},
		{"unknown path", "GET", "/v1/nothing", ``, 404, "NotFoundError", "Not Found"},
		{"wrong method", "GET", "/v1/completions", ``, 405, "MethodNotAllowed", "Method Not Allowed"},
		{"bad detokenize", "POST", "/detokenize", `{"tokens":[-1]}`, 400, "BadRequestError", "tokens[0]"},
		{"embeddings base64", "POST", "/v1/embeddings", `{"input":"a","encoding_format":"base64"}`, 400, "BadRequestError", "encoding_format"},
		{"rerank without documents", "POST", "/v1/rerank", `{"query":"a"}`, 400, "BadRequestError", "documents"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			m := readJSON(t, resp)
			e, _ := m["error"].(map[string]any)
			if !reflect.DeepEqual(keysOf(m), []string{"error"}) || !reflect.DeepEqual(keysOf(e), sorted("message", "type", "param", "code")) {
				t.Fatalf("error body %v", m)
			}
			if e["type"] != tt.typ || e["code"] != float64(tt.status) || e["param"] != nil || !strings.Contains(e["message"].(string), tt.msg) {
				t.Errorf("error %v, want type %s code %d message containing %q", e, tt.typ, tt.status, tt.msg)
			}
		})
	}
}

// TestMalformedRequest sends bytes that are not HTTP: the server answers
// 400 and closes the connection.
func TestMalformedRequest(t *testing.T) {
	t.Parallel()
	srv, _ := startServer(t, Config{})
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "HELLO\r\n\r\n")
	raw, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(raw), "HTTP/1.1 400 Bad Request\r\n") || !strings.Contains(string(raw), `"type":"BadRequestError"`) {
		t.Fatalf("response %q", raw)
	}
}

func TestInfoEndpoints(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{Model: "m/x", MaxModelLen: 2048, Version: "1.2.3"})
	get := func(path string) *http.Response {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	m := readJSON(t, get("/v1/models"))
	data := m["data"].([]any)
	card := data[0].(map[string]any)
	if m["object"] != "list" || len(data) != 1 ||
		!reflect.DeepEqual(keysOf(card), sorted("id", "object", "created", "owned_by", "root", "parent", "max_model_len", "permission")) ||
		card["id"] != "m/x" || card["root"] != "m/x" || card["object"] != "model" || card["owned_by"] != "vllm" ||
		card["parent"] != nil || card["max_model_len"] != float64(2048) {
		t.Errorf("/v1/models %v", m)
	}
	perm := card["permission"].([]any)[0].(map[string]any)
	if perm["object"] != "model_permission" || !strings.HasPrefix(perm["id"].(string), "modelperm-") {
		t.Errorf("permission %v", perm)
	}

	if v := readJSON(t, get("/version")); !reflect.DeepEqual(v, map[string]any{"version": "1.2.3"}) {
		t.Errorf("/version %v", v)
	}
	for _, path := range []string{"/health"} {
		resp := get(path)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) != 0 {
			t.Errorf("%s: %d %q", path, resp.StatusCode, b)
		}
	}
	for _, path := range []string{"/start_profile", "/stop_profile", "/reset_prefix_cache"} {
		resp := post(t, base+path, "")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) != 0 {
			t.Errorf("%s: %d %q", path, resp.StatusCode, b)
		}
	}
}

func TestTokenizeRoundTrip(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{MaxModelLen: 1000})
	for _, text := range []string{"", "the model of the stream", "héllo wörld ✓", " the\tthen  there"} {
		body := fmt.Sprintf(`{"prompt":%q,"return_token_strs":true}`, text)
		m := readJSON(t, post(t, base+"/tokenize", body))
		if !reflect.DeepEqual(keysOf(m), sorted("count", "max_model_len", "tokens", "token_strs")) || m["max_model_len"] != float64(1000) {
			t.Fatalf("/tokenize %v", m)
		}
		tokens := m["tokens"].([]any)
		if m["count"] != float64(len(tokens)) {
			t.Errorf("count %v, %d tokens", m["count"], len(tokens))
		}
		strs := m["token_strs"].([]any)
		joined := ""
		for _, s := range strs {
			joined += s.(string)
		}
		ids := make([]string, len(tokens))
		for i, id := range tokens {
			ids[i] = fmt.Sprint(id)
		}
		d := readJSON(t, post(t, base+"/detokenize", `{"tokens":[`+strings.Join(ids, ",")+`]}`))
		if d["prompt"] != text {
			t.Errorf("detokenize(tokenize(%q)) = %q", text, d["prompt"])
		}
		if !strings.Contains(text, "é") && joined != text {
			t.Errorf("token_strs join to %q, want %q", joined, text)
		}
	}
	m := readJSON(t, post(t, base+"/tokenize", `{"messages":[{"role":"user","content":"ab"},{"role":"user","content":[{"type":"text","text":"c"}]}]}`))
	if m["count"] != float64(3) {
		t.Errorf("/tokenize messages: %v", m)
	}
}

func TestPooledEndpoints(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{EmbeddingDim: 8})
	t.Run("embeddings", func(t *testing.T) {
		m := readJSON(t, post(t, base+"/v1/embeddings", `{"model":"mock-llm","input":["ab","c"],"truncate_prompt_tokens":-1}`))
		if !reflect.DeepEqual(keysOf(m), sorted("id", "object", "created", "model", "data", "usage")) || m["object"] != "list" || !strings.HasPrefix(m["id"].(string), "embd-") {
			t.Fatalf("%v", m)
		}
		data := m["data"].([]any)
		for i, d := range data {
			d := d.(map[string]any)
			if !reflect.DeepEqual(keysOf(d), sorted("index", "object", "embedding")) || d["object"] != "embedding" || d["index"] != float64(i) || len(d["embedding"].([]any)) != 8 {
				t.Errorf("data[%d] %v", i, d)
			}
		}
		u := m["usage"].(map[string]any)
		if len(data) != 2 || u["prompt_tokens"] != float64(3) || u["total_tokens"] != float64(3) || u["completion_tokens"] != float64(0) {
			t.Errorf("usage %v", u)
		}
	})
	t.Run("pooling", func(t *testing.T) {
		m := readJSON(t, post(t, base+"/pooling", `{"model":"mock-llm","input":"abc","truncate_prompt_tokens":-1}`))
		data := m["data"].([]any)
		d := data[0].(map[string]any)
		if !strings.HasPrefix(m["id"].(string), "pool-") || d["object"] != "pooling" || !reflect.DeepEqual(keysOf(d), sorted("index", "object", "data")) {
			t.Errorf("%v", m)
		}
		if u := m["usage"].(map[string]any); u["prompt_tokens"] != float64(3) {
			t.Errorf("usage %v", u)
		}
	})
	t.Run("rerank", func(t *testing.T) {
		m := readJSON(t, post(t, base+"/v1/rerank", `{"model":"mock-llm","query":"ab","documents":["c","de","f"],"truncate_prompt_tokens":-1}`))
		if !reflect.DeepEqual(keysOf(m), sorted("id", "model", "usage", "results")) || !strings.HasPrefix(m["id"].(string), "rerank-") {
			t.Fatalf("%v", m)
		}
		results := m["results"].([]any)
		prev := 2.0
		seen := map[float64]bool{}
		for _, r := range results {
			r := r.(map[string]any)
			score := r["relevance_score"].(float64)
			if !reflect.DeepEqual(keysOf(r), sorted("index", "document", "relevance_score")) || score > prev {
				t.Errorf("result %v (previous score %v)", r, prev)
			}
			prev = score
			seen[r["index"].(float64)] = true
		}
		if len(seen) != 3 {
			t.Errorf("results %v", results)
		}
		if u := m["usage"].(map[string]any); u["prompt_tokens"] != float64(10) || u["total_tokens"] != float64(10) {
			t.Errorf("usage %v, want 3 × 2 query tokens + 4 document tokens", u)
		}
	})
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{Model: "m", SpecDecodeTokens: 2, SpecDecodeAcceptance: 0.5})
	readSSE(t, post(t, base+"/v1/completions", `{"prompt":"abcd","max_tokens":10,"stream":true}`).Body)
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		"# TYPE vllm:num_requests_running gauge\n",
		`vllm:num_requests_running{engine="0",model_name="m"} 0.0` + "\n",
		`vllm:num_requests_waiting{engine="0",model_name="m"} 0.0` + "\n",
		"# TYPE vllm:prompt_tokens_total counter\n",
		`vllm:prompt_tokens_total{engine="0",model_name="m"} 4.0` + "\n",
		`vllm:generation_tokens_total{engine="0",model_name="m"} 10.0` + "\n",
		`vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0` + "\n",
		`vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 20.0` + "\n",
		`vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 7.0` + "\n",
		`vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 5.0` + "\n",
		`vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 2.0` + "\n",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, b)
		}
	}
}

// TestKeepAlive sends many requests, one at a time, and a chunked request
// body through one client; the server must see one connection.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	srv, base := startServer(t, Config{})
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	for i := 0; i < 10; i++ {
		var body io.Reader = strings.NewReader(`{"prompt":"ab","max_tokens":2,"stream":true}`)
		if i%2 == 1 {
			// A reader of unknown length makes net/http send a chunked body.
			body = io.MultiReader(strings.NewReader(`{"prompt":"ab",`), strings.NewReader(`"max_tokens":2,"stream":true}`))
		}
		resp, err := client.Post(base+"/v1/completions", "application/json", body)
		if err != nil {
			t.Fatal(err)
		}
		if s := readSSE(t, resp.Body); s.tokenEvents != 2 {
			t.Fatalf("request %d: %d token events", i, s.tokenEvents)
		}
		resp.Body.Close()
		if got := srv.Stats().Connections; got != 1 {
			t.Fatalf("after request %d the server has %d connections, want 1", i, got)
		}
	}
}

// TestPipelined sends two requests in one write; the second is answered
// after the first stream ends.
func TestPipelined(t *testing.T) {
	t.Parallel()
	srv, _ := startServer(t, Config{ITL: time.Millisecond})
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"prompt":"a","max_tokens":3,"stream":true}`
	req := fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	io.WriteString(c, req+"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")
	raw, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	first, second, ok := strings.Cut(string(raw), "0\r\n\r\nHTTP/1.1 200 OK\r\n")
	if !ok || strings.Count(first, "text_completion") != 3 || !strings.Contains(second, "Content-Length: 0") {
		t.Fatalf("responses %q", raw)
	}
}

// TestExpectContinue: a client that waits for "100 Continue" before
// sending its body gets it.
func TestExpectContinue(t *testing.T) {
	t.Parallel()
	srv, _ := startServer(t, Config{})
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"prompt":"a","max_tokens":1}`
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nExpect: 100-continue\r\nConnection: close\r\nContent-Length: %d\r\n\r\n", len(body))
	buf := make([]byte, 64)
	n, err := io.ReadAtLeast(c, buf, len(continueResponse))
	if err != nil || string(buf[:n]) != string(continueResponse) {
		t.Fatalf("got %q, %v; want 100 Continue", buf[:n], err)
	}
	io.WriteString(c, body)
	raw, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(raw), "HTTP/1.1 200 OK\r\n") {
		t.Fatalf("response %q", raw)
	}
}
