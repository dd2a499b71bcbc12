package tokenizer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBacktrackingPatternFailsTheLoad is a crafted tokenizer.json whose
// Split pattern takes exponential time on a run of letters: the load fails,
// naming the file and the pattern, instead of the run hanging on its first
// prompt.
func TestBacktrackingPatternFailsTheLoad(t *testing.T) {
	crafted := `(\p{L}|\p{L}\p{L})+[0-9]|\s+|.`
	if _, err := compileRegex(crafted); err != nil {
		t.Fatalf("the crafted pattern does not compile: %v", err)
	}
	good, _ := json.Marshal(patternLlama3)
	bad, _ := json.Marshal(crafted)
	data := trainTinyTokenizer()
	if !bytes.Contains(data, good) {
		t.Fatal("the tiny tokenizer has no Llama-3 split pattern to replace")
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, bytes.Replace(data, good, bad, 1), 0o666); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil {
		t.Fatal("a pattern that backtracks without bound loaded")
	}
	for _, want := range []string{path, strconv.Quote(crafted), "backtracks without bound"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
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
