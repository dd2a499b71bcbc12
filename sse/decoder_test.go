package sse

import (
	"errors"
	"strings"
	"testing"
)

// want describes a decoded Chunk; text "<nil>" means Text must be nil.
type wantChunk struct {
	done, token, usage bool
	text               string
	prompt, completion int64
	errMessage         string // "" means ErrMessage must be nil
}

const nilText = "<nil>"

func token(text string) wantChunk {
	return wantChunk{token: true, text: text, prompt: -1, completion: -1}
}

func noToken() wantChunk { return wantChunk{text: nilText, prompt: -1, completion: -1} }

func usage(prompt, completion int64) wantChunk {
	return wantChunk{usage: true, text: nilText, prompt: prompt, completion: completion}
}

func errChunk(msg string) wantChunk {
	w := noToken()
	w.errMessage = msg
	return w
}

var decoderCases = []struct {
	name    string
	kind    Kind
	data    string
	want    wantChunk
	wantErr string // substring of the error; "" means no error
}{
	// End of stream.
	{"done", Completions, `[DONE]`, wantChunk{done: true, text: nilText, prompt: -1, completion: -1}, ""},
	{"done with spaces", Chat, " [DONE] \r", wantChunk{done: true, text: nilText, prompt: -1, completion: -1}, ""},

	// Completions token events.
	{"completions text", Completions,
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`,
		token(" the"), ""},
	{"completions escapes unescaped", Completions, `{"choices":[{"text":"a\n\"b\"\u00e9\ud83d\ude00"}]}`, token("a\n\"b\"é😀"), ""},
	{"completions null text", Completions, `{"choices":[{"text":null}]}`, token(nilText), ""},
	{"completions missing text", Completions, `{"choices":[{"index":0}]}`, token(nilText), ""},
	{"completions empty text", Completions, `{"choices":[{"text":""}]}`, token(""), ""},
	{"completions falsy number text", Completions, `{"choices":[{"text":0}]}`, token(nilText), ""},
	{"completions falsy list text", Completions, `{"choices":[{"text":[]}]}`, token(nilText), ""},
	{"completions usage inside token chunk ignored", Completions,
		`{"choices":[{"text":"x"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`, token("x"), ""},
	{"completions ignores delta", Completions, `{"choices":[{"delta":{"content":"x"}}]}`, token(nilText), ""},
	{"second choice ignored", Completions, `{"choices":[{"text":"a"},{"text":"b"}]}`, token("a"), ""},

	// Chat token events.
	{"chat role chunk", Chat,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
		token(""), ""},
	{"chat content", Chat, `{"choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}`, token(" the"), ""},
	{"chat reasoning_content counts", Chat, `{"choices":[{"delta":{"reasoning_content":"hmm"}}]}`, token(nilText), ""},
	{"chat reasoning counts", Chat, `{"choices":[{"delta":{"reasoning":"hmm","content":null}}]}`, token(nilText), ""},
	{"chat tool call chunk", Chat, `{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}`, token(nilText), ""},
	{"chat empty delta", Chat, `{"choices":[{"delta":{},"finish_reason":"stop"}]}`, token(nilText), ""},

	// Usage.
	{"final usage chunk", Chat,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8}}`,
		usage(12, 8), ""},
	{"audio usage gives only completion_tokens", Audio,
		`{"choices":[],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8}}`, usage(-1, 8), ""},
	{"audio content", Audio, `{"choices":[{"delta":{"content":" hello"}}]}`, token(" hello"), ""},
	{"usage without choices", Completions, `{"usage":{"completion_tokens":8}}`, usage(-1, 8), ""},
	{"usage null fields", Completions, `{"usage":{"prompt_tokens":null,"completion_tokens":null}}`, usage(-1, -1), ""},
	{"usage float count", Completions, `{"usage":{"prompt_tokens":5.0,"completion_tokens":7}}`, usage(5, 7), ""},
	{"usage string count", Completions, `{"usage":{"prompt_tokens":"5","completion_tokens":7}}`, usage(-1, 7), ""},
	{"empty usage is falsy", Completions, `{"choices":[],"usage":{}}`, noToken(), ""},
	{"null usage", Completions, `{"choices":[],"usage":null}`, noToken(), ""},
	{"null choices", Completions, `{"choices":null,"usage":{"completion_tokens":2}}`, usage(-1, 2), ""},
	{"falsy choices", Completions, `{"choices":0}`, noToken(), ""},
	{"empty object", Completions, `{}`, noToken(), ""},

	// Repeated keys: the last wins, as in a Python dict.
	{"repeated choices last wins", Completions, `{"choices":[{"text":"a"}],"choices":[]}`, noToken(), ""},
	{"repeated text last wins", Completions, `{"choices":[{"text":"a","text":"b"}]}`, token("b"), ""},
	{"escaped key", Completions, `{"ch\u006fices":[{"text":"k"}]}`, token("k"), ""},

	// In-stream errors.
	{"vllm error object", Completions,
		`{"error":{"object":"error","message":"Internal server error","type":"InternalServerError","param":null,"code":500}}`,
		errChunk("Internal server error"), ""},
	{"legacy error object", Chat, `{"object":"error","message":"bad","type":"BadRequestError","code":400}`, errChunk("bad"), ""},
	{"error string", Chat, `{"error":"boom"}`, errChunk("boom"), ""},
	{"error without message", Chat, `{"error":{"code":500}}`, errChunk(`{"code":500}`), ""},
	{"error null", Chat, `{"error":null}`, noToken(), ""},
	{"object not error", Chat, `{"object":"chat.completion.chunk","message":"hi"}`, noToken(), ""},

	// Where Python raises.
	{"empty data", Completions, ``, wantChunk{}, "invalid JSON"},
	{"not json", Completions, `data: {"a":1}`, wantChunk{}, "invalid JSON"},
	{"truncated json", Completions, `{"choices":[{"text":"a"`, wantChunk{}, "invalid JSON"},
	{"trailing garbage", Completions, `{} {}`, wantChunk{}, "invalid JSON"},
	{"control char in string", Completions, "{\"choices\":[{\"text\":\"a\x01\"}]}", wantChunk{}, "invalid JSON"},
	{"control char before an escape", Completions, "{\"choices\":[{\"text\":\"a\x13\\n\"}]}", wantChunk{}, "control character 0x13"},
	{"control char in a key before an escape", Completions, "{\"a\x01\\t\":1}", wantChunk{}, "control character 0x01"},
	{"tab outside strings is whitespace", Completions, "{\t\"choices\":\r\n[{\"text\":\"\\\"\\t\"}]}", token("\"\t"), ""},
	{"bad escape", Completions, `{"choices":[{"text":"\q"}]}`, wantChunk{}, "invalid JSON"},
	{"nan", Completions, `{"x":NaN}`, wantChunk{}, "invalid JSON"},
	{"invalid utf8", Completions, "{\"choices\":[{\"text\":\"\xff\"}]}", wantChunk{}, "UTF-8"},
	{"array", Completions, `[1]`, wantChunk{}, "not an object"},
	{"string", Completions, `"x"`, wantChunk{}, "not an object"},
	{"null", Completions, `null`, wantChunk{}, "not an object"},
	{"choices object", Completions, `{"choices":{"0":{"text":"a"}}}`, wantChunk{}, `"choices" is a JSON object, not a list`},
	{"choices string", Completions, `{"choices":"abc"}`, wantChunk{}, `"choices" is a JSON string, not a list`},
	{"choices[0] not object", Completions, `{"choices":[1]}`, wantChunk{}, "choices[0] is a JSON number"},
	{"chat without delta", Chat, `{"choices":[{"index":0,"text":"x"}]}`, wantChunk{}, `no "delta"`},
	{"audio without delta", Audio, `{"choices":[{"text":"x"}]}`, wantChunk{}, `no "delta"`},
	{"chat null delta", Chat, `{"choices":[{"delta":null}]}`, wantChunk{}, "delta is a JSON null"},
	{"truthy non-string text", Completions, `{"choices":[{"text":5}]}`, wantChunk{}, "token text is a JSON number"},
	{"truthy non-string content", Chat, `{"choices":[{"delta":{"content":["a"]}}]}`, wantChunk{}, "token text is a JSON array"},
	{"usage not object", Completions, `{"usage":[1]}`, wantChunk{}, `"usage" is a JSON array`},
	{"too deep", Completions, strings.Repeat("[", 400) + strings.Repeat("]", 400), wantChunk{}, "invalid JSON"},
}

func TestDecode(t *testing.T) {
	for _, tc := range decoderCases {
		t.Run(tc.kind.String()+"/"+tc.name, func(t *testing.T) {
			d := NewDecoder(tc.kind)
			var c Chunk
			err := d.Decode([]byte(tc.data), &c)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrMalformedChunk) {
					t.Fatalf("Decode error = %v, want one wrapping ErrMalformedChunk containing %q", err, tc.wantErr)
				}
				if c.Token || c.Done || c.HasUsage {
					t.Fatalf("after an error the chunk still reads as an event: %+v", c)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			checkChunk(t, &c, tc.want)
		})
	}
}

func checkChunk(t *testing.T, c *Chunk, w wantChunk) {
	t.Helper()
	if c.Done != w.done || c.Token != w.token || c.HasUsage != w.usage {
		t.Errorf("Done, Token, HasUsage = %v, %v, %v; want %v, %v, %v", c.Done, c.Token, c.HasUsage, w.done, w.token, w.usage)
	}
	switch {
	case w.text == nilText && c.Text != nil:
		t.Errorf("Text = %q, want nil", c.Text)
	case w.text != nilText && string(c.Text) != w.text:
		t.Errorf("Text = %q, want %q", c.Text, w.text)
	}
	if c.PromptTokens != w.prompt || c.CompletionTokens != w.completion {
		t.Errorf("PromptTokens, CompletionTokens = %d, %d; want %d, %d", c.PromptTokens, c.CompletionTokens, w.prompt, w.completion)
	}
	switch {
	case w.errMessage == "" && c.ErrMessage != nil:
		t.Errorf("ErrMessage = %q, want nil", c.ErrMessage)
	case w.errMessage != "" && string(c.ErrMessage) != w.errMessage:
		t.Errorf("ErrMessage = %q, want %q", c.ErrMessage, w.errMessage)
	}
}

// TestDecodeReusesChunk: every field is reset, so a Chunk reused across
// events never leaks a previous event's values.
func TestDecodeReusesChunk(t *testing.T) {
	d := NewDecoder(Chat)
	var c Chunk
	for _, data := range []string{
		`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"error":"x"}`,
		`[DONE]`,
	} {
		if err := d.Decode([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Decode([]byte(`{"choices":[{"delta":{"content":"t"}}]}`), &c); err != nil {
		t.Fatal(err)
	}
	checkChunk(t, &c, token("t"))
}

func TestDecodeZeroAllocs(t *testing.T) {
	chunks := [][]byte{
		[]byte(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" caf\u00e9","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`),
		[]byte(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8}}`),
		// A running usage (continuous_usage_stats) inside a token chunk.
		[]byte(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" a b","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":15,"completion_tokens":3}}`),
		[]byte(`{"error":{"object":"error","code":500}}`),
		[]byte(`[DONE]`),
	}
	d := NewDecoder(Completions)
	var c Chunk
	decodeAll := func() {
		for _, b := range chunks {
			if err := d.Decode(b, &c); err != nil {
				t.Fatal(err)
			}
		}
	}
	decodeAll()
	if n := testing.AllocsPerRun(100, decodeAll); n != 0 {
		t.Fatalf("%v allocs per run after warm-up, want 0", n)
	}
}
