package sse

import (
	"strings"
	"testing"

	"github.com/valyala/fastjson"
)

func TestPoolingPromptTokens(t *testing.T) {
	tests := []struct {
		name        string
		usage       PoolingUsage
		answer      PoolingAnswer
		wantPrompt  int64
		wantFailure string
	}{
		{"body usage", UsageInBody, PoolingAnswer{Body: []byte(`{"usage":{"prompt_tokens":7}}`)}, 7, ""},
		{"body without usage", UsageInBody, PoolingAnswer{Body: []byte(`{}`)}, -1, ""},
		{"body prompt_tokens not a number", UsageInBody, PoolingAnswer{Body: []byte(`{"usage":{"prompt_tokens":"7"}}`)}, -1, ""},
		{"body not JSON", UsageInBody, PoolingAnswer{Body: []byte("\x00\x01")}, -1, "malformed JSON response body"},
		{"body a list", UsageInBody, PoolingAnswer{Body: []byte(`[1]`)}, -1, "'list' object has no attribute 'get'"},
		{"usage a string", UsageInBody, PoolingAnswer{Body: []byte(`{"usage":"x"}`)}, -1, "'str' object has no attribute 'get'"},
		{"usage a float", UsageInBody, PoolingAnswer{Body: []byte(`{"usage":1.5}`)}, -1, "'float' object has no attribute 'get'"},
		{"usage an int", UsageInBody, PoolingAnswer{Body: []byte(`{"usage":1}`)}, -1, "'int' object has no attribute 'get'"},
		{"usage a bool", UsageInBody, PoolingAnswer{Body: []byte(`{"usage":true}`)}, -1, "'bool' object has no attribute 'get'"},
		{"usage null", UsageInBody, PoolingAnswer{Body: []byte(`{"usage":null}`)}, -1, "'NoneType' object has no attribute 'get'"},
		{"last usage wins", UsageInBody, PoolingAnswer{Body: []byte(`{"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":2}}`)}, 2, ""},
		{"metadata usage", UsageInMetadata, PoolingAnswer{Metadata: []byte(`{"usage":{"prompt_tokens":5}}`), HasMetadata: true}, 5, ""},
		{"no metadata header", UsageInMetadata, PoolingAnswer{Body: []byte(`{"usage":{"prompt_tokens":5}}`)}, -1, MissingMetadataError},
		{"metadata not JSON", UsageInMetadata, PoolingAnswer{Metadata: []byte(`{usage`), HasMetadata: true}, -1, "malformed JSON in the metadata response header"},
		{"the request's own length", UsageFromRequest, PoolingAnswer{Body: []byte(`{"usage":{"prompt_tokens":5}}`)}, 9, ""},
	}
	var p fastjson.Parser
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prompt, failure := tt.answer.PromptTokens(&p, tt.usage, 9)
			if prompt != tt.wantPrompt || !strings.HasPrefix(failure, tt.wantFailure) || (tt.wantFailure == "") != (failure == "") {
				t.Errorf("PromptTokens = %d, %q; want %d, %q", prompt, failure, tt.wantPrompt, tt.wantFailure)
			}
		})
	}
}
