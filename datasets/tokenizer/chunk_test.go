package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// chunkTexts builds long texts from the golden corpus's texts and the
// scanner seeds, joined by separators that put letters, spaces, added
// tokens, contractions, newlines and digits on both sides of candidate
// cuts, plus windows of decoded ids.
func chunkTexts(t testing.TB, tok *Tokenizer, goldenFile string) []string {
	var parts []string
	if data, err := os.ReadFile(filepath.Join("testdata", "golden", goldenFile)); err == nil {
		var g golden
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatal(err)
		}
		for _, c := range g.Cases {
			parts = append(parts, c.Text)
		}
	}
	parts = append(parts, scannerSeeds...)
	seps := []string{"", " ", "  ", "a ", "x's ", "\n", " \n ", "Z  y", "12 ", "é ", "'s", "'LL "}
	for _, at := range tok.added {
		seps = append(seps, at.Content, "w"+at.Content+" v")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var texts []string
	for range 60 {
		var b strings.Builder
		for b.Len() < chunkMinText+rng.IntN(3*chunkMinText) {
			b.WriteString(parts[rng.IntN(len(parts))])
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		texts = append(texts, b.String())
	}
	ids := make([]int32, 1200)
	for k := range 40 {
		for j := range ids {
			ids[j] = int32((k*37 + j) % tok.VocabSize())
		}
		texts = append(texts, tok.Decode(ids, false))
	}
	return texts
}

// TestChunksEncodeAsWhole proves that cutting long texts into cached
// chunks changes no id: for every text, the chunked encoding (first with
// the chunks missing from the cache, then found there) equals the encoding
// of the whole.
func TestChunksEncodeAsWhole(t *testing.T) {
	for _, c := range []struct {
		file, golden string
		chunkable    bool
	}{
		{"testdata/tiny/tokenizer.json", "tiny.json", true},
		{"llama3.json", "llama3.json", true},
		{"qwen3.json", "qwen3.json", false}, // NFC runs first
		{"gpt4o.json", "gpt4o.json", false},
		{"llama2.json", "llama2.json", false},
	} {
		t.Run(c.file, func(t *testing.T) {
			tok := familyTokenizer(t, c.file)
			if got := tok.chunks != nil; got != c.chunkable {
				t.Fatalf("chunked = %v, want %v", got, c.chunkable)
			}
			if !c.chunkable {
				return
			}
			cuts := 0
			for i, text := range chunkTexts(t, tok, c.golden) {
				ws := new(workspace)
				want := tok.encodeWhole(nil, text, ws)
				for pass := range 2 {
					if got := tok.Encode(nil, text, false); !slices.Equal(got, want) {
						at := 0
						for at < min(len(got), len(want)) && got[at] == want[at] {
							at++
						}
						t.Fatalf("text %d pass %d: chunked ids differ from id %d on (%d vs %d ids); text %q",
							i, pass, at, len(got), len(want), text)
					}
				}
				for s := 0; s < len(text); s = nextCut(text, s) {
					cuts++
				}
			}
			if cuts < 300 {
				t.Errorf("only %d chunks: the texts hardly exercise the cuts", cuts)
			}
		})
	}
}

// TestNextCutContentDefined checks that cuts depend on the text before
// them, not on where the text starts: a passage shared by two texts is cut
// in the same places once 16 bytes in.
func TestNextCutContentDefined(t *testing.T) {
	var b strings.Builder
	rng := rand.New(rand.NewPCG(3, 4))
	words := []string{"alpha", "beta", "gamma", "delta", "pi", "omega", "x", "tokens", "of", "the"}
	for b.Len() < 20000 {
		b.WriteString(words[rng.IntN(len(words))])
		b.WriteString(" ")
	}
	text := b.String()
	cutsOf := func(s string, shift int) map[int]bool {
		m := map[int]bool{}
		for at := 0; at < len(s); {
			at = nextCut(s, at)
			if cut := at + shift; at < len(s) && at >= 64+200 {
				m[cut] = true
			}
		}
		return m
	}
	whole := cutsOf(text, 0)
	shifted := cutsOf(text[137:], 137)
	if len(whole) < 20 {
		t.Fatalf("%d cuts in %d bytes", len(whole), len(text))
	}
	shared := 0
	for c := range shifted {
		if whole[c] {
			shared++
		}
	}
	if shared < len(shifted)*9/10 {
		t.Errorf("%d of %d cuts shared by the shifted text", shared, len(shifted))
	}
	for c := range whole {
		if text[c] != ' ' || !isLetter(rune(text[c-1])) {
			t.Errorf("cut at %d before %q, not a space after a letter", c, text[c-1:c+1])
		}
	}
}

// FuzzChunks compares the chunked and the whole encoding of a fuzzed text
// repeated past the length where chunking starts, with the tiny tokenizer.
func FuzzChunks(f *testing.F) {
	for _, s := range scannerSeeds {
		f.Add(s)
	}
	f.Add("word <s> next's 12 z</s> ")
	tok, err := Load(filepath.Join("testdata", "tiny", "tokenizer.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return
		}
		text := strings.Repeat(s+" a ", chunkMinText/(len(s)+3)+1)
		text = strings.ToValidUTF8(text, "\uFFFD")
		want := tok.encodeWhole(nil, text, new(workspace))
		if got := tok.Encode(nil, text, false); !slices.Equal(got, want) {
			t.Fatalf("chunked %v, whole %v", got, want)
		}
	})
}
