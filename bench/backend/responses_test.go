package backend

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/datasets"
)

func TestResponsesBody(t *testing.T) {
	p := BodyParams{Model: "m", IgnoreEOS: true}
	got, err := BuildRequestBody("openai-responses", &datasets.Request{Prompt: "hé", ExpectedOutputLen: 7}, p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model": "m", "input": "h\u00e9", "max_output_tokens": 7, "stream": true, "ignore_eos": true}`
	if string(got) != want {
		t.Fatalf("body\n%s\nwant\n%s", got, want)
	}
	msgs := datasets.Request{ChatMessages: []byte(`[{"role":"user","content":"hi"}]`), ExpectedOutputLen: 3}
	if got, err = BuildRequestBody("openai-responses", &msgs, BodyParams{Model: "m"}); err != nil ||
		!strings.Contains(string(got), `"input": [{"role": "user", "content": "hi"}]`) {
		t.Fatalf("chat messages: %s, %v", got, err)
	}
	for _, req := range []datasets.Request{{PromptIDs: []int32{1, 2}, RequestID: "r1"}, {Prompt: "x", MultiModal: []json.RawMessage{json.RawMessage(`{}`)}, RequestID: "r2"}} {
		if _, err := BuildRequestBody("openai-responses", &req, p); err == nil || !strings.Contains(err.Error(), "--backend openai-responses: request \""+req.RequestID) {
			t.Errorf("request %s: err %v, want one naming the backend and the request", req.RequestID, err)
		}
	}
	if err := CheckEndpoint("openai-responses", "http://h/v1/responses"); err != nil {
		t.Fatal(err)
	}
	if err := CheckEndpoint("openai-responses", "http://h/v1/completions"); err == nil ||
		err.Error() != "OpenAI Responses API URL must end with one of: {'responses', 'profile'}." {
		t.Fatalf("endpoint check: %v", err)
	}
}
