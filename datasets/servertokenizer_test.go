package datasets

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeTokenizeServer serves /tokenize and /detokenize with tok, the way
// vLLM's API server does; ids at or above tok's full size are rejected.
func fakeTokenizeServer(t *testing.T, tok *bpeTokenizer, calls *atomic.Int64) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Model            string `json:"model"`
			Prompt           string `json:"prompt"`
			AddSpecialTokens *bool  `json:"add_special_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "m" || req.AddSpecialTokens == nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"tokens": tok.Encode(nil, req.Prompt, *req.AddSpecialTokens), "count": 0})
	})
	mux.HandleFunc("POST /detokenize", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Model  string  `json:"model"`
			Tokens []int32 `json:"tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		for _, id := range req.Tokens {
			if id < 0 || int(id) > tok.VocabSize() {
				http.Error(w, `{"error": "token id out of range"}`, http.StatusBadRequest)
				return
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"prompt": tok.Decode(req.Tokens, false)})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestServerTokenizerRoundTripAndProbe(t *testing.T) {
	local := newBPETokenizer()
	var calls atomic.Int64
	srv := fakeTokenizeServer(t, local, &calls)
	st := NewServerTokenizer(srv.URL+"/", "m", srv.Client())
	if err := st.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The probe counts the added BOS as part of the vocabulary.
	if st.VocabSize() != local.VocabSize()+1 || st.NumSpecialTokensToAdd() != 1 || len(st.AllSpecialIDs()) != 1 {
		t.Errorf("probe: vocab %d special %d ids %v", st.VocabSize(), st.NumSpecialTokensToAdd(), st.AllSpecialIDs())
	}
	text := "the weather in Paris"
	ids := st.Encode([]int32{7}, text, true)
	if want := local.Encode([]int32{7}, text, true); !slices.Equal(ids, want) {
		t.Errorf("Encode = %v, want %v", ids, want)
	}
	if got := st.Decode(ids[1:], false); got != "<s>"+text {
		t.Errorf("Decode = %q", got)
	}
	if st.Err() != nil {
		t.Fatal(st.Err())
	}
	st.SetVocab(5, 0, nil)
	if st.VocabSize() != 5 {
		t.Error("SetVocab did not override the vocabulary size")
	}
	if st.Decode([]int32{1 << 30}, false) != "" || st.Err() == nil || !strings.Contains(st.Err().Error(), "HTTP 400") {
		t.Errorf("a rejected call should record its error, got %v", st.Err())
	}
}

func TestAlignWithServer(t *testing.T) {
	local := newBPETokenizer()
	var calls atomic.Int64
	srv := fakeTokenizeServer(t, local, &calls)
	long := "the weather in Paris is rainy"
	n := len(local.Encode(nil, long, false))
	reqs := []Request{
		{Prompt: long, PromptLen: n - 2}, // server count differs: realign
		{Prompt: "short", PromptLen: 50}, // not longer than PromptLen: kept
		{Prompt: long, PromptLen: n - 3}, // truncated to n-3 tokens
	}
	var out bytes.Buffer
	AlignWithServer(context.Background(), srv.Client(), srv.URL, "m", reqs, &out)
	if got := out.String(); got != "WARNING: tokenizer mismatch (server="+itoa(n)+", expected="+itoa(n-2)+"), re-aligning prompts.\n" {
		t.Errorf("output %q", got)
	}
	for i, r := range reqs {
		if got := len(local.Encode(nil, r.Prompt, false)); i != 1 && got != r.PromptLen {
			t.Errorf("request %d re-encodes to %d tokens, want %d (%q)", i, got, r.PromptLen, r.Prompt)
		}
	}
	if reqs[1].Prompt != "short" {
		t.Errorf("request 1 changed to %q", reqs[1].Prompt)
	}

	// Matching counts: nothing but the first call.
	calls.Store(0)
	out.Reset()
	same := []Request{{Prompt: long, PromptLen: n}, {Prompt: long, PromptLen: 1}}
	AlignWithServer(context.Background(), srv.Client(), srv.URL, "m", same, &out)
	if calls.Load() != 1 || out.Len() != 0 || same[1].Prompt != long {
		t.Errorf("aligned counts: %d calls, output %q", calls.Load(), out.String())
	}

	// No server: one warning, prompts untouched.
	out.Reset()
	AlignWithServer(context.Background(), srv.Client(), "http://127.0.0.1:1", "m", same, &out)
	if out.String() != "WARNING: /tokenize unavailable, skipping alignment.\n" {
		t.Errorf("unreachable server output %q", out.String())
	}
}
