package sse

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite sse/testdata golden streams and fuzz seeds")

// goldenTokens are the token texts of the golden streams: word pieces with a
// leading space as BPE tokenizers emit them, plus the characters a JSON
// encoder must escape and multi-byte UTF-8.
var goldenTokens = []string{
	" The", " quick", " brown", " fox", "\n\n", "\"", "Jump", "ed", "\\", " caf", "é", " 🦊", "\t", ":", " data", ".",
}

const (
	goldenModel   = "meta-llama/Llama-3.1-8B-Instruct"
	goldenCreated = 1764403200
	goldenPrompt  = 27 // prompt_tokens the server reports
)

// vllmCompletionsStream renders a /v1/completions stream byte for byte as
// vLLM serves it with stream_options.include_usage: one chunk per token
// (model_dump_json with unset fields included, so "logprobs", "stop_reason"
// and "usage" appear as null), finish_reason on the last token, a usage-only
// chunk with an empty choices list, then [DONE].
func vllmCompletionsStream(tokens []string) []byte {
	const id = "cmpl-4f3c2a1b9e8d4c7fa6b5e4d3c2b1a090"
	var b []byte
	for i, tok := range tokens {
		finish := "null"
		if i == len(tokens)-1 {
			finish = `"length"`
		}
		chunk := fmt.Sprintf(`{"id":%q,"object":"text_completion","created":%d,"model":%q,"choices":[{"index":0,"text":%s,"logprobs":null,"finish_reason":%s,"stop_reason":null}],"usage":null}`,
			id, goldenCreated, goldenModel, pydanticString(tok), finish)
		b = AppendData(b, []byte(chunk))
	}
	n := len(tokens)
	chunk := fmt.Sprintf(`{"id":%q,"object":"text_completion","created":%d,"model":%q,"choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d,"prompt_tokens_details":null}}`,
		id, goldenCreated, goldenModel, goldenPrompt, goldenPrompt+n, n)
	b = AppendData(b, []byte(chunk))
	return AppendDone(b)
}

// vllmChatStream renders a /v1/chat/completions stream as vLLM serves it
// (model_dump_json with exclude_unset): a first chunk carrying the role and
// empty content, one chunk per token, finish_reason and stop_reason on the
// last, a usage chunk with an empty choices list, then [DONE].
func vllmChatStream(tokens []string) []byte {
	const id = "chatcmpl-8d7c6b5a4f3e4d2c9b1a0f9e8d7c6b5a"
	head := fmt.Sprintf(`{"id":%q,"object":"chat.completion.chunk","created":%d,"model":%q,`, id, goldenCreated, goldenModel)
	b := AppendData(nil, []byte(head+`"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`))
	for i, tok := range tokens {
		tail := `"finish_reason":null}]}`
		if i == len(tokens)-1 {
			tail = `"finish_reason":"length","stop_reason":null}]}`
		}
		b = AppendData(b, []byte(head+`"choices":[{"index":0,"delta":{"content":`+pydanticString(tok)+`},"logprobs":null,`+tail))
	}
	n := len(tokens)
	b = AppendData(b, []byte(head+fmt.Sprintf(`"choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}`, goldenPrompt, goldenPrompt+n, n)))
	return AppendDone(b)
}

// pydanticString encodes s as pydantic's JSON serializer does: UTF-8 kept
// as is, '"' and '\\' escaped, control characters as \n, \t, ... or \u00XX.
func pydanticString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

var goldenStreams = []struct {
	file   string
	kind   Kind
	render func([]string) []byte
	tokens int // token events Python counts
}{
	{"vllm-completions.sse", Completions, vllmCompletionsStream, len(goldenTokens)},
	// The role chunk is a token event too.
	{"vllm-chat.sse", Chat, vllmChatStream, len(goldenTokens) + 1},
}

// streamResult is what a request function makes of one stream.
type streamResult struct {
	tokens             int
	text               string
	usages             int
	prompt, completion int64
	done               bool
	err                error
}

// streamConsumer feeds events to a Decoder the way a shard does.
type streamConsumer struct {
	dec   *Decoder
	chunk Chunk
	res   streamResult
	text  []byte
}

func (s *streamConsumer) OnEvent(ev *Event) error {
	if err := s.dec.Decode(ev.Data, &s.chunk); err != nil {
		return err
	}
	switch c := &s.chunk; {
	case c.Done:
		s.res.done = true
	case c.Token:
		s.res.tokens++
		s.text = append(s.text, c.Text...)
	case c.HasUsage:
		s.res.usages++
		s.res.prompt, s.res.completion = c.PromptTokens, c.CompletionTokens
	}
	return nil
}

func consume(kind Kind, stream []byte, cuts []int) streamResult {
	var p Parser
	s := streamConsumer{dec: NewDecoder(kind)}
	for _, read := range split(stream, cuts) {
		if s.res.err = p.Feed(read, &s); s.res.err != nil {
			return s.res
		}
	}
	s.res.err = p.Flush(&s)
	s.res.text = string(s.text)
	return s.res
}

func TestGolden(t *testing.T) {
	for _, g := range goldenStreams {
		t.Run(g.file, func(t *testing.T) {
			path := filepath.Join("testdata", g.file)
			want := g.render(goldenTokens)
			if *update {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				writeFuzzSeed(t, "FuzzSSEParser", g.file, fmt.Sprintf("[]byte(%q)\nuint64(%d)", want, len(want)/3))
				_, first, _ := bytes.Cut(want, []byte("data: "))
				first, _, _ = bytes.Cut(first, []byte("\n"))
				writeFuzzSeed(t, "FuzzDecoder", g.file, fmt.Sprintf("[]byte(%q)\nbool(%v)", first, g.kind == Chat))
			}
			stream, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./sse -run TestGolden -update)", err)
			}
			if !bytes.Equal(stream, want) {
				t.Fatalf("%s differs from what the generator renders now (run go test ./sse -run TestGolden -update)", path)
			}

			res := consume(g.kind, stream, nil)
			if res.err != nil {
				t.Fatal(res.err)
			}
			wantRes := streamResult{
				tokens: g.tokens, text: strings.Join(goldenTokens, ""),
				usages: 1, prompt: goldenPrompt, completion: int64(len(goldenTokens)), done: true,
			}
			if res != wantRes {
				t.Fatalf("stream decoded to\n %+v\nwant\n %+v", res, wantRes)
			}

			rng := rand.New(rand.NewPCG(3, uint64(len(stream))))
			for range 200 {
				cuts := randomCuts(rng, len(stream))
				if got := consume(g.kind, stream, cuts); got != wantRes {
					t.Fatalf("cuts %v: decoded to %+v", cuts, got)
				}
			}
		})
	}
}

func writeFuzzSeed(t *testing.T, target, name, values string) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("go test fuzz v1\n"+values+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPydanticString(t *testing.T) {
	for in, want := range map[string]string{
		"a":      `"a"`,
		"é🦊":     `"é🦊"`,
		"\"\\\n": `"\"\\\n"`,
		"\x01":   `"\u0001"`,
	} {
		if got := pydanticString(in); got != want {
			t.Errorf("pydanticString(%q) = %s, want %s", in, got, want)
		}
	}
}
