package datasets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stampede-bench/stampede/internal/py"
)

// tokenizeDialect is how one server family spells /tokenize and
// /detokenize. All of them serve POST {base}/tokenize with a JSON body:
//
//	vllm       /tokenize   {"model", "prompt", "add_special_tokens"}
//	                       → {"count", "max_model_len", "tokens": [ids], "token_strs"}
//	           /detokenize {"model", "tokens": [ids]} → {"prompt": text}
//	sglang     /tokenize   as vLLM's, and the same answer
//	           /detokenize as vLLM's → {"text": text}
//	llama.cpp  /tokenize   {"content", "add_special"} → {"tokens": [ids]}
//	           /detokenize {"tokens": [ids]} → {"content": text}
//	tgi        /tokenize   {"inputs", "add_special_tokens"}
//	                       → [{"id", "text", "start", "stop"}, ...]
//	           no /detokenize
//
// The bodies overlap in ways that hide a wrong guess: llama.cpp answers a
// body without "content" with {"tokens": []}, a count that cannot be right
// for a text with words in it, which is how detection tells it from vLLM.
// vLLM and SGLang differ only in /detokenize's answer; until one is seen
// they are one dialect, and readText says which spoke.
type tokenizeDialect struct {
	name string
	// appendTokenize writes the /tokenize body for text.
	appendTokenize func(b *bytes.Buffer, model, text string, addSpecial bool)
	// scanIDs appends where each token id of a /tokenize answer lies in
	// it.
	scanIDs func(dst [][2]int32, answer []byte) ([][2]int32, error)
	// detokenizeNamesModel: the /detokenize body carries "model".
	detokenizeNamesModel bool
	// textMember is the /detokenize answer's member holding the text; ""
	// when the server has no /detokenize.
	textMember string
}

var (
	vllmDialect = &tokenizeDialect{
		name:                 "vllm",
		appendTokenize:       appendPromptTokenize,
		scanIDs:              scanTokenIDs,
		detokenizeNamesModel: true,
		textMember:           "prompt",
	}
	sglangDialect = &tokenizeDialect{
		name:                 "sglang",
		appendTokenize:       appendPromptTokenize,
		scanIDs:              scanTokenIDs,
		detokenizeNamesModel: true,
		textMember:           "text",
	}
	llamaCppDialect = &tokenizeDialect{
		name: "llama.cpp",
		appendTokenize: func(b *bytes.Buffer, _, text string, addSpecial bool) {
			appendModellessTokenize(b, "content", text, "add_special", addSpecial)
		},
		scanIDs:    scanTokenIDs,
		textMember: "content",
	}
	tgiDialect = &tokenizeDialect{
		name: "tgi",
		appendTokenize: func(b *bytes.Buffer, _, text string, addSpecial bool) {
			appendModellessTokenize(b, "inputs", text, "add_special_tokens", addSpecial)
		},
		scanIDs: scanTGITokens,
	}
)

// dialects are tried in this order. vLLM's comes first, so a vLLM server
// gets exactly the one request Python's alignment sends; SGLang's /tokenize
// is vLLM's, so it is not tried apart.
var dialects = []*tokenizeDialect{vllmDialect, llamaCppDialect, tgiDialect}

// appendPromptTokenize is the vLLM/SGLang /tokenize body, byte for byte
// what Python's aiohttp sends.
func appendPromptTokenize(b *bytes.Buffer, model, text string, addSpecial bool) {
	b.WriteString(`{"model": `)
	py.AppendJSONString(b, model, true)
	b.WriteString(`, "prompt": `)
	py.AppendJSONString(b, text, true)
	b.WriteString(`, "add_special_tokens": `)
	b.WriteString(strconv.FormatBool(addSpecial))
	b.WriteByte('}')
}

// appendModellessTokenize is the llama.cpp and TGI /tokenize body: the
// text and the special-token switch under their names, no model (each
// server serves one).
func appendModellessTokenize(b *bytes.Buffer, textMember, text, specialMember string, addSpecial bool) {
	b.WriteString(`{"` + textMember + `": `)
	py.AppendJSONString(b, text, true)
	b.WriteString(`, "` + specialMember + `": `)
	b.WriteString(strconv.FormatBool(addSpecial))
	b.WriteByte('}')
}

// detokenizes reports whether the server has a /detokenize.
func (d *tokenizeDialect) detokenizes() bool { return d.textMember != "" }

// openDetokenize writes the /detokenize body up to its first id; the
// caller writes the ids, ", " between them, and then `]}`.
func (d *tokenizeDialect) openDetokenize(b *bytes.Buffer, model string) {
	if d.detokenizeNamesModel {
		b.WriteString(`{"model": `)
		py.AppendJSONString(b, model, true)
		b.WriteString(`, "tokens": [`)
		return
	}
	b.WriteString(`{"tokens": [`)
}

// readText returns the text of a /detokenize answer and the dialect that
// wrote it: vLLM's "prompt" or SGLang's "text" for either of them.
func (d *tokenizeDialect) readText(answer []byte) (string, *tokenizeDialect, error) {
	var a struct {
		Prompt  *string `json:"prompt"`
		Text    *string `json:"text"`
		Content *string `json:"content"`
	}
	if !json.Valid(answer) {
		return "", d, notTokenizerAnswer("not JSON")
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return "", d, errors.New(JSONProblem(answer, err, "a JSON object"))
	}
	switch {
	case d == llamaCppDialect && a.Content != nil:
		return *a.Content, d, nil
	case d.detokenizeNamesModel && a.Prompt != nil:
		return *a.Prompt, vllmDialect, nil
	case d.detokenizeNamesModel && a.Text != nil:
		return *a.Text, sglangDialect, nil
	}
	return "", d, fmt.Errorf("the answer has no %q", d.textMember)
}

// probeText is what a dialect is detected on: plain words, which every
// tokenizer splits into a handful of tokens and decodes back.
const probeText = "The quick brown fox jumps over the lazy dog."

// maxAddedSpecial bounds the tokens a server may count beyond one per byte:
// the special tokens it adds (some add them whatever add_special_tokens
// says) and SentencePiece's dummy prefix.
const maxAddedSpecial = 8

// maxTokenBytes bounds the bytes one token stands for; the longest tokens
// in use (runs of spaces, code indentation) are far shorter.
const maxTokenBytes = 1024

// countProblem says why n tokens cannot be text's, or "" when they can be.
// A token stands for at least one byte, bar the few maxAddedSpecial
// allows, and at most maxTokenBytes; a text with a letter or digit in it
// has at least one token (a normaliser may strip one of only spaces and
// control characters to nothing).
func countProblem(n int, text string) string {
	switch {
	case n == 0 && strings.IndexFunc(text, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0:
		return fmt.Sprintf("0 tokens for a %d-byte text with words in it", len(text))
	case n > len(text)+maxAddedSpecial:
		return fmt.Sprintf("%d tokens for a %d-byte text, more than one per byte", n, len(text))
	case n > 0 && n*maxTokenBytes < len(text):
		return fmt.Sprintf("%d tokens for a %d-byte text, more than %d bytes per token", n, len(text), maxTokenBytes)
	}
	return ""
}

// wrongAnswer is an answer from /tokenize or /detokenize that cannot be
// right. It is an error, never grounds for a warning: a run built on it
// would send prompts of lengths nobody asked for.
type wrongAnswer struct {
	url     string
	dialect string
	status  int
	answer  []byte
	why     string
}

func (e *wrongAnswer) Error() string {
	return fmt.Sprintf("POST %s (%s dialect) answered HTTP %d %s: %s", e.url, e.dialect, e.status, excerpt(e.answer), e.why)
}

func (d *tokenizeDialect) wrong(url string, status int, answer []byte, why string) *wrongAnswer {
	return &wrongAnswer{url: url, dialect: d.name, status: status, answer: bytes.Clone(answer), why: why}
}

// errNotTokenizerAnswer marks a 200 answer that no /tokenize or
// /detokenize writes: not JSON (an HTML page, an SSE stream from a server
// that routes every POST to completions), or JSON without the dialect's
// token list (a completion). Python's alignment takes any failure of its
// first /tokenize call for a server without one, warns and runs on; so
// does stampede for these. A token list whose count cannot be right stays
// an error (wrongAnswer).
var errNotTokenizerAnswer = errors.New("not an answer of a tokenizer endpoint")

// notTokenizerAnswer is errNotTokenizerAnswer saying why.
func notTokenizerAnswer(why string) error { return fmt.Errorf("%w: %s", errNotTokenizerAnswer, why) }

// httpStatusError is an answer other than 200.
type httpStatusError struct {
	url    string
	status int
	answer []byte
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("POST %s: HTTP %d: %s", e.url, e.status, excerpt(e.answer))
}

// noDialectError is a /tokenize that no dialect got a count from that can
// be right: what each dialect's body brought back.
type noDialectError struct {
	url   string
	tries []string
	// answered: some dialect's body got a token list, whose count then
	// could not be right; otherwise (no answer, statuses other than 200,
	// answers that are not /tokenize's) the server has no /tokenize to
	// speak of.
	answered bool
}

func (e *noDialectError) Error() string {
	return fmt.Sprintf("POST %s: no /tokenize dialect stampede speaks (vllm/sglang, llama.cpp, tgi) got a count that can be right: %s",
		e.url, strings.Join(e.tries, "; "))
}

// maxExcerpt bounds how much of an answer an error quotes: enough to
// recognise it, not a megabyte of ids.
const maxExcerpt = 200

// excerpt quotes the start of an answer, escaped, with its length when
// cut.
func excerpt(answer []byte) string {
	if len(answer) <= maxExcerpt {
		return strconv.Quote(string(answer))
	}
	cut := maxExcerpt
	for cut > 0 && !utf8.RuneStart(answer[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(string(answer[:cut])), len(answer))
}

// detectDialect finds the dialect the server at base speaks by tokenizing
// text, without special tokens, in each dialect in turn: the first whose
// answer is a count that can be right (countProblem) wins. It returns that
// answer and where its ids lie in it. When the server does not answer at
// all, the other dialects are not tried. A 200 answer that is not a token
// list (errNotTokenizerAnswer) counts as no answer of that dialect.
func detectDialect(ctx context.Context, c *http.Client, base, model, text string) (*tokenizeDialect, []byte, [][2]int32, error) {
	url := base + "/tokenize"
	fail := &noDialectError{url: url}
	var body, answer bytes.Buffer
	for _, d := range dialects {
		body.Reset()
		d.appendTokenize(&body, model, text, false)
		status, err := exchange(ctx, c, url, body.Bytes(), &answer)
		if err != nil {
			fail.tries = append(fail.tries, fmt.Sprintf("%s: %v", d.name, err))
			return nil, nil, nil, fail
		}
		if status != http.StatusOK {
			fail.tries = append(fail.tries, fmt.Sprintf("%s: HTTP %d %s", d.name, status, excerpt(answer.Bytes())))
			continue
		}
		ids, err := d.scanIDs(nil, answer.Bytes())
		if !errors.Is(err, errNotTokenizerAnswer) {
			fail.answered = true
		}
		why := countProblem(len(ids), text)
		if err != nil {
			why = err.Error()
		}
		if why != "" {
			fail.tries = append(fail.tries, fmt.Sprintf("%s: HTTP 200 %s: %s", d.name, excerpt(answer.Bytes()), why))
			continue
		}
		return d, bytes.Clone(answer.Bytes()), ids, nil
	}
	return nil, nil, nil, fail
}

// maxTokenizeResponse bounds a /tokenize or /detokenize response body; a
// 1M-token prompt's id list is ~8 MB.
const maxTokenizeResponse = 64 << 20

// exchange POSTs body to url as JSON and reads the answer into answer. It
// returns the HTTP status, or the error when no answer came.
func exchange(ctx context.Context, c *http.Client, url string, body []byte, answer *bytes.Buffer) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	answer.Reset()
	if _, err := answer.ReadFrom(io.LimitReader(resp.Body, maxTokenizeResponse)); err != nil {
		return 0, fmt.Errorf("POST %s: reading the answer: %w", url, err)
	}
	return resp.StatusCode, nil
}

// scanTGITokens appends where each token id of a TGI /tokenize answer lies
// in data, accepting what encoding/json accepts into a []struct{ID
// json.Number `json:"id"`}, bar tokens without an id: a JSON list of
// objects whose members named "id" (ignoring case; the last one counts)
// are numbers or strings holding one (the span is then the string's
// contents).
func scanTGITokens(dst [][2]int32, data []byte) ([][2]int32, error) {
	if len(data) > math.MaxInt32 || !json.Valid(data) {
		return dst, notTokenizerAnswer("not JSON")
	}
	s := &scanner{data: data}
	s.space()
	if !s.eat('[') {
		return dst, notTokenizerAnswer("not a JSON list of tokens")
	}
	for s.space(); !s.eat(']'); s.space() {
		s.eat(',')
		s.space()
		if !s.eat('{') {
			return dst, errors.New("a token is not a JSON object")
		}
		var span [2]int32
		found := false
		err := s.object(func(key []byte) error {
			if !isMember(key, "id") {
				s.skip()
				return nil
			}
			var err error
			span, err = s.id()
			found = err == nil
			return err
		})
		if err != nil {
			return dst, err
		}
		if !found {
			return dst, errors.New(`a token has no "id"`)
		}
		dst = append(dst, span)
	}
	return dst, nil
}
