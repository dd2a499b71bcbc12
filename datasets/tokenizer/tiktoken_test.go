package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTiktokenMatchesJSON checks Llama-3's .tiktoken file against its
// tokenizer.json, which Hugging Face converted from it: every golden text
// must encode the same both ways.
func TestTiktokenMatchesJSON(t *testing.T) {
	dir := filepath.Join(tokenizersDir(), "meta-llama-3-8b-instruct")
	if _, err := os.Stat(filepath.Join(dir, "tiktoken.model")); err != nil {
		t.Skipf("%s absent (run scripts/fetch-tokenizers.sh)", dir)
	}
	tik, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	data, err := os.ReadFile(filepath.Join("testdata", "golden", "llama3.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if !tik.CleanUpTokenizationSpaces() {
		t.Error("CleanUpTokenizationSpaces() = false; Llama-3's tokenizer_config.json sets it")
	}
	if tik.VocabSize() != g.VocabSize {
		t.Errorf("VocabSize() = %d, want %d", tik.VocabSize(), g.VocabSize)
	}
	for _, c := range g.Cases {
		if got := tik.Encode(nil, c.Text, true); !slices.Equal(got, c.SpecialIDs) {
			t.Errorf("%s: Encode(%q)\n got %v\nwant %v", c.Label, c.Text, got, c.SpecialIDs)
		}
		// Its tokenizer_config.json sets clean_up_tokenization_spaces, so
		// Decode is transformers' decode: the library's, cleaned up.
		if got, want := tik.Decode(c.SpecialIDs, true), cleanUpSpaces(c.DecodedSkip); got != want {
			t.Errorf("%s: Decode = %q, want %q", c.Label, got, want)
		}
	}
}

func TestTiktokenRejects(t *testing.T) {
	kimi := filepath.Join(tokenizersDir(), "kimi-k2-instruct")
	if _, err := os.Stat(kimi); err == nil {
		_, err := Load(kimi)
		if err == nil || !strings.Contains(err.Error(), "&&") {
			t.Errorf("Load(Kimi-K2) error = %v, want one naming the && class intersection", err)
		}
	}
	dir := t.TempDir()
	for name, content := range map[string]string{
		"unknown.tiktoken": "YQ== 0\nYg== 1\n",
		"bad.tiktoken":     "YQ== zero\n",
		"sp.model":         "\x0a\x0b\x0a\x05<unk>\x15\x00\x00\x00\x00",
		"b64.tiktoken":     "!!!! 0\n",
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(content), 0o644)
		if _, err := Load(path); err == nil {
			t.Errorf("Load(%s) succeeded", name)
		}
	}
}
