package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"
)

// scannerSeeds are the inputs that broke regex engines and ports before:
// newline runs, lookahead at the end, contractions, marks, digits.
var scannerSeeds = []string{
	"", " ", "  ", "\n  \n", "a\n  \nb", " \n\n x", "Hello world", "  leading", "trailing  ",
	"I'm you'LL we'VE he'd it's", "'s'S 'x", "12345 1,234.5 ٣٤٥", "a\r\n\r\nb\t\t c",
	"!!!\n\n///", " !x", " \u00a0\u3000x", "e\u0301\u0301 \u0301x", "ǅungla ǅ", "ΣΑΣ σας", "東京タワー", "👨‍👩‍👧 🇫🇷",
	"abc\u200bdef", "CamelCaseWORDSand lower", "x'LL'd'", "\t\n\v\f\r\u0085\u2028\u2029 end",
	// Unicode 16 letters, numbers, marks and symbols Go's tables lack.
	"a\U00013460\U000143FAb \u1C89\u1C8Ax \U00010D40\U00010D49 \u0897\U00010D69 \U0001CC00!\U00011380's",
}

// FuzzScanners proves every hand-written scanner equal to regexp2 running
// the pattern it replaces.
func FuzzScanners(f *testing.F) {
	for _, s := range scannerSeeds {
		f.Add(s)
	}
	patterns := []string{patternLlama3, patternQwen, patternO200k, patternGPT2}
	regexes := make([]regexMatcher, len(patterns))
	scanners := make([]matcher, len(patterns))
	for i, p := range patterns {
		re, err := compileRegex(p)
		if err != nil {
			f.Fatal(err)
		}
		regexes[i] = regexMatcher{re}
		scanners[i], _ = knownScanner(p)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // Encode makes text valid UTF-8 before splitting
		}
		for i := range patterns {
			want := regexes[i].appendMatches(nil, s)
			got := scanners[i].appendMatches(nil, s)
			if !slices.Equal(got, want) {
				t.Fatalf("pattern %d on %q:\nscanner %v\nregexp2 %v", i, s, pieces(s, got), pieces(s, want))
			}
		}
	})
}

func pieces(s string, spans []span) []string {
	out := make([]string, len(spans))
	for i, sp := range spans {
		out[i] = s[sp.start:sp.end]
	}
	return out
}

// FuzzParseJSON feeds tokenizer.json parsing (files come from the network
// when downloaded from the hub) arbitrary bytes: it may fail, not panic.
func FuzzParseJSON(f *testing.F) {
	f.Add([]byte(tinyJSON))
	f.Add([]byte(`{"model":{"type":"WordPiece","vocab":{"[UNK]":0,"a":1,"##b":2},"unk_token":"[UNK]"},"normalizer":{"type":"BertNormalizer"},"pre_tokenizer":{"type":"BertPreTokenizer"}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[["a","a"]]}}`))
	f.Add([]byte(`{"model":{"vocab":{"\u00e9\ud83d\ude00":1}, "merges": []}, "added_tokens": [{"id": 2, "content": "x"}]}`))
	f.Add([]byte(`{"model":null}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":["a b c"]}}`))
	f.Add([]byte(`{"model":{"type":"Unigram","unk_id":0,"byte_fallback":true,"vocab":[["<unk>",0],["\u2581H",-1.5],["<0x21>",-2e1]]},"pre_tokenizer":{"type":"Metaspace"}}`))
	f.Add([]byte(`{"normalizer":{"type":"Precompiled","precompiled_charsmap":"CAAAAAAAAAAAAAAAYQA="},"model":{"vocab":[["a",0]]}}`))
	if data, err := os.ReadFile(filepath.Join("testdata", "tiny", "tokenizer.json")); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := parseJSON(data)
		if err != nil {
			return
		}
		ids := tok.Encode(nil, "Hello, world! <s> 123", true)
		tok.Decode(ids, false)
	})
}

// FuzzRoundTrip checks that byte-level BPE loses nothing: decoding the
// encoding of any valid text gives the text back.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range scannerSeeds {
		f.Add(s)
	}
	f.Add("<|begin_of_text|>text<|end_of_text|>")
	tok, err := Load(filepath.Join("testdata", "tiny", "tokenizer.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		ids := tok.Encode(nil, s, false)
		if got := tok.Decode(ids, false); got != s {
			t.Fatalf("Decode(Encode(%q)) = %q (ids %v)", s, got, ids)
		}
	})
}

// FuzzParseTiktoken feeds .tiktoken parsing arbitrary bytes.
func FuzzParseTiktoken(f *testing.F) {
	f.Add([]byte("IQ== 0\nIg== 1\n\nIw== 2"))
	f.Add([]byte("YQ== -1\n"))
	f.Add([]byte("!!! 0\n"))
	f.Add([]byte("\x0a\x0b<unk>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ranks, err := parseTiktoken(data)
		if err == nil {
			tiktokenMerges(ranks)
		}
	})
}
