package tokenizer

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stampede-bench/stampede/datasets"
	"golang.org/x/text/unicode/norm"
)

var _ datasets.Tokenizer = (*Tokenizer)(nil)

// TestSplitBehaviors follows Hugging Face's own examples for
// SplitDelimiterBehavior, splitting "the-final--countdown" on '-'.
func TestSplitBehaviors(t *testing.T) {
	tests := []struct {
		behavior behavior
		invert   bool
		want     []string
	}{
		{removed, false, []string{"the", "final", "countdown"}},
		{isolated, false, []string{"the", "-", "final", "-", "-", "countdown"}},
		{mergedWithPrevious, false, []string{"the-", "final-", "-", "countdown"}},
		{mergedWithNext, false, []string{"the", "-final", "-", "-countdown"}},
		{contiguous, false, []string{"the", "-", "final", "--", "countdown"}},
		{removed, true, []string{"-", "-", "-"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d/invert=%v", tc.behavior, tc.invert), func(t *testing.T) {
			p := splitPreTokenizer{pattern: literalMatcher{"-"}, behavior: tc.behavior, invert: tc.invert}
			var got []string
			for _, pc := range p.appendPieces(nil, piece{"the-final--countdown", true}, &workspace{}) {
				got = append(got, pc.text)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPreTokenizers(t *testing.T) {
	tests := []struct {
		name string
		pre  preTokenizer
		in   string
		want []string
	}{
		{"metaspace always", metaspacePreTokenizer{"▁", prependAlways, true}, "Hey friend  there", []string{"▁Hey", "▁friend", "▁", "▁there"}},
		{"metaspace never", metaspacePreTokenizer{"▁", prependNever, true}, "Hey friend", []string{"Hey", "▁friend"}},
		{"metaspace no split", metaspacePreTokenizer{"▁", prependAlways, false}, "a b", []string{"▁a▁b"}},
		{"digits contiguous", runeSplitPreTokenizer{isNumeric, contiguous}, "abc123de4", []string{"abc", "123", "de", "4"}},
		{"digits individual", runeSplitPreTokenizer{isNumeric, isolated}, "a12", []string{"a", "1", "2"}},
		{"digits unicode", runeSplitPreTokenizer{isNumeric, contiguous}, "x٣٤½y", []string{"x", "٣٤½", "y"}},
		{"punctuation", runeSplitPreTokenizer{isPunctuation, isolated}, "Hi, there!»", []string{"Hi", ",", " there", "!", "»"}},
		{"whitespace", whitespacePreTokenizer{}, "Hey man!! How're_you?", []string{"Hey", "man", "!!", "How", "'", "re_you", "?"}},
		{"whitespace split", runeSplitPreTokenizer{isSpaceRune, removed}, " a\tb\u3000c ", []string{"a", "b", "c"}},
		{"bert", bertPreTokenizer{}, "Hey, don't!", []string{"Hey", ",", "don", "'", "t", "!"}},
		{"byte level prefix", byteLevelPreTokenizer{addPrefixSpace: true, useRegex: true}, "Hello  world", []string{" Hello", " ", " world"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, pc := range tc.pre.appendPieces(nil, piece{tc.in, true}, &workspace{}) {
				got = append(got, pc.text)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestNormalizers(t *testing.T) {
	bert := bertNormalizer{cleanText: true, chineseChars: true, stripAccents: true, lowercase: true}
	tests := []struct {
		name string
		n    normalizer
		in   string
		want string
	}{
		{"nfc", unicodeNormalizer{norm.NFC}, "e\u0301", "é"},
		{"nfkc", unicodeNormalizer{norm.NFKC}, "ﬁ①", "fi1"},
		{"lowercase", lowercaseNormalizer{}, "HeLLo İ ΣΑΣ", "hello i\u0307 σασ"},
		{"strip", stripNormalizer{left: true, right: true}, " \t x y \n", "x y"},
		{"strip left", stripNormalizer{left: true}, "  x  ", "x  "},
		{"prepend", prependNormalizer{"▁"}, "hi", "▁hi"},
		{"prepend empty", prependNormalizer{"▁"}, "", ""},
		{"replace", replaceNormalizer{literalMatcher{" "}, "▁"}, "a b  c", "a▁b▁▁c"},
		{"bert", bert, "Héllo\tWORLD\u0000你好\u200b", "hello world 你  好 "},
		{"sequence", sequenceNormalizer{prependNormalizer{"▁"}, replaceNormalizer{literalMatcher{" "}, "▁"}}, "a b", "▁a▁b"},
		{"strip accents", stripAccentsNormalizer{}, "e\u0301a\u093f", "ea"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.n.normalize(tc.in); got != tc.want {
				t.Errorf("normalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestDecoders(t *testing.T) {
	tests := []struct {
		name string
		d    decoder
		in   []string
		want string
	}{
		{"byte level", byteLevelDecoder{}, []string{"Hello", "Ġworld", "Ċ"}, "Hello world\n"},
		{"byte level lossy", byteLevelDecoder{}, []string{"a", "ì", "Ģ", "b"}, "a\uFFFDb"},
		{"byte level foreign rune", byteLevelDecoder{}, []string{"<｜end｜>", "Ġx"}, "<｜end｜> x"},
		{"byte fallback", sequenceDecoder{byteFallbackDecoder{}, fuseDecoder{}}, []string{"a", "<0xE2>", "<0x82>", "<0xAC>", "b"}, "a€b"},
		{"byte fallback invalid", sequenceDecoder{byteFallbackDecoder{}, fuseDecoder{}}, []string{"<0xE2>", "<0x82>", "x"}, "\uFFFD\uFFFDx"},
		{"llama2", sequenceDecoder{replaceDecoder{literalMatcher{"▁"}, " "}, byteFallbackDecoder{}, fuseDecoder{}, stripDecoder{' ', 1, 0}},
			[]string{"▁Hello", "▁", "▁world"}, "Hello  world"},
		{"metaspace", metaspaceDecoder{'▁', prependAlways}, []string{"▁Hey", "▁friend"}, "Hey friend"},
		{"wordpiece", wordPieceDecoder{"##", true}, []string{"un", "##able", "to", "go", ".", "do", "n't"}, "unable to go. don't"},
		{"strip", stripDecoder{'x', 1, 2}, []string{"xxaxx", "xb"}, "xab"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(tc.d.decodeChain(tc.in), ""); got != tc.want {
				t.Errorf("decode %q = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestLossyUTF8 pins Rust's from_utf8_lossy: one U+FFFD per maximal
// invalid subsequence.
func TestLossyUTF8(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc", "abc"},
		{"\xe2\x82", "\uFFFD"},
		{"\xe2\x82x", "\uFFFDx"},
		{"\xe2\xe2\x82\xac", "\uFFFD€"},
		{"\xf0\x9f\x98", "\uFFFD"},
		{"\xf0\x9f", "\uFFFD"},
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // surrogates: ED must be followed by 80-9F
		{"\xc0\xaf", "\uFFFD\uFFFD"},
		{"\xe0\x80\x80", "\uFFFD\uFFFD\uFFFD"},
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"\xff", "\uFFFD"},
		{"\xef\xbf\xbd", "\uFFFD"},
	}
	for _, tc := range tests {
		if got := string(appendLossyUTF8(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("lossy(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAddedTokenMatching(t *testing.T) {
	tokens := []addedToken{
		{ID: 10, Content: "<s>"},
		{ID: 11, Content: "<s>x"},
		{ID: 12, Content: "[L]", LStrip: true},
		{ID: 13, Content: "[R]", RStrip: true},
		{ID: 14, Content: "word", SingleWord: true},
	}
	contents := make([]string, len(tokens))
	for i, at := range tokens {
		contents[i] = at.Content
	}
	trie := newTokenTrie(contents, func(int) bool { return true })
	tests := []struct {
		in   string
		want []string // "#id" for tokens
	}{
		{"a<s>b", []string{"a", "#10", "b"}},
		{"<s>xy", []string{"#11", "y"}},
		{"a  [L] b", []string{"a", "#12", " b"}},
		{"a [R]  b", []string{"a ", "#13", "b"}},
		{"a word b", []string{"a ", "#14", " b"}},
		{"swordfish", []string{"swordfish"}},
		{"", []string{""}},
	}
	for _, tc := range tests {
		var got []string
		for _, m := range trie.appendSplits(nil, tc.in, tokens) {
			if m.token >= 0 {
				got = append(got, fmt.Sprintf("#%d", tokens[m.token].ID))
			} else {
				got = append(got, tc.in[m.start:m.end])
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestUnsupportedComponents(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"wordlevel", `{"model":{"type":"WordLevel","vocab":{"a":0},"unk_token":"a"}}`, "WordLevel"},
		{"normalizer", `{"normalizer":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{},"merges":[]}}`, `normalizer "ByteLevel"`},
		{"pre-tokenizer", `{"pre_tokenizer":{"type":"UnicodeScripts"},"model":{"type":"BPE","vocab":{},"merges":[]}}`, `pre-tokenizer "UnicodeScripts"`},
		{"decoder", `{"decoder":{"type":"CTC"},"model":{"type":"BPE","vocab":{},"merges":[]}}`, `decoder "CTC"`},
		{"post-processor", `{"post_processor":{"type":"Custom"},"model":{"type":"BPE","vocab":{},"merges":[]}}`, `post-processor "Custom"`},
		{"dropout", `{"model":{"type":"BPE","dropout":0.1,"vocab":{},"merges":[]}}`, "dropout"},
		{"intersection", `{"pre_tokenizer":{"type":"Split","pattern":{"Regex":"[a&&[^b]]"},"behavior":"Isolated"},"model":{"type":"BPE","vocab":{},"merges":[]}}`, "&&"},
		{"bad merge", `{"model":{"type":"BPE","vocab":{"a":0},"merges":["a b"]}}`, "merge 0"},
		{"not json", `{"model":`, "not a tokenizer.json"},
		{"huge id", `{"model":{"type":"BPE","vocab":{"a":2000000000},"merges":[]}}`, "outside"},
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

func TestEncodeBatchConcurrent(t *testing.T) {
	tok, err := Load("testdata/tiny/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, 200)
	for i := range texts {
		texts[i] = strings.Repeat(fmt.Sprintf("request %d streams tokens; ", i), i%7+1)
	}
	got := tok.EncodeBatch(texts, true)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0)+2; w++ {
		wg.Go(func() {
			for i, text := range texts {
				if want := tok.Encode(nil, text, true); !slices.Equal(got[i], want) {
					t.Errorf("EncodeBatch[%d] = %v, Encode = %v", i, got[i], want)
				}
			}
		})
	}
	wg.Wait()
}

// TestOlderUnicode pins the generated table's use: code points newer than
// Hugging Face's tables are neither punctuation nor marks nor controls.
func TestOlderUnicode(t *testing.T) {
	tests := []struct {
		r                      rune
		older, punct, mark, cf bool
	}{
		{'.', false, true, false, false},
		{'a', false, false, false, false},
		{'\u00bf', false, true, false, false}, // ¿
		{'\u0301', false, false, true, false}, // combining acute
		{'\u200b', false, false, false, true}, // zero-width space, Cf
		{0x0C84, true, false, false, false},   // Kannada siddham, Po since Unicode 11
		{0x0C04, true, false, false, false},   // Telugu anusvara above, Mn since Unicode 11
	}
	for _, tc := range tests {
		if got := inOlderUnicode(tc.r); got != tc.older {
			t.Errorf("inOlderUnicode(%U) = %v, want %v", tc.r, got, tc.older)
		}
		if got := isPunctuation(tc.r); got != tc.punct {
			t.Errorf("isPunctuation(%U) = %v, want %v", tc.r, got, tc.punct)
		}
		if got := isNonspacingMark(tc.r); got != tc.mark {
			t.Errorf("isNonspacingMark(%U) = %v, want %v", tc.r, got, tc.mark)
		}
		if got := isBertControl(tc.r); got != tc.cf {
			t.Errorf("isBertControl(%U) = %v, want %v", tc.r, got, tc.cf)
		}
	}
}

// TestAddedTokenIDs pins Hugging Face's id assignment on load: the ids in
// the file are ignored; vocabulary tokens keep theirs, new ones count up
// from the vocabulary size, repeats are dropped.
func TestAddedTokenIDs(t *testing.T) {
	tok, err := parseJSON([]byte(`{"added_tokens":[
		{"id":2000000000,"content":"<x>","special":true},
		{"id":7,"content":"b"},
		{"id":9,"content":"<y>"},
		{"id":10,"content":"<x>"}],
		"model":{"type":"BPE","vocab":{"a":0,"b":1,"<":2,">":3,"x":4,"y":5},"merges":[]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.Encode(nil, "a<x>b<y>", false), []int32{0, 6, 1, 7}; !slices.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	if got := tok.SpecialAddedIDs(); !slices.Equal(got, []int32{6}) {
		t.Errorf("SpecialAddedIDs() = %v, want [6]", got)
	}
}
