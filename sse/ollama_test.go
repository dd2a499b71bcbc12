package sse

import "testing"

// Ollama v0.17.4's completions stream, asked for include_usage: every token
// chunk carries a usage of zeros, and the counts come in a last chunk with
// an empty choices list. The count is the last chunk's, never the zeros.
func TestOllamaCompletionsZeroUsageUntilTheLast(t *testing.T) {
	stream := []string{
		`{"id":"cmpl-1","object":"text_completion","created":1,"choices":[{"text":"Hi","index":0,"finish_reason":null}],"model":"tiny:latest","system_fingerprint":"fp_ollama","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"choices":[{"text":" there","index":0,"finish_reason":"length"}],"model":"tiny:latest","system_fingerprint":"fp_ollama","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
		`{"id":"cmpl-1","object":"text_completion","created":1,"choices":[],"model":"tiny:latest","system_fingerprint":"fp_ollama","usage":{"prompt_tokens":128,"completion_tokens":16,"total_tokens":144}}`,
		`[DONE]`,
	}
	d := NewDecoder(Completions)
	var tokens int
	completion, prompt := int64(-1), int64(-1)
	for i, data := range stream {
		var c Chunk
		if err := d.Decode([]byte(data), &c); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if c.Token {
			tokens++
			if c.HasUsage {
				t.Errorf("chunk %d: a token chunk's zero usage was read as the count", i)
			}
		}
		if c.HasUsage {
			completion, prompt = c.CompletionTokens, c.PromptTokens
		}
	}
	if tokens != 2 || completion != 16 || prompt != 128 {
		t.Errorf("tokens %d, completion_tokens %d, prompt_tokens %d; want 2, 16, 128", tokens, completion, prompt)
	}
}
