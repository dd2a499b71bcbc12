package datasets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// FuzzScanTokenIDs holds the /tokenize answer scanner to encoding/json
// reading the same bytes into the struct postTokenize uses: whatever the
// scanner accepts, encoding/json reads to the same ids, and what
// encoding/json reads the scanner accepts too (bar escapes in names and
// ids, and null ids, which alignment treats as failures, and answers
// without a "tokens" member, which are no /tokenize answer).
func FuzzScanTokenIDs(f *testing.F) {
	for _, seed := range []string{
		`{"tokens": [1, 2, 3], "count": 3}`, `{"tokens":[]}`, `{"tokens": null}`, `null`,
		`{"count": 2, "tokens": [ 128000 , 7 ]}`, `{"TOKENS": [5], "tokens": [6]}`,
		`{"tokens": [1], "tokens": "x"}`, `{"tokens": ["12", 3.5, -0, 1e9]}`,
		`{"tokens": [true]}`, `{"tokens": [[1]]}`, `{"tokens": [1,]}`, `[1, 2]`, `{"a": {"tokens": [9]}, "tokens": [1]}`,
		`{"tokens": [null]}`, `{"tokens": ["01"]}`, `{"tok\u0065ns": [1]}`, `{"tokens": [12345678901234567890123]}`,
		`{}`, `{"choices": [{"text": "a"}]}`, `<html></html>`, "data: {\"choices\": []}\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spans, err := scanTokenIDs(nil, data)
		var want struct {
			Tokens []json.Number `json:"tokens"`
		}
		jerr := json.Unmarshal(data, &want)
		if err == nil {
			if jerr != nil {
				t.Fatalf("scanned %q, which encoding/json refuses: %v", data, jerr)
			}
			if len(spans) != len(want.Tokens) {
				t.Fatalf("%q: %d ids, encoding/json %d", data, len(spans), len(want.Tokens))
			}
			for i, sp := range spans {
				if got := string(data[sp[0]:sp[1]]); got != string(want.Tokens[i]) {
					t.Fatalf("%q: id %d is %q, encoding/json %q", data, i, got, want.Tokens[i])
				}
			}
			return
		}
		if jerr != nil || bytes.IndexByte(data, '\\') >= 0 {
			return
		}
		if errors.Is(err, errNotTokenizerAnswer) && !hasTokensMember(data) {
			return
		}
		for _, id := range want.Tokens {
			if id == "" {
				return // a null id
			}
		}
		t.Fatalf("%q: scanner refuses (%v) what encoding/json reads", data, err)
	})
}

// hasTokensMember reports whether data is a JSON object with a member
// encoding/json would read as "tokens".
func hasTokensMember(data []byte) bool {
	var members map[string]json.RawMessage
	if json.Unmarshal(data, &members) != nil {
		return false
	}
	for k := range members {
		if strings.EqualFold(k, "tokens") {
			return true
		}
	}
	return false
}

// BenchmarkAlignWithServer aligns 1,024-token prompts against a server
// whose answers are fixed bytes, so what is allocated is the client's.
func BenchmarkAlignWithServer(b *testing.B) {
	const n = 1000
	prompt := strings.Repeat("lorem ", 1024)
	var ids bytes.Buffer
	ids.WriteString(`{"tokens": [`)
	for i := range 1100 {
		if i > 0 {
			ids.WriteString(", ")
		}
		ids.WriteString(strconv.Itoa(100000 + i))
	}
	ids.WriteString(`], "count": 1100}`)
	tokenized := ids.Bytes()
	detokenized, _ := json.Marshal(map[string]string{"prompt": prompt[:6000]})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write(tokenized)
	})
	mux.HandleFunc("POST /detokenize", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write(detokenized)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := srv.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = alignConcurrency
	reqs := make([]Request, n)
	b.ReportAllocs()
	for b.Loop() {
		for i := range reqs {
			reqs[i] = Request{Prompt: prompt, PromptLen: 1024}
		}
		AlignWithServer(context.Background(), client, srv.URL, "m", reqs, io.Discard)
		if reqs[n-1].Prompt == prompt {
			b.Fatal("not aligned")
		}
	}
}
