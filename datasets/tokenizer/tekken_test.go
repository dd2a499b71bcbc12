package tokenizer

import (
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// patternTekken is the split pattern of Mistral's tekken.json files.
const patternTekken = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`

const tekkenCorpus = "The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs away!\n" +
	"Héllo wörld, ça va? Grüße aus Köln. 東京は大きい都市です。 Emoji: 😀😀 🚀 done.\n" +
	"def main():\n    return 42 + 1_000 // 7\n\tif x == 'y': print(\"z\")\r\n" +
	"[INST] Summarise the text [/INST] <s> is not a token here </s>\n"

// trainTekkenRanks learns a tiktoken-style rank list from corpus: the 256
// bytes, then the most frequent adjacent pair of tokens inside a split
// piece, merged, until n ranks exist. Every rank past 255 is thus the
// concatenation of two lower ranks, as in a real file.
func trainTekkenRanks(t testing.TB, corpus string, n int) [][]byte {
	t.Helper()
	split, err := newMatcher(patternTekken)
	if err != nil {
		t.Fatal(err)
	}
	var words [][][]byte
	for _, sp := range split.appendMatches(nil, corpus) {
		var w [][]byte
		for _, c := range []byte(corpus[sp.start:sp.end]) {
			w = append(w, []byte{c})
		}
		words = append(words, w)
	}
	ranks := make([][]byte, 256)
	known := map[string]bool{}
	for b := range 256 {
		ranks[b] = []byte{byte(b)}
		known[string(ranks[b])] = true
	}
	for len(ranks) < n {
		counts := map[string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w); i++ {
				counts[string(w[i])+"\x00"+string(w[i+1])]++
			}
		}
		best, bestN := "", 0
		for k, c := range counts {
			if c > bestN || (c == bestN && k < best) {
				best, bestN = k, c
			}
		}
		if bestN == 0 {
			break
		}
		a, b, _ := strings.Cut(best, "\x00")
		merged := []byte(a + b)
		if !known[string(merged)] {
			known[string(merged)] = true
			ranks = append(ranks, merged)
		}
		for wi, w := range words {
			var out [][]byte
			for i := 0; i < len(w); i++ {
				if i+1 < len(w) && string(w[i]) == a && string(w[i+1]) == b {
					out = append(out, merged)
					i++
					continue
				}
				out = append(out, w[i])
			}
			words[wi] = out
		}
	}
	return ranks
}

// tekkenSpec describes a generated tekken.json.
type tekkenSpec struct {
	version    string
	specials   []string // listed special tokens; nil omits the list
	numSpecial int
	inner      int // ranks used: default_vocab_size - numSpecial
	extra      int // vocab entries past inner, which must be ignored
}

func writeTekken(t testing.TB, dir string, ranks [][]byte, s tekkenSpec) string {
	t.Helper()
	type vocabEntry struct {
		Rank       int     `json:"rank"`
		TokenBytes string  `json:"token_bytes"`
		TokenStr   *string `json:"token_str"`
	}
	var vocab []vocabEntry
	for i, r := range ranks[:s.inner+s.extra] {
		e := vocabEntry{Rank: i, TokenBytes: base64.StdEncoding.EncodeToString(r)}
		if str := string(r); isValidText(str) {
			e.TokenStr = &str
		}
		vocab = append(vocab, e)
	}
	file := map[string]any{
		"config": map[string]any{
			"pattern":                    patternTekken,
			"num_vocab_tokens":           s.inner + s.extra,
			"default_vocab_size":         s.inner + s.numSpecial,
			"default_num_special_tokens": s.numSpecial,
			"version":                    s.version,
		},
		"vocab": vocab,
	}
	if s.specials != nil {
		var list []map[string]any
		for i, tok := range s.specials {
			list = append(list, map[string]any{"rank": i, "token_str": tok, "is_control": true})
		}
		file["special_tokens"] = list
	}
	data, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tekken.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func isValidText(s string) bool { return strings.ToValidUTF8(s, "") == s }

// referenceTekken encodes as Tekkenizer.encode does, written the plain way:
// split with the pattern, a piece that is a rank is one token, else the
// adjacent pair whose concatenation has the lowest rank merges until none
// does; ids are ranks shifted by the special tokens, BOS in front.
func referenceTekken(t *testing.T, ranks [][]byte, inner, numSpecial, bos int, text string, addBOS bool) []int32 {
	t.Helper()
	rank := map[string]int{}
	for i, r := range ranks[:inner] {
		rank[string(r)] = i
	}
	split, err := newMatcher(patternTekken)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	if addBOS {
		ids = append(ids, int32(bos))
	}
	for _, sp := range split.appendMatches(nil, text) {
		piece := text[sp.start:sp.end]
		if r, ok := rank[piece]; ok {
			ids = append(ids, int32(r+numSpecial))
			continue
		}
		var parts []string
		for i := 0; i < len(piece); i++ {
			parts = append(parts, piece[i:i+1])
		}
		for {
			best, bestRank := -1, 0
			for i := 0; i+1 < len(parts); i++ {
				if r, ok := rank[parts[i]+parts[i+1]]; ok && (best < 0 || r < bestRank) {
					best, bestRank = i, r
				}
			}
			if best < 0 {
				break
			}
			parts = slices.Replace(parts, best, best+2, parts[best]+parts[best+1])
		}
		for _, p := range parts {
			ids = append(ids, int32(rank[p]+numSpecial))
		}
	}
	return ids
}

func TestTekkenMatchesReference(t *testing.T) {
	ranks := trainTekkenRanks(t, tekkenCorpus, 700)
	if len(ranks) < 400 {
		t.Fatalf("trained only %d ranks", len(ranks))
	}
	specials := []string{"<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]"}
	spec := tekkenSpec{version: "v13", specials: specials, numSpecial: 40, inner: len(ranks) - 30, extra: 30}
	dir := t.TempDir()
	tok, err := LoadMistral(writeTekken(t, dir, ranks, spec))
	if err != nil {
		t.Fatal(err)
	}

	// The id layout.
	if got, want := tok.VocabSize(), spec.inner+spec.numSpecial; got != want {
		t.Errorf("VocabSize = %d, want default_vocab_size %d", got, want)
	}
	wantSpecial := make([]int32, spec.numSpecial)
	for i := range wantSpecial {
		wantSpecial[i] = int32(i)
	}
	if !slices.Equal(tok.AllSpecialIDs(), wantSpecial) {
		t.Errorf("AllSpecialIDs = %v, want 0..%d", tok.AllSpecialIDs(), spec.numSpecial-1)
	}
	for tokText, want := range map[string]int32{"<unk>": 0, "<s>": 1, "</s>": 2, "[TOOL_CALLS]": 5, "<SPECIAL_6>": 6, "<SPECIAL_39>": 39} {
		if id, ok := tok.TokenToID(tokText); !ok || id != want {
			t.Errorf("TokenToID(%q) = %d, %v; want %d", tokText, id, ok, want)
		}
	}
	if _, ok := tok.TokenToID("<SPECIAL_40>"); ok {
		t.Errorf("<SPECIAL_40> exists with 40 special tokens")
	}
	if tok.NumSpecialTokensToAdd() != 1 || !slices.Equal(tok.Encode(nil, "", true), []int32{1}) {
		t.Errorf("Encode(\"\", true) = %v, want [1] (BOS only)", tok.Encode(nil, "", true))
	}
	if id, ok := tok.TokenToID("a"); !ok || id != 'a'+int32(spec.numSpecial) {
		t.Errorf("byte 'a' has id %d, want %d", id, 'a'+spec.numSpecial)
	}

	// Encoding, against the plain reference.
	texts := strings.Split(tekkenCorpus, "\n")
	texts = append(texts, tekkenCorpus, "<s>[INST]hi[/INST]</s>", "  leading and trailing  ", "\r\n\r\n", "x",
		"unseen words: zygote quixotic 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ᄀᄁ", "ümlaut Über ÆØÅ ǅ")
	rng := rand.New(rand.NewPCG(9, 9))
	alphabet := []rune(tekkenCorpus + "\u0301\u00a0\x0c")
	for range 300 {
		n := 1 + rng.IntN(40)
		var b strings.Builder
		for range n {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, b.String())
	}
	maxID := int32(spec.inner + spec.numSpecial)
	for _, text := range texts {
		for _, addBOS := range []bool{false, true} {
			got := tok.Encode(nil, text, addBOS)
			want := referenceTekken(t, ranks, spec.inner, spec.numSpecial, 1, text, addBOS)
			if !slices.Equal(got, want) {
				t.Fatalf("Encode(%q, %v)\n got %v\nwant %v", text, addBOS, got, want)
			}
			for _, id := range got {
				if id >= maxID {
					t.Fatalf("Encode(%q) gave id %d past the vocabulary (a vocab entry beyond default_vocab_size was used)", text, id)
				}
			}
		}
		if got := tok.Decode(tok.Encode(nil, text, false), false); got != text {
			t.Fatalf("Decode(Encode(%q)) = %q", text, got)
		}
	}

	// Decoding: special tokens kept or dropped; each run of ordinary
	// tokens is decoded on its own.
	hello := tok.Encode(nil, "hello", false)
	ids := append(append([]int32{1}, hello...), 2)
	if got := tok.Decode(ids, false); got != "<s>hello</s>" {
		t.Errorf("Decode keep = %q", got)
	}
	if got := tok.Decode(ids, true); got != "hello" {
		t.Errorf("Decode skip = %q", got)
	}
	euro := []int32{0xE2 + 40, 0x82 + 40, 2, 0xAC + 40} // "€" cut by </s>
	if got := tok.Decode(euro, false); got != "\uFFFD</s>\uFFFD" {
		t.Errorf("Decode keep of a split character = %q", got)
	}
	if got := tok.Decode(euro, true); got != "\uFFFD\uFFFD" {
		t.Errorf("Decode skip of a split character = %q, want two replacement characters (runs decode apart)", got)
	}
	if got := tok.Decode(slices.Delete(slices.Clone(euro), 2, 3), true); got != "€" {
		t.Errorf("Decode of a whole character = %q", got)
	}
	lang := tok.Encode(nil, "lang:enHello", true)
	if got := tok.Decode(lang, true); got != "Hello" {
		t.Errorf("Decode skip of a lang prefix = %q, want it removed", got)
	}
	if got := tok.Decode(lang, false); got != "<s>lang:enHello" {
		t.Errorf("Decode keep of a lang prefix = %q", got)
	}
}

func TestTekkenLegacySpecials(t *testing.T) {
	ranks := trainTekkenRanks(t, tekkenCorpus, 300)
	dir := t.TempDir()
	tok, err := LoadMistral(writeTekken(t, dir, ranks, tekkenSpec{version: "v3", numSpecial: 25, inner: len(ranks)}))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range tekkenLegacySpecials {
		if id, ok := tok.TokenToID(s); !ok || id != int32(i) {
			t.Errorf("legacy special %q: id %d, %v; want %d", s, id, ok, i)
		}
	}
	if id, ok := tok.TokenToID("<SPECIAL_24>"); !ok || id != 24 {
		t.Errorf("filler <SPECIAL_24>: %d, %v", id, ok)
	}
	if got := tok.Encode(nil, "a", true); !slices.Equal(got, []int32{1, 'a' + 25}) {
		t.Errorf("Encode(a) = %v", got)
	}
}

func TestTekkenErrors(t *testing.T) {
	ranks := trainTekkenRanks(t, tekkenCorpus, 300)
	specials := []string{"<unk>", "<s>", "</s>"}
	tests := []struct {
		name string
		spec tekkenSpec
		edit func(m map[string]any)
		want string
	}{
		{"unknown version", tekkenSpec{version: "v99", specials: specials, numSpecial: 10, inner: 280}, nil, `unknown version "v99"`},
		{"newer without specials", tekkenSpec{version: "v11", numSpecial: 10, inner: 280}, nil, "must list its special_tokens"},
		{"too few vocab entries", tekkenSpec{version: "v7", specials: specials, numSpecial: 10, inner: 280}, func(m map[string]any) {
			m["vocab"] = m["vocab"].([]any)[:100]
		}, "vocab has 100 entries"},
		{"too many specials", tekkenSpec{version: "v7", specials: specials, numSpecial: 2, inner: 280}, nil, "more than default_num_special_tokens"},
		{"duplicate special", tekkenSpec{version: "v7", specials: []string{"<s>", "<s>"}, numSpecial: 4, inner: 280}, nil, `"<s>" appears twice`},
		{"no bos", tekkenSpec{version: "v7", specials: []string{"<unk>"}, numSpecial: 4, inner: 280}, nil, "lack <s>"},
		{"rank out of order", tekkenSpec{version: "v7", specials: specials, numSpecial: 10, inner: 280}, func(m map[string]any) {
			m["vocab"].([]any)[260].(map[string]any)["rank"] = 7
		}, "vocab entry 260 has rank 7"},
		{"bytes not first", tekkenSpec{version: "v7", specials: specials, numSpecial: 10, inner: 280}, func(m map[string]any) {
			m["vocab"].([]any)[3].(map[string]any)["token_bytes"] = "YQ=="
		}, "first 256 entries must be the single bytes"},
		{"bad pattern", tekkenSpec{version: "v7", specials: specials, numSpecial: 10, inner: 280}, func(m map[string]any) {
			m["config"].(map[string]any)["pattern"] = "(["
		}, "pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeTekken(t, dir, ranks, tt.spec)
			if tt.edit != nil {
				data, _ := os.ReadFile(path)
				var m map[string]any
				if err := json.Unmarshal(data, &m); err != nil {
					t.Fatal(err)
				}
				tt.edit(m)
				data, _ = json.Marshal(m)
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := LoadMistral(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadMistral = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadMistralFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.model.v3"), []byte("spm"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadMistral(dir); err == nil || !strings.Contains(err.Error(), "SentencePiece") {
		t.Errorf("LoadMistral(SentencePiece dir) = %v, want an error naming SentencePiece", err)
	}
	if _, err := LoadMistral(filepath.Join(dir, "tokenizer.model.v3")); err == nil {
		t.Errorf("LoadMistral(tokenizer.model.v3) accepted a non-tekken file")
	}
	if _, err := LoadMistral(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no tekken.json") {
		t.Errorf("LoadMistral(empty dir) = %v", err)
	}
	if IsMistralDir(dir) {
		t.Errorf("IsMistralDir without consolidated weights")
	}
	if err := os.WriteFile(filepath.Join(dir, "consolidated.safetensors"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !IsMistralDir(dir) {
		t.Errorf("IsMistralDir with consolidated weights and tokenizer.model.v3")
	}
	// ResolveMistral: a local path as is; a hub id from the cache.
	cache := t.TempDir()
	snap := filepath.Join(cache, "models--org--m", "snapshots", "abc1234")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cache, "models--org--m", "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "models--org--m", "refs", "main"), []byte("abc1234\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "tekken.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ResolveMistral("org/m", ResolveOptions{CacheDir: cache, Offline: true}); err != nil || got != filepath.Join(snap, "tekken.json") {
		t.Errorf("ResolveMistral(org/m) = %q, %v", got, err)
	}
	if _, err := ResolveMistral("org/other", ResolveOptions{CacheDir: cache, Offline: true}); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("ResolveMistral offline miss = %v", err)
	}
	if got, err := ResolveMistral(dir, ResolveOptions{}); err != nil || got != dir {
		t.Errorf("ResolveMistral(local dir) = %q, %v", got, err)
	}
}

func BenchmarkTekkenEncode(b *testing.B) {
	ranks := trainTekkenRanks(b, tekkenCorpus, 700)
	dir := b.TempDir()
	tok, err := LoadMistral(writeTekken(b, dir, ranks, tekkenSpec{version: "v13", specials: []string{"<unk>", "<s>", "</s>"}, numSpecial: 10, inner: len(ranks)}))
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat(tekkenCorpus, 4)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	var dst []int32
	for b.Loop() {
		dst = tok.Encode(dst[:0], text, true)
	}
}

// FuzzParseTekken: tekken.json comes from the hub; no file may crash the
// loader, and a file it accepts encodes and decodes any text.
func FuzzParseTekken(f *testing.F) {
	ranks := trainTekkenRanks(f, tekkenCorpus, 270)
	dir := f.TempDir()
	valid, err := os.ReadFile(writeTekken(f, dir, ranks, tekkenSpec{version: "v7", specials: []string{"<s>"}, numSpecial: 3, inner: 270}))
	if err != nil {
		f.Fatal(err)
	}
	legacy, err := os.ReadFile(writeTekken(f, dir, ranks, tekkenSpec{version: "v3", numSpecial: 20, inner: 260}))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{string(valid), string(legacy), "{}", `{"config":{"version":"v7","default_vocab_size":-5,"default_num_special_tokens":1}}`,
		`{"config":{"version":"v13","default_vocab_size":16777216,"default_num_special_tokens":1},"vocab":[],"special_tokens":[]}`, "null", "[1]"} {
		f.Add([]byte(seed), "Hello <s> wörld 😀")
	}
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		tok, err := parseTekken(data)
		if err != nil {
			return
		}
		ids := tok.Encode(nil, text, true)
		for _, id := range ids {
			if int(id) >= tok.VocabSize() {
				t.Fatalf("id %d past the vocabulary of %d", id, tok.VocabSize())
			}
		}
		_ = tok.Decode(ids, false)
		_ = tok.Decode(ids, true)
	})
}
