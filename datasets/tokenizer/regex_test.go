package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// withSplitPattern writes the tiny tokenizer with its Llama-3 split
// pattern replaced by pattern, and returns the file's path.
func withSplitPattern(t *testing.T, pattern string) string {
	t.Helper()
	good, _ := json.Marshal(patternLlama3)
	bad, _ := json.Marshal(pattern)
	data := trainTinyTokenizer()
	if !bytes.Contains(data, good) {
		t.Fatal("the tiny tokenizer has no Llama-3 split pattern to replace")
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, bytes.Replace(data, good, bad, 1), 0o666); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBacktrackingPatternFailsTheLoad is crafted tokenizer.json files whose
// Split pattern takes exponential time on a run of letters: the load fails,
// naming the file and the pattern, instead of the run hanging on its first
// prompt. (x|xx)+[0-9] blows up on x's alone, which the fixed probe
// characters do not hold: the pattern's own literals find it, and the
// prefix pairs find y(x|xx)+z.
func TestBacktrackingPatternFailsTheLoad(t *testing.T) {
	for _, crafted := range []string{
		`(\p{L}|\p{L}\p{L})+[0-9]|\s+|.`,
		`(x|xx)+[0-9]|\s+|.`,
		`(?:\x{4E01}|\x{4E01}\x{4E01})+!|.`,
		`y(x|xx)+z|\s+|.`,
	} {
		if _, err := compileRegex(crafted); err != nil {
			t.Fatalf("the crafted pattern %q does not compile: %v", crafted, err)
		}
		path := withSplitPattern(t, crafted)
		_, err := Load(path)
		if err == nil {
			t.Errorf("%q, a pattern that backtracks without bound, loaded", crafted)
			continue
		}
		for _, want := range []string{path, strconv.Quote(crafted), "backtracks without bound"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
		}
	}
}

// TestEncodePastTheBoundIsAnError is a pattern that blows up on a text its
// probes do not resemble (three literals, then the x's): the encode that
// gives up appends nothing, panics no further, and leaves an error naming
// the pattern for Err (it panicked after 30 s on a 60-byte prompt).
func TestEncodePastTheBoundIsAnError(t *testing.T) {
	crafted := `abc(x|xx)+z|\s+|.`
	tok, err := Load(withSplitPattern(t, crafted))
	if err != nil {
		t.Fatalf("the probes refused %q, which only blows up after abc: %v", crafted, err)
	}
	bounded := 0
	for _, pt := range tok.pre {
		if split, ok := pt.(splitPreTokenizer); ok {
			if m, ok := split.pattern.(regexMatcher); ok {
				m.re.MatchTimeout = 20 * time.Millisecond // the test's bound, for 30 s
				bounded++
			}
		}
	}
	if bounded != 1 {
		t.Fatalf("found %d regex split pre-tokenizers, want 1", bounded)
	}
	if ids := tok.Encode(nil, "hello there", false); len(ids) == 0 || tok.Err() != nil {
		t.Fatalf("a sound text: %v, %v", ids, tok.Err())
	}
	prompt := "abc" + strings.Repeat("x", 57)
	if ids := tok.Encode([]int32{7}, prompt, true); len(ids) != 1 || ids[0] != 7 {
		t.Errorf("the encode that gave up appended %v to [7]; want nothing", ids)
	}
	var gaveUp *PatternError
	if err := tok.Err(); !errors.As(err, &gaveUp) || !strings.Contains(err.Error(), strconv.Quote(crafted)) || gaveUp.TextLen != len(prompt) {
		t.Errorf("Err() = %v; want a PatternError naming %q and the %d-byte text", err, crafted, len(prompt))
	}
	if batch := tok.EncodeBatch([]string{prompt, "hi"}, false); len(batch[0]) != 0 || len(batch[1]) == 0 {
		t.Errorf("EncodeBatch = %v; want nothing for the text that gives up, ids for the other", batch)
	}
}

// TestProbesPassSoundPatterns runs the probes over the regexes sound
// tokenizers use, including ones the hand-written scanners also know.
func TestProbesPassSoundPatterns(t *testing.T) {
	for _, p := range []string{
		patternLlama3,
		`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
		`\p{N}{1,3}`,
		`[\r\n]`,
		`\s?[!-/:-~！-／：-～‘-‟　-。]+`,
	} {
		re, err := compileRegex(p)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		if err := probeBacktracking(re); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
}

// FuzzPatternLiterals reads any pattern text, as a crafted tokenizer.json
// may hold: the literals are distinct, within their bounds, and of the
// pattern's own characters or escapes.
func FuzzPatternLiterals(f *testing.F) {
	for _, seed := range []string{
		patternLlama3, `(x|xx)+[0-9]|\s+|.`, `[\x{4E00}-\x{9FFF}]+`, `(?<name>ab)\k<name>`, `\`, `[`, `(?`, `\x{`, `\u12`,
		`a{2,}b`, `[]a]`, `[^]a]+`, `\p{L`, `(?i:ABC)`, `'s|'t`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		chars, strs := patternLiterals(pattern)
		if len(chars) > maxProbeLiterals || len(strs) > maxProbeStrings {
			t.Fatalf("%d literals, %d strings: past the bounds", len(chars), len(strs))
		}
		seen := map[rune]bool{}
		for _, c := range chars {
			if seen[c] {
				t.Fatalf("literal %q twice in %q", c, chars)
			}
			seen[c] = true
		}
		for _, s := range strs {
			if utf8.RuneCountInString(s) < 2 {
				t.Fatalf("literal string %q of fewer than two characters", s)
			}
		}
		if n := len(patternProbes(pattern)); n > maxProbeLiterals+maxProbeStrings+maxProbePrefixes*maxProbeLiterals {
			t.Fatalf("%d probes", n)
		}
	})
}

// The literals of the repro pattern and of escapes.
func TestPatternLiterals(t *testing.T) {
	for _, c := range []struct {
		pattern string
		chars   string
		strs    []string
	}{
		{`(x|xx)+[0-9]|\s+|.`, "x09", []string{"xx"}},
		{`'s|'t|'re| ?\p{L}+`, "'stre ", []string{"'s", "'t", "'re"}},
		{`\.\x{4E01}\u00e9\d[a\]-]`, ".丁éa]", []string{".丁é"}},
		{`(?:ab|(?<n>c))\k<n>{2,3}`, "abc", []string{"ab"}},
	} {
		chars, strs := patternLiterals(c.pattern)
		if string(chars) != c.chars || !slices.Equal(strs, c.strs) {
			t.Errorf("patternLiterals(%q) = %q, %q; want %q, %q", c.pattern, string(chars), strs, c.chars, c.strs)
		}
	}
}
