package datasets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// dialectServer serves tok's /tokenize and /detokenize the way one server
// family does, other bodies included, so detection meets what it meets in
// the field:
//
//	vllm       {"prompt"} or HTTP 400; /detokenize rejects unknown ids
//	sglang     vLLM's /tokenize; /detokenize answers "text" and skips
//	           unknown ids, as Hugging Face's fast tokenizers do
//	llama.cpp  {"tokens": []} to a body without "content"; /detokenize
//	           fails on unknown ids
//	tgi        [{"id", ...}] or HTTP 422; no /detokenize
//
// decodeAny, when set, makes /detokenize decode every id below it, those
// tok does not have as "<unk>".
type dialectServer struct {
	dialect   string
	tok       *bpeTokenizer
	decodeAny int
	mu        sync.Mutex
	// bodies are the /tokenize bodies received.
	bodies []string
}

func (f *dialectServer) start(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", f.tokenize)
	if f.dialect != "tgi" {
		mux.HandleFunc("POST /detokenize", f.detokenize)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func (f *dialectServer) tokenize(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, string(raw))
	f.mu.Unlock()
	var req struct {
		Model            *string `json:"model"`
		Prompt           *string `json:"prompt"`
		Content          *string `json:"content"`
		Inputs           *string `json:"inputs"`
		AddSpecialTokens *bool   `json:"add_special_tokens"`
		AddSpecial       *bool   `json:"add_special"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	or := func(b *bool, def bool) bool {
		if b == nil {
			return def
		}
		return *b
	}
	switch f.dialect {
	case "vllm", "sglang":
		if req.Prompt == nil || req.Model == nil {
			http.Error(w, `{"object": "error", "message": "prompt: Field required"}`, http.StatusBadRequest)
			return
		}
		ids := f.tok.Encode([]int32{}, *req.Prompt, or(req.AddSpecialTokens, true))
		json.NewEncoder(w).Encode(map[string]any{"count": len(ids), "max_model_len": 4096, "tokens": ids})
	case "llama.cpp":
		ids := []int32{}
		if req.Content != nil {
			ids = f.tok.Encode(ids, *req.Content, or(req.AddSpecial, false))
		}
		json.NewEncoder(w).Encode(map[string]any{"tokens": ids})
	case "tgi":
		if req.Inputs == nil {
			http.Error(w, "Failed to deserialize the JSON body into the target type: missing field `inputs`", http.StatusUnprocessableEntity)
			return
		}
		type token struct {
			ID    int32  `json:"id"`
			Text  string `json:"text"`
			Start int    `json:"start"`
			Stop  int    `json:"stop"`
		}
		out := []token{}
		for _, id := range f.tok.Encode(nil, *req.Inputs, or(req.AddSpecialTokens, true)) {
			out = append(out, token{ID: id, Text: f.tok.Decode([]int32{id}, false)})
		}
		json.NewEncoder(w).Encode(out)
	}
}

func (f *dialectServer) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tokens []int32 `json:"tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	known := func(id int32) bool { return id >= 0 && int(id) <= f.tok.VocabSize() } // the BOS follows the vocabulary
	var text strings.Builder
	for _, id := range req.Tokens {
		switch {
		case known(id):
			text.WriteString(f.tok.Decode([]int32{id}, false))
		case f.decodeAny > 0 && int(id) < f.decodeAny:
			text.WriteString("<unk>")
		case f.dialect == "sglang":
		case f.dialect == "llama.cpp":
			http.Error(w, `{"error": {"code": 500, "message": "vector::_M_range_check"}}`, http.StatusInternalServerError)
			return
		default:
			http.Error(w, `{"object": "error", "message": "token id out of range"}`, http.StatusBadRequest)
			return
		}
	}
	member := map[string]string{"vllm": "prompt", "sglang": "text", "llama.cpp": "content"}[f.dialect]
	json.NewEncoder(w).Encode(map[string]string{member: text.String()})
}

// TestServerTokenizerDialects: each dialect is detected, named, and
// counts and decodes as the server's tokenizer does; the vocabulary probe
// finds the same size whether unknown ids are rejected, fail or decode to
// nothing.
func TestServerTokenizerDialects(t *testing.T) {
	local := newBPETokenizer()
	for _, dialect := range []string{"vllm", "sglang", "llama.cpp"} {
		t.Run(dialect, func(t *testing.T) {
			srv := (&dialectServer{dialect: dialect, tok: local}).start(t)
			st := NewServerTokenizer(srv.URL, "m", srv.Client())
			if err := st.Probe(context.Background()); err != nil {
				t.Fatal(err)
			}
			if st.Dialect() != dialect {
				t.Errorf("Dialect() = %q", st.Dialect())
			}
			if st.VocabSize() != local.VocabSize()+1 || st.NumSpecialTokensToAdd() != 1 {
				t.Errorf("probe: vocab %d, special %d", st.VocabSize(), st.NumSpecialTokensToAdd())
			}
			text := "the weather in Paris is rainy"
			ids := st.Encode(nil, text, false)
			if want := local.Encode(nil, text, false); !slices.Equal(ids, want) {
				t.Errorf("Encode = %v, want %v", ids, want)
			}
			if got := st.Decode(ids[:3], false); got != local.Decode(ids[:3], false) {
				t.Errorf("Decode = %q", got)
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestServerTokenizerTGI: TGI's /tokenize counts, but without a
// /detokenize the probe and Decode fail, naming the datasets that cannot
// work and the flag that makes them.
func TestServerTokenizerTGI(t *testing.T) {
	local := newBPETokenizer()
	srv := (&dialectServer{dialect: "tgi", tok: local}).start(t)
	st := NewServerTokenizer(srv.URL, "m", srv.Client())
	err := st.Probe(context.Background())
	if !errors.Is(err, ErrNoDetokenize) || !strings.Contains(err.Error(), "random") || !strings.Contains(err.Error(), "--tokenizer PATH") {
		t.Fatalf("Probe: %v", err)
	}
	if st.Dialect() != "tgi" || st.NumSpecialTokensToAdd() != 1 || st.VocabSize() != 0 {
		t.Errorf("dialect %q, special %d, vocab %d", st.Dialect(), st.NumSpecialTokensToAdd(), st.VocabSize())
	}
	text := "the weather in Paris"
	if ids, want := st.Encode(nil, text, false), local.Encode(nil, text, false); !slices.Equal(ids, want) {
		t.Errorf("Encode = %v, want %v", ids, want)
	}
	if st.Err() != nil {
		t.Fatal(st.Err())
	}
	if got := st.Decode([]int32{5}, false); got != "" || !errors.Is(st.Err(), ErrNoDetokenize) {
		t.Errorf("Decode = %q, err %v", got, st.Err())
	}
}

// TestServerTokenizerRefusesUnboundedVocab: a /detokenize that decodes any
// id would have the probe settle on its upper bound; that is refused.
func TestServerTokenizerRefusesUnboundedVocab(t *testing.T) {
	srv := (&dialectServer{dialect: "vllm", tok: newBPETokenizer(), decodeAny: maxProbeVocab + 1}).start(t)
	st := NewServerTokenizer(srv.URL, "m", srv.Client())
	err := st.Probe(context.Background())
	if err == nil || !strings.Contains(err.Error(), "4194304") || !strings.Contains(err.Error(), "--tokenizer PATH") {
		t.Fatalf("Probe: %v", err)
	}
	if st.VocabSize() != 0 {
		t.Errorf("the refused size was kept: %d", st.VocabSize())
	}
}

// TestServerTokenizerRefusesOverstatedVocab: a /detokenize that decodes
// ids far past the vocabulary but not every id: the ids it decodes near
// its bound never come back from /tokenize.
func TestServerTokenizerRefusesOverstatedVocab(t *testing.T) {
	srv := (&dialectServer{dialect: "vllm", tok: newBPETokenizer(), decodeAny: 1 << 16}).start(t)
	st := NewServerTokenizer(srv.URL, "m", srv.Client())
	err := st.Probe(context.Background())
	if err == nil || !strings.Contains(err.Error(), "smaller than /detokenize lets on") || !strings.Contains(err.Error(), "--tokenizer PATH") {
		t.Fatalf("Probe: %v", err)
	}
}

// zeroTokenServer answers every /tokenize body with no tokens, as
// llama-server answers a body without "content".
func zeroTokenServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"tokens":[]}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestServerTokenizerZeroTokens: no tokens for a text with words is an
// error naming the endpoint, the dialects tried and what came back.
func TestServerTokenizerZeroTokens(t *testing.T) {
	srv := zeroTokenServer(t)
	st := NewServerTokenizer(srv.URL, "m", srv.Client())
	err := st.Probe(context.Background())
	if err == nil {
		t.Fatal("Probe accepted a server that counts no tokens")
	}
	for _, want := range []string{srv.URL + "/tokenize", "vllm", "llama.cpp", "tgi", `"{\"tokens\":[]}"`, "0 tokens"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if ids := st.Encode(nil, "some words", false); len(ids) != 0 || st.Err() == nil {
		t.Errorf("Encode = %v, err %v", ids, st.Err())
	}
}

// TestAlignWithServerDialects: alignment speaks the server's dialect, so
// llama-server's counts match instead of reading as 0, and SGLang's
// /detokenize answer cuts prompts; TGI, with no /detokenize, gets the
// mismatch warning and a second one, and prompts stay.
func TestAlignWithServerDialects(t *testing.T) {
	local := newBPETokenizer()
	long := "the weather in Paris is rainy"
	n := len(local.Encode(nil, long, false))
	for _, dialect := range []string{"vllm", "sglang", "llama.cpp", "tgi"} {
		t.Run(dialect, func(t *testing.T) {
			f := &dialectServer{dialect: dialect, tok: local}
			srv := f.start(t)
			var out bytes.Buffer
			same := []Request{{Prompt: long, PromptLen: n}, {Prompt: long, PromptLen: 2}}
			if err := AlignWithServer(context.Background(), srv.Client(), srv.URL, "m", same, &out); err != nil || out.Len() != 0 || same[1].Prompt != long {
				t.Errorf("matching counts: err %v, output %q, prompt %q", err, out.String(), same[1].Prompt)
			}

			reqs := []Request{{Prompt: long, PromptLen: n - 2}, {Prompt: long, PromptLen: n - 3}}
			out.Reset()
			if err := AlignWithServer(context.Background(), srv.Client(), srv.URL, "m", reqs, &out); err != nil {
				t.Fatal(err)
			}
			warning := fmt.Sprintf("WARNING: tokenizer mismatch (server=%d, expected=%d), re-aligning prompts.\n", n, n-2)
			if dialect == "tgi" {
				warning += "WARNING: the server speaks tgi's /tokenize, which has no /detokenize to cut prompts with; prompts stay as sampled.\n"
			}
			if out.String() != warning {
				t.Errorf("output %q, want %q", out.String(), warning)
			}
			for i, r := range reqs {
				want := r.PromptLen
				if dialect == "tgi" {
					want = n
				}
				if got := len(local.Encode(nil, r.Prompt, false)); got != want {
					t.Errorf("request %d re-encodes to %d tokens, want %d (%q)", i, got, want, r.Prompt)
				}
			}
		})
	}
}

// TestAlignWithServerZeroTokens: alignment never re-aligns on a count that
// cannot be right, whether the first prompt gets it or a later one.
func TestAlignWithServerZeroTokens(t *testing.T) {
	srv := zeroTokenServer(t)
	var out bytes.Buffer
	reqs := []Request{{Prompt: "the weather in Paris", PromptLen: 63}}
	err := AlignWithServer(context.Background(), srv.Client(), srv.URL, "m", reqs, &out)
	if err == nil || !strings.Contains(err.Error(), srv.URL+"/tokenize") || !strings.Contains(err.Error(), "0 tokens") {
		t.Fatalf("err %v", err)
	}
	if out.Len() != 0 || reqs[0].Prompt != "the weather in Paris" {
		t.Errorf("output %q, prompt %q", out.String(), reqs[0].Prompt)
	}

	// A server that counts the first prompt and no others.
	local := newBPETokenizer()
	first := "the weather in Paris is rainy"
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Prompt string }
		json.NewDecoder(r.Body).Decode(&req)
		ids := []int32{}
		if req.Prompt == first {
			ids = local.Encode(ids, first, false)
		}
		json.NewEncoder(w).Encode(map[string]any{"tokens": ids})
	})
	flaky := httptest.NewServer(mux)
	defer flaky.Close()
	reqs = []Request{{Prompt: first, PromptLen: 3}, {Prompt: "another prompt", PromptLen: 1}}
	out.Reset()
	err = AlignWithServer(context.Background(), flaky.Client(), flaky.URL, "m", reqs, &out)
	if err == nil || !strings.Contains(err.Error(), "request 1") || !strings.Contains(err.Error(), "vllm dialect") {
		t.Fatalf("err %v", err)
	}
	if reqs[1].Prompt != "another prompt" {
		t.Errorf("request 1 changed to %q", reqs[1].Prompt)
	}
}

// TestDetectDialectBodies: vLLM's body goes first and alone to a vLLM
// server; llama-server gets vLLM's, then its own.
func TestDetectDialectBodies(t *testing.T) {
	local := newBPETokenizer()
	for _, c := range []struct {
		dialect string
		bodies  []string
	}{
		{"vllm", []string{`{"model": "m", "prompt": "The quick brown fox jumps over the lazy dog.", "add_special_tokens": false}`}},
		{"llama.cpp", []string{
			`{"model": "m", "prompt": "The quick brown fox jumps over the lazy dog.", "add_special_tokens": false}`,
			`{"content": "The quick brown fox jumps over the lazy dog.", "add_special": false}`,
		}},
	} {
		f := &dialectServer{dialect: c.dialect, tok: local}
		srv := f.start(t)
		d, _, ids, err := detectDialect(context.Background(), srv.Client(), srv.URL, "m", probeText)
		if err != nil || d.name != c.dialect || len(ids) != len(local.Encode(nil, probeText, false)) {
			t.Fatalf("%s: detected %v, %d ids, err %v", c.dialect, d, len(ids), err)
		}
		if !slices.Equal(f.bodies, c.bodies) {
			t.Errorf("%s: bodies %q, want %q", c.dialect, f.bodies, c.bodies)
		}
	}
}

func TestCountProblem(t *testing.T) {
	for _, c := range []struct {
		n     int
		text  string
		wrong bool
	}{
		{0, "", false},
		{1, "", false},
		{0, " \t", false}, // a normaliser may strip whitespace to nothing
		{0, "word", true},
		{4, "word", false},
		{4 + maxAddedSpecial, "word", false},
		{5 + maxAddedSpecial, "word", true},
		{1, strings.Repeat("x", maxTokenBytes), false},
		{1, strings.Repeat("x", maxTokenBytes+1), true},
	} {
		if got := countProblem(c.n, c.text) != ""; got != c.wrong {
			t.Errorf("countProblem(%d, %d bytes) wrong = %v, want %v", c.n, len(c.text), got, c.wrong)
		}
	}
}

func TestExcerpt(t *testing.T) {
	if got := excerpt([]byte("a\x00\"b")); got != `"a\x00\"b"` {
		t.Errorf("excerpt = %s", got)
	}
	long := strings.Repeat("é", maxExcerpt)
	got := excerpt([]byte(long))
	if !strings.HasSuffix(got, fmt.Sprintf("... (%d bytes)", len(long))) || len(got) > 2*maxExcerpt {
		t.Errorf("excerpt of %d bytes = %s", len(long), got)
	}
}

// FuzzScanTGITokens holds the TGI answer scanner to encoding/json reading
// the same bytes into a []struct{ID json.Number}: whatever the scanner
// accepts, encoding/json reads to the same ids, and what encoding/json
// reads the scanner accepts too (bar escapes, nulls and tokens without an
// id, which detection treats as failures).
func FuzzScanTGITokens(f *testing.F) {
	for _, seed := range []string{
		`[{"id": 1, "text": "a", "start": 0, "stop": 1}]`, `[]`, `[ {"id":7} , {"ID": "12"} ]`, `{"tokens": [1]}`,
		`[{"text": "a"}]`, `[{"id": 1, "id": 2}]`, `[{"id": true}]`, `[null]`, `[{"id": 1.5e3}]`, `[{"id": {"a": 1}}]`,
		`[{"i\u0064": 3}]`, `[{"id": 1},]`, `[{"x": [1, {"id": 9}], "id": 4}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spans, err := scanTGITokens(nil, data)
		var want []struct {
			ID json.Number `json:"id"`
		}
		jerr := json.Unmarshal(data, &want)
		if err == nil {
			if jerr != nil {
				t.Fatalf("scanned %q, which encoding/json refuses: %v", data, jerr)
			}
			if len(spans) != len(want) {
				t.Fatalf("%q: %d ids, encoding/json %d", data, len(spans), len(want))
			}
			for i, sp := range spans {
				if got := string(data[sp[0]:sp[1]]); got != string(want[i].ID) {
					t.Fatalf("%q: id %d is %q, encoding/json %q", data, i, got, want[i].ID)
				}
			}
			return
		}
		if jerr != nil || bytes.IndexByte(data, '\\') >= 0 || bytes.Contains(data, []byte("null")) {
			return
		}
		for _, tok := range want {
			if tok.ID == "" {
				return // a token without an id
			}
		}
		t.Fatalf("%q: scanner refuses (%v) what encoding/json reads", data, err)
	})
}

// TestAlignWithServerNotTokenizeAnswers: a server whose /tokenize answers
// 200 with something no /tokenize writes (an HTML page, an SSE stream, a
// completion: a server that routes every POST to completions) has no
// /tokenize to speak of: Python's warning, and the prompts as sampled.
// Answers like that to later prompts keep those prompts, as a failed
// exchange does.
func TestAlignWithServerNotTokenizeAnswers(t *testing.T) {
	const prompt = "the weather in Paris"
	for _, tc := range []struct{ name, contentType, body string }{
		{"html", "text/html", "<!doctype html><html><body>It works!</body></html>"},
		{"stream", "text/event-stream", "data: {\"choices\": [{\"text\": \" the\"}]}\n\ndata: [DONE]\n\n"},
		{"completion", "application/json", `{"id": "cmpl-1", "object": "text_completion", "choices": [{"index": 0, "text": " the"}]}`},
		{"empty object", "application/json", `{}`},
		{"null", "application/json", `null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", tc.contentType)
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			var out bytes.Buffer
			reqs := []Request{{Prompt: prompt, PromptLen: 2}, {Prompt: prompt, PromptLen: 1}}
			if err := AlignWithServer(context.Background(), srv.Client(), srv.URL, "m", reqs, &out); err != nil {
				t.Fatalf("AlignWithServer: %v", err)
			}
			if out.String() != "WARNING: /tokenize unavailable, skipping alignment.\n" {
				t.Errorf("output %q, want Python's warning", out.String())
			}
			if reqs[0].Prompt != prompt || reqs[1].Prompt != prompt {
				t.Errorf("prompts changed: %q", []string{reqs[0].Prompt, reqs[1].Prompt})
			}
			if calls.Load() != int64(len(dialects)) {
				t.Errorf("%d calls, want one per dialect (%d)", calls.Load(), len(dialects))
			}
		})
	}

	// The first prompt counted, the others answered with an HTML page.
	local := newBPETokenizer()
	first := "the weather in Paris is rainy"
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Prompt string }
		json.NewDecoder(r.Body).Decode(&req)
		if req.Prompt != first {
			io.WriteString(w, "<html>busy</html>")
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"tokens": local.Encode([]int32{}, first, false)})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	reqs := []Request{{Prompt: first, PromptLen: 3}, {Prompt: "another prompt", PromptLen: 1}}
	var out bytes.Buffer
	if err := AlignWithServer(context.Background(), srv.Client(), srv.URL, "m", reqs, &out); err != nil {
		t.Fatalf("AlignWithServer: %v", err)
	}
	if reqs[1].Prompt != "another prompt" || !strings.HasPrefix(out.String(), "WARNING: tokenizer mismatch") {
		t.Errorf("output %q, request 1 %q", out.String(), reqs[1].Prompt)
	}
}
