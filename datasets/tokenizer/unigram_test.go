package tokenizer

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// unigramJSON is a tokenizer.json holding only a Unigram model.
func unigramJSON(t testing.TB, vocab [][2]any, unk any, byteFallback bool) *Tokenizer {
	t.Helper()
	model := map[string]any{"type": "Unigram", "vocab": vocab, "unk_id": unk, "byte_fallback": byteFallback}
	data, err := json.Marshal(map[string]any{"model": model})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := parseJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestUnigramViterbi(t *testing.T) {
	vocab := [][2]any{{"<unk>", 0.0}, {"a", 0.0}, {"b", 0.0}, {"c", 0.0}, {"d", 0.0},
		{"cd", 1.0}, {"ab", 2.0}, {"abc", 5.0}, {"abcd", 10.0}}
	tok := unigramJSON(t, vocab, 0, false)
	id := func(s string) int32 {
		got, ok := tok.TokenToID(s)
		if !ok {
			t.Fatalf("%q not in vocabulary", s)
		}
		return got
	}
	tests := []struct {
		text string
		want []int32
	}{
		// The best path takes the long pieces; the two unknown x are one unk.
		{"abcdacdxx", []int32{id("abcd"), id("a"), id("cd"), 0}},
		{"abc", []int32{id("abc")}},
		{"xaxx", []int32{0, id("a"), 0}},
		{"", nil},
	}
	for _, tc := range tests {
		if got := tok.Encode(nil, tc.text, false); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
	if got := tok.VocabSize(); got != len(vocab) {
		t.Errorf("VocabSize() = %d, want %d", got, len(vocab))
	}
}

func TestUnigramUnkAndFallback(t *testing.T) {
	vocab := [][2]any{{"<unk>", 0.0}, {"a", -1.0}, {"<0xC3>", 0.0}, {"<0xA9>", 0.0}, {"<0x21>", 0.0}}
	// 'é' is C3 A9: both byte tokens exist. 'ü' (C3 BC) lacks one, so its
	// run stays unk. "!é" is one fused run of unknown characters.
	fallback := unigramJSON(t, vocab, 0, true)
	tests := []struct {
		text string
		want []int32
	}{
		{"aéa", []int32{1, 2, 3, 1}},
		{"aüa", []int32{1, 0, 1}},
		{"!é", []int32{4, 2, 3}},
		{"é!ü", []int32{0}},
	}
	for _, tc := range tests {
		if got := fallback.Encode(nil, tc.text, false); !slices.Equal(got, tc.want) {
			t.Errorf("byte_fallback Encode(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
	plain := unigramJSON(t, vocab, 0, false)
	if got, want := plain.Encode(nil, "aéa", false), []int32{1, 0, 1}; !slices.Equal(got, want) {
		t.Errorf("Encode(aéa) = %v, want %v", got, want)
	}
	// Without unk_id, Hugging Face fails the encode; characters nothing
	// covers are dropped.
	none := unigramJSON(t, vocab, nil, false)
	if got, want := none.Encode(nil, "xaéa", false), []int32{1, 1}; !slices.Equal(got, want) {
		t.Errorf("no unk_id: Encode(xaéa) = %v, want %v", got, want)
	}
}

// A token listed twice is found under its last id, as in Hugging Face's
// token-to-id map; both ids decode to it.
func TestUnigramDuplicateToken(t *testing.T) {
	tok := unigramJSON(t, [][2]any{{"<unk>", 0.0}, {"ab", -1.0}, {"ab", -2.0}}, 0, false)
	if got, want := tok.Encode(nil, "ab", false), []int32{2}; !slices.Equal(got, want) {
		t.Errorf("Encode(ab) = %v, want %v", got, want)
	}
	if got := tok.Decode([]int32{1, 2}, false); got != "ab ab" {
		t.Errorf("Decode = %q, want %q", got, "ab ab")
	}
}

func TestUnigramLoadErrors(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"unk outside", `{"model":{"type":"Unigram","unk_id":3,"vocab":[["a",0.0]]}}`, "unk_id 3"},
		{"empty", `{"model":{"type":"Unigram","vocab":[]}}`, "empty"},
		{"not a pair", `{"model":{"type":"Unigram","vocab":[["a"]]}}`, "JSON offset"},
		{"score", `{"model":{"type":"Unigram","vocab":[["a","x"]]}}`, "vocab entry 0"},
		{"object vocab", `{"model":{"type":"Unigram","vocab":{"a":0}}}`, "vocab list"},
		{"charsmap base64", `{"normalizer":{"type":"Precompiled","precompiled_charsmap":"!!"},"model":{"type":"Unigram","vocab":[["a",0.0]]}}`, "precompiled_charsmap"},
		{"charsmap size", `{"normalizer":{"type":"Precompiled","precompiled_charsmap":"/////w=="},"model":{"type":"Unigram","vocab":[["a",0.0]]}}`, "trie size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseJSON([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// committedPrecompiled is the nmt_nfkc charsmap of the committed Unigram
// tokenizer (SentencePiece's, as T5 and XLM-RoBERTa carry it).
func committedPrecompiled(t testing.TB) *precompiledNormalizer {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "unigram", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Normalizer struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		} `json:"normalizer"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	n, err := parseNormalizer(file.Normalizer.Normalizers[0])
	if err != nil {
		t.Fatal(err)
	}
	return n.(*precompiledNormalizer)
}

func TestPrecompiled(t *testing.T) {
	n := committedPrecompiled(t)
	tests := []struct{ in, want string }{
		{"plain ascii", "plain ascii"},
		{"ﬁne", "fine"},              // compatibility ligature
		{"①②", "12"},                 // circled digits
		{"Ｈｅｌｌｏ", "Hello"},           // fullwidth
		{"ｶﾀｶﾅ", "カタカナ"},             // halfwidth katakana, composed
		{"e\u0301", "é"},             // a cluster with a key of its own
		{"tab\there", "tab here"},    // whitespace becomes a space
		{"a\u200bb", "a b"},          // nmt_nfkc makes a zero-width space a space
		{"a\r\nb", "a b"},            // "\r\n" is one cluster: only "\r" is looked up
		{"東京", "東京"},                 // unchanged
		{"x\u00a0y", "x y"},          // no-break space
		{"\U0001F600", "\U0001F600"}, // unchanged, outside the table
	}
	for _, tc := range tests {
		if got := n.normalize(tc.in); got != tc.want {
			t.Errorf("normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Unchanged text comes back without a copy.
	s := "nothing to do here"
	if got := n.normalize(s); got != s {
		t.Errorf("normalize(%q) = %q", s, got)
	}
	if allocs := testing.AllocsPerRun(10, func() { n.normalize(s) }); allocs != 0 {
		t.Errorf("normalizing clean ASCII allocates %v times", allocs)
	}
}

// FuzzUnigramViterbi checks the segmentation is a best one: its score is
// the highest over every way of cutting the text into vocabulary tokens.
func FuzzUnigramViterbi(f *testing.F) {
	for _, s := range []string{"abcabc", "aaaa", "cabbac", "bbbbbbbbbbb", "acbcab"} {
		f.Add(s)
	}
	vocab := [][2]any{{"<unk>", 0.0}, {"a", -3.0}, {"b", -2.5}, {"c", -4.0}, {"ab", -4.5},
		{"bc", -5.0}, {"abc", -6.25}, {"ca", -3.5}, {"bb", -4.0}, {"bbb", -5.5}, {"cab", -7.0}}
	tok := unigramJSON(f, vocab, 0, false)
	m := tok.model.(*unigram)
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if len(b) > 14 {
			b = b[:14]
		}
		for i := range b {
			b[i] = "abc"[b[i]%3]
		}
		text := string(b)
		ids := tok.Encode(nil, text, false)
		var got float64
		var joined strings.Builder
		for _, id := range ids {
			got += m.scores[id]
			joined.WriteString(tok.tokens.at(id))
		}
		if joined.String() != text {
			t.Fatalf("tokens of %q spell %q", text, joined.String())
		}
		if want := bestScore(text, m); math.Abs(got-want) > 1e-9 {
			t.Fatalf("%q: score %v (ids %v), best is %v", text, got, ids, want)
		}
	})
}

// bestScore tries every segmentation of s into vocabulary tokens.
func bestScore(s string, m *unigram) float64 {
	if s == "" {
		return 0
	}
	best := math.Inf(-1)
	for end := 1; end <= len(s); end++ {
		if id, ok := m.lookup(s[:end]); ok {
			best = max(best, m.scores[id]+bestScore(s[end:], m))
		}
	}
	return best
}

func ExampleTokenizer_unigram() {
	tok, err := Load(filepath.Join("testdata", "unigram", "tokenizer.json"))
	if err != nil {
		panic(err)
	}
	ids := tok.Encode(nil, "Hello, world!", true)
	fmt.Println(len(ids) == tok.NumSpecialTokensToAdd()+len(tok.Encode(nil, "Hello, world!", false)))
	fmt.Println(tok.Decode(ids, true))
	// Output:
	// true
	// Hello, world!
}

// FuzzPrecompiled feeds the charsmap reader arbitrary bytes and the
// normalizer arbitrary text: a corrupt charsmap may fail to load, never
// panic or read outside itself.
func FuzzPrecompiled(f *testing.F) {
	real := committedPrecompiled(f)
	var charsmap []byte
	charsmap = binary.LittleEndian.AppendUint32(charsmap, uint32(4*len(real.array)))
	for _, u := range real.array {
		charsmap = binary.LittleEndian.AppendUint32(charsmap, u)
	}
	charsmap = append(charsmap, real.replaced...)
	f.Add(charsmap, "ﬁ ① a\r\nb ｶﾀｶﾅ e\u0301")
	f.Add([]byte{8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 'a', 0}, "a\x00b")
	f.Add([]byte{4, 0, 0, 0, 0, 4, 0, 0}, "\U0001F1EB\U0001F1F7 x")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		n, err := newPrecompiled(data)
		if err != nil {
			return
		}
		n.normalize(text)
	})
}

// FuzzSpaceRuns proves spaceRunMatcher equal to regexp2 running " {2,}".
func FuzzSpaceRuns(f *testing.F) {
	for _, s := range []string{"", " ", "  ", "a  b   c", "   ", " a ", "\u3000  \u00a0  x", "  \t  "} {
		f.Add(s)
	}
	re, err := compileRegex(spaceRunPattern)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		want := regexMatcher{re}.appendMatches(nil, s)
		if got := (spaceRunMatcher{}).appendMatches(nil, s); !slices.Equal(got, want) {
			t.Fatalf("%q: got %v, want %v", s, got, want)
		}
	})
}

// TestUnigramEncodeBatchConcurrent shares one Unigram tokenizer (its word
// cache and scratch pools) among goroutines; make test-race runs it under
// the race detector.
func TestUnigramEncodeBatchConcurrent(t *testing.T) {
	tok, err := Load(filepath.Join("testdata", "unigram", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, 300)
	for i := range texts {
		texts[i] = strings.Repeat(fmt.Sprintf("ｒｅｑｕｅｓｔ %d streams tokens ① ", i%17), i%5+1)
	}
	got := tok.EncodeBatch(texts, true)
	for i, text := range texts {
		if want := tok.Encode(nil, text, true); !slices.Equal(got[i], want) {
			t.Fatalf("EncodeBatch[%d] = %v, want %v", i, got[i], want)
		}
	}
}
