package sse

import (
	"encoding/json"
	"strconv"
	"testing"
)

var runningCases = []struct {
	name string
	kind Kind
	data string
	want int64 // RunningCompletionTokens
}{
	{"vllm completions chunk", Completions,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the cat","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":15,"completion_tokens":3}}`, 3},
	{"vllm chat role chunk", Chat,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":12,"completion_tokens":0}}`, 0},
	{"vllm chat content", Chat,
		`{"choices":[{"index":0,"delta":{"content":" a b"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":14,"completion_tokens":2}}`, 2},
	{"usage before choices", Chat, `{"usage":{"completion_tokens":7},"choices":[{"delta":{"content":"x"}}]}`, 7},
	{"usage null (include_usage only)", Completions, `{"choices":[{"text":"x"}],"usage":null}`, -1},
	{"no usage", Completions, `{"choices":[{"text":"x"}]}`, -1},
	{"usage without completion_tokens", Completions, `{"choices":[{"text":"x"}],"usage":{"prompt_tokens":3}}`, -1},
	{"null count", Completions, `{"choices":[{"text":"x"}],"usage":{"completion_tokens":null}}`, -1},
	{"string count", Completions, `{"choices":[{"text":"x"}],"usage":{"completion_tokens":"4"}}`, -1},
	{"float count", Completions, `{"choices":[{"text":"x"}],"usage":{"completion_tokens":4.0}}`, 4},
	{"usage a list", Completions, `{"choices":[{"text":"x"}],"usage":[4]}`, -1},
	{"repeated usage last wins", Completions, `{"choices":[{"text":"x"}],"usage":{"completion_tokens":4},"usage":{"prompt_tokens":1}}`, -1},
	{"repeated count last wins", Completions, `{"choices":[{"text":"x"}],"usage":{"completion_tokens":4,"completion_tokens":6}}`, 6},
	{"escaped key", Chat, `{"choices":[{"delta":{"content":"x"}}],"usage":{"completion_t\u006fkens":5}}`, 5},
	{"not a token event", Chat, `{"choices":[],"usage":{"completion_tokens":9}}`, -1},
}

func TestRunningCompletionTokens(t *testing.T) {
	for _, tc := range runningCases {
		t.Run(tc.kind.String()+"/"+tc.name, func(t *testing.T) {
			var c Chunk
			if err := NewDecoder(tc.kind).Decode([]byte(tc.data), &c); err != nil {
				t.Fatal(err)
			}
			if c.RunningCompletionTokens != tc.want {
				t.Errorf("RunningCompletionTokens = %d, want %d", c.RunningCompletionTokens, tc.want)
			}
		})
	}
}

// TestRunningUsageLeavesPythonAlone: a token chunk's usage gives the
// running count and nothing else — no usage event, no final counts.
func TestRunningUsageLeavesPythonAlone(t *testing.T) {
	var c Chunk
	data := `{"choices":[{"text":"x"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`
	if err := NewDecoder(Completions).Decode([]byte(data), &c); err != nil {
		t.Fatal(err)
	}
	if !c.Token || c.HasUsage || c.PromptTokens != -1 || c.CompletionTokens != -1 || c.RunningCompletionTokens != 1 {
		t.Errorf("chunk %+v: want a token event with only the running count", c)
	}
	// The final usage chunk stays a usage event without a running count.
	if err := NewDecoder(Completions).Decode([]byte(`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5}}`), &c); err != nil {
		t.Fatal(err)
	}
	if c.Token || !c.HasUsage || c.CompletionTokens != 5 || c.RunningCompletionTokens != -1 {
		t.Errorf("final usage chunk %+v", c)
	}
}

// checkRunning compares the running count of a decoded chunk with
// encoding/json's reading m of the same chunk: the integer
// usage.completion_tokens of a token event, else -1. Counts that are not
// plain integers (exponents, fractions, beyond int64) are not compared.
func checkRunning(t *testing.T, c *Chunk, m map[string]any) {
	t.Helper()
	want := int64(-1)
	if usage, ok := m["usage"].(map[string]any); ok && c.Token {
		if n, ok := usage["completion_tokens"].(json.Number); ok {
			v, err := strconv.ParseInt(string(n), 10, 64)
			if err != nil {
				return
			}
			want = v
		}
	}
	if c.RunningCompletionTokens != want {
		t.Fatalf("RunningCompletionTokens = %d, encoding/json reads %d", c.RunningCompletionTokens, want)
	}
}

// BenchmarkDecodeRunningUsage: a vLLM completions token chunk as
// include_usage sends it ("usage":null) and as continuous_usage_stats
// does (a running usage object read into RunningCompletionTokens).
func BenchmarkDecodeRunningUsage(b *testing.B) {
	for _, bc := range []struct{ name, usage string }{
		{"null", `null`},
		{"running", `{"prompt_tokens":1024,"total_tokens":1090,"completion_tokens":66}`},
	} {
		chunk := []byte(`{"id":"cmpl-0a1b2c3d4e5f","object":"text_completion","created":1764403200,"model":"meta-llama/Llama-3.1-8B-Instruct",` +
			`"choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":` + bc.usage + `}`)
		b.Run(bc.name, func(b *testing.B) {
			d := NewDecoder(Completions)
			var c Chunk
			b.SetBytes(int64(len(chunk)))
			b.ReportAllocs()
			for b.Loop() {
				if err := d.Decode(chunk, &c); err != nil || !c.Token {
					b.Fatal(err)
				}
			}
		})
	}
}
