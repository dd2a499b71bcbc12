package sse

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// oracleSeeds are chunks that probe where the one-pass scan and the former
// two-pass path could part: unescaping (surrogates paired, lone, mismatched),
// repeated and escaped keys, the nesting limit, numbers at the edges of
// fastfloat, and the error objects whose JSON text becomes the message.
var oracleSeeds = []string{
	`{"choices":[{"text":"\ud83d\ude00\ud800\u0041\udc00x\ud800\\u0041\uDBFF\uDFFF"}]}`,
	`{"choices":[{"text":"\ud800"}]}`, `{"choices":[{"text":"\udc00\ud800"}]}`, `{"choices":[{"text":"\u0000\/\b"}]}`,
	`{"choices":[{"delta":{"content":"a","content":null}}]}`, `{"choices":[{"delta":{"content":"a"},"delta":{}}]}`,
	`{"choices":[{"delta":{"content":"a"}},{"delta":5}]}`, `{"choices":[[],{"text":"a"}]}`,
	`{"choic\u0065s":[{"t\u0065xt":"k","d\u0065lta":{"c\u006fntent":"c"}}]}`, `{"\ud800":1,"choices\ud800":[1]}`,
	`{"choices":[{"text":"x"}],"choices":{"a":1}}`, `{"choices":{},"usage":{"prompt_tokens":1e400,"completion_tokens":-0.5}}`,
	`{"choices":"","usage":{"prompt_tokens":9223372036854775808,"completion_tokens":-9223372036854775809}}`,
	`{"choices":0.0,"usage":true}`, `{"choices":-0e-5,"usage":{"completion_tokens":1E2}}`, `{"choices":1e999}`,
	`{"choices":[{"text":1e-999}]}`, `{"choices":[{"text":false}]}`, `{"choices":[{"text":{}}]}`, `{"choices":[{"text":{"a":1}}]}`,
	`{"usage":{"prompt_tokens":3},"usage":{"completion_tokens":4}}`, `{"usage":{"u\u0073age":1}}`,
	`{"choices":[{"text":"a"}],"usage":{"completion_tokens":1e400}}`, `{"choices":[{"text":"a"}],"usage":{"completion_t\u006fkens":-7,"x":1}}`,
	`{"usage":{"completion_tokens":2},"choices":[{"text":"a"}],"usage":[]}`, `{"choices":[{"text":"a"}],"usage":{"completion_tokens":9223372036854775808}}`,
	`{"error":{"code":500,"message":""}}`, `{"error":{"message":5,"type":"a\"b\u00e9\n"}}`,
	`{"error":{"m\u0065ssage":null,"k\"ey":"v\\w","n":[1, 2,{"x" : "\u0041"}]}}`,
	`{"error":"","object":"error"}`, `{"error":null,"object":"err\u006fr","message":"m"}`,
	`{"object":"error","message":"","ch\u006fices":[],"usage":{"prompt_tokens":"\u0031"},"x":"\t\u00e9"}`,
	`{"object":"error","choices":[],"usage":{},"message":{"a":"\u0022"}}`, `{"error":[],"object":"error","message":"legacy"}`,
	`{"error":{"message":"first"},"error":{"code":1}}`, `{"object":"error"}`, `{"error":{}}`,
	"{\"a\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\xa6\x8a\"}", "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":1}\xff", "\xc2\xa0{}\xc2\x85",
	"{\"a\":\"\xc3\"}", "{\"a\xe9\":1}", " \v{\"choices\":[{\"text\":\"t\"}]}\f", "[DONE]x", "[DONE]\xff",
	strings.Repeat("[", 299) + strings.Repeat("]", 299), strings.Repeat("[", 300) + strings.Repeat("]", 300),
	strings.Repeat("[", 299) + "1" + strings.Repeat("]", 299), strings.Repeat("[", 300) + "1" + strings.Repeat("]", 300),
	`{"a":` + strings.Repeat("[", 298) + strings.Repeat("]", 298) + `}`, `{"a":` + strings.Repeat("[", 299) + strings.Repeat("]", 299) + `}`,
	`{"a":` + strings.Repeat(`{"a":`, 298) + "1" + strings.Repeat("}", 299), `{"a":` + strings.Repeat(`{"a":`, 299) + "1" + strings.Repeat("}", 300),
}

// FuzzDecoderOracle checks that the Decoder decides every chunk as the
// former two-pass path (oracleDecoder) does: the same error, or the same
// Chunk, down to the bytes of Text and ErrMessage and whether they are nil;
// and that what it accepts encoding/json accepts. Seeds: the decoder table
// cases, the strict-JSON table, oracleSeeds, and every event of the golden
// streams in testdata (both the files and the streams as rendered).
func FuzzDecoderOracle(f *testing.F) {
	for _, tc := range decoderCases {
		f.Add([]byte(tc.data), uint8(tc.kind))
	}
	for _, doc := range strictJSONDocs {
		f.Add([]byte(doc), uint8(Completions))
	}
	for i, s := range oracleSeeds {
		f.Add([]byte(s), uint8(i%3))
	}
	streams := map[Kind][][]byte{
		Completions: {vllmCompletionsStream(goldenTokens)},
		Chat:        {vllmChatStream(goldenTokens)},
	}
	for kind, name := range map[Kind]string{Completions: "vllm-completions.sse", Chat: "vllm-chat.sse"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		streams[kind] = append(streams[kind], b)
	}
	for kind, ss := range streams {
		for _, s := range ss {
			for _, ev := range bytes.Split(s, []byte("\n\n")) {
				if data, ok := bytes.CutPrefix(ev, []byte("data: ")); ok {
					f.Add(data, uint8(kind))
				}
			}
		}
	}
	var decs, oracles [3]any
	for k := range 3 {
		decs[k] = NewDecoder(Kind(k))
		oracles[k] = &oracleDecoder{kind: Kind(k)}
	}
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		k := kind % 3
		d, o := decs[k].(*Decoder), oracles[k].(*oracleDecoder)
		var got, want Chunk
		err := d.Decode(data, &got)
		wantErr := o.Decode(data, &want)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%s %q: error %v, the former path: %v", Kind(k), data, err, wantErr)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformedChunk) || errorClass(err) != errorClass(wantErr) {
				t.Fatalf("%s %q: error %q, the former path: %q", Kind(k), data, err, wantErr)
			}
			return
		}
		if got.Done != want.Done || got.Token != want.Token || got.HasUsage != want.HasUsage ||
			got.PromptTokens != want.PromptTokens || got.CompletionTokens != want.CompletionTokens ||
			got.RunningCompletionTokens != want.RunningCompletionTokens ||
			!sameBytes(got.Text, want.Text) || !sameBytes(got.ErrMessage, want.ErrMessage) {
			t.Fatalf("%s %q:\n got %+v (Text %q, ErrMessage %q)\nwant %+v (Text %q, ErrMessage %q)",
				Kind(k), data, got, got.Text, got.ErrMessage, want, want.Text, want.ErrMessage)
		}
		if trimmed := bytes.TrimSpace(data); !got.Done && (!utf8.Valid(trimmed) || !json.Valid(trimmed)) {
			t.Fatalf("accepted %q, which is not strict JSON in UTF-8", data)
		}
	})
}

// errorClass is what an error decides: its message, except that the detail
// of an invalid JSON text may differ between the two paths.
func errorClass(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "invalid JSON"); i >= 0 {
		return msg[:i+len("invalid JSON")]
	}
	return msg
}

// sameBytes reports whether a and b hold the same bytes and are both nil or
// both not.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// The former path on the events of BenchmarkDecodeCompletions and
// BenchmarkDecodeChat, for a side-by-side comparison in one binary.
func benchmarkOracle(b *testing.B, kind Kind, render func([]string) []byte) {
	ev := benchEvent(render, 2)
	data := bytes.TrimSuffix(bytes.TrimPrefix(ev, []byte("data: ")), []byte("\n\n"))
	d := &oracleDecoder{kind: kind}
	var c Chunk
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Decode(data, &c); err != nil {
			b.Fatal(err)
		}
	}
	if !c.Token || len(c.Text) == 0 {
		b.Fatalf("decoded %+v, want a token with text", c)
	}
}

func BenchmarkOracleDecodeCompletions(b *testing.B) {
	benchmarkOracle(b, Completions, vllmCompletionsStream)
}

func BenchmarkOracleDecodeChat(b *testing.B) { benchmarkOracle(b, Chat, vllmChatStream) }
