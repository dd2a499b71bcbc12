package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/metrics"
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

func TestReasoningBlockAndSidecar(t *testing.T) {
	results := []metrics.RequestResult{
		{Index: 0, Success: true, TTFTNs: 10e6, Reasoning: metrics.Reasoning{FirstAnswerNs: 50e6, ReasoningChunks: 4, ReasoningTokens: -1, FirstToolCallNs: 30e6, ToolCallChunks: 2, ToolCalls: 1}},
		{Index: 1, Success: true, TTFTNs: 20e6, Reasoning: metrics.Reasoning{FirstAnswerNs: 80e6, ReasoningChunks: 6, ReasoningTokens: -1, FirstToolCallNs: -1}},
		{Index: 2, Error: "x", Reasoning: metrics.Reasoning{FirstAnswerNs: -1, ReasoningChunks: 9, ReasoningTokens: -1, FirstToolCallNs: -1}},
	}
	st := metrics.ComputeReasoning(results, []float64{99})
	var out bytes.Buffer
	if err := WriteReasoning(&out, st); err != nil {
		t.Fatal(err)
	}
	block := out.String()
	for _, line := range []string{
		"With reasoning:                          2         \n",
		"Tool calls opened:                       1         \n",
		"Median TTFAT (ms):                       65.00     \n",
		"Mean reasoning time (ms):                50.00     \n",
		"Max reasoning chunks:                    6.00      \n",
		"Mean TTFTC (ms):                         30.00     \n",
	} {
		if !strings.Contains(block, line) {
			t.Errorf("block lacks %q:\n%s", line, block)
		}
	}
	sc := sidecarReasoning(results, st, true)
	if sc.ReasoningSource != "chunks" || len(sc.PerRequest) != 2 || sc.PerRequest[1].FirstAnswerNs != 80e6 || sc.ReasoningPerRequest.Mean != 5 {
		t.Fatalf("sidecar %+v", sc)
	}
	out.Reset()
	if err := WriteReasoning(&out, nil); err != nil || !strings.Contains(out.String(), "No request streamed reasoning or tool calls.") {
		t.Fatalf("empty block: %q, %v", out.String(), err)
	}
}
