package datasets

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// wideTokenizeServer tokenizes on spaces into ids beyond 32 bits, as a
// simulator's dummy tokenizer does: a word's id is 2^40 + its FNV-1a hash,
// and the word "max" is 2^64-1, beyond int64 too. /detokenize accepts only
// ids it handed out, written exactly as it wrote them.
func wideTokenizeServer(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	words := map[string]string{}
	idOf := func(w string) string {
		if w == "max" {
			return "18446744073709551615"
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		return fmt.Sprint(uint64(1)<<40 + uint64(h.Sum32()))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Prompt string }
		if json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var ids []string
		mu.Lock()
		for _, word := range strings.Fields(req.Prompt) {
			id := idOf(word)
			words[id] = word
			ids = append(ids, id)
		}
		mu.Unlock()
		fmt.Fprintf(w, `{"count": %d, "max_model_len": 8192, "tokens": [%s]}`, len(ids), strings.Join(ids, ", "))
	})
	mux.HandleFunc("POST /detokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Tokens []json.Number }
		if json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var out []string
		mu.Lock()
		defer mu.Unlock()
		for _, id := range req.Tokens {
			word, ok := words[string(id)]
			if !ok {
				http.Error(w, "unknown token id "+string(id), http.StatusBadRequest)
				return
			}
			out = append(out, word)
		}
		json.NewEncoder(w).Encode(map[string]string{"prompt": strings.Join(out, " ")})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestAlignWithWideIDs: a server whose ids exceed 2^31-1 still gets
// Python's mismatch warning and re-alignment, not "/tokenize unavailable".
func TestAlignWithWideIDs(t *testing.T) {
	srv := wideTokenizeServer(t)
	prompt := strings.Repeat("alpha beta max gamma ", 6) + "delta epsilon" // 26 words
	reqs := []Request{{Prompt: prompt, PromptLen: 63}, {Prompt: prompt, PromptLen: 5}}
	var out bytes.Buffer
	AlignWithServer(context.Background(), srv.Client(), srv.URL, "m", reqs, &out)
	if want := "WARNING: tokenizer mismatch (server=26, expected=63), re-aligning prompts.\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
	if reqs[0].Prompt != prompt {
		t.Errorf("request 0 (not longer than its PromptLen) changed to %q", reqs[0].Prompt)
	}
	if want := "alpha beta max gamma alpha"; reqs[1].Prompt != want {
		t.Errorf("request 1 aligned to %q, want %q (its first 5 ids sent back verbatim)", reqs[1].Prompt, want)
	}
}

// TestServerTokenizerWideIDs: Encode counts wide ids exactly and Decode
// sends them back as the server wrote them, also after truncation.
func TestServerTokenizerWideIDs(t *testing.T) {
	srv := wideTokenizeServer(t)
	st := NewServerTokenizer(srv.URL, "m", srv.Client())
	st.SetVocab(1000, 0, []int32{})
	ids := st.Encode(nil, "one max two one", false)
	if len(ids) != 4 || ids[0] != ids[3] || ids[0] == ids[1] {
		t.Fatalf("Encode = %v: want 4 ids, the first and last equal", ids)
	}
	if got := st.Decode(ids[:3], false); got != "one max two" {
		t.Errorf("Decode(first 3) = %q, want %q", got, "one max two")
	}
	if again := st.Encode(nil, "two", false); len(again) != 1 || again[0] != ids[2] {
		t.Errorf("a wide id got a second stand-in: %v vs %v", again, ids[2])
	}
	if err := st.Err(); err != nil {
		t.Fatalf("Err: %v", err)
	}
	// An id this tokenizer never handed out is an error, not a wrong id.
	if got := st.Decode([]int32{-1000}, false); got != "" || st.Err() == nil {
		t.Errorf("Decode of an unknown stand-in = %q, err %v", got, st.Err())
	}
}
