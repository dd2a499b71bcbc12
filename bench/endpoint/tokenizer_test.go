package endpoint

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/internal/py"
)

// writeByteTekken writes the smallest tekken.json: the 256 byte ranks and
// numSpecial special tokens, "<s>" at id 1.
func writeByteTekken(t *testing.T, dir string, numSpecial int) {
	t.Helper()
	var vocab []map[string]any
	for b := range 256 {
		vocab = append(vocab, map[string]any{"rank": b, "token_bytes": base64.StdEncoding.EncodeToString([]byte{byte(b)}), "token_str": nil})
	}
	data, err := json.Marshal(map[string]any{
		"config": map[string]any{"pattern": `\s+|\S+`, "num_vocab_tokens": 256,
			"default_vocab_size": 256 + numSpecial, "default_num_special_tokens": numSpecial, "version": "v13"},
		"vocab":          vocab,
		"special_tokens": []map[string]any{{"rank": 0, "token_str": "<unk>"}, {"rank": 1, "token_str": "<s>"}, {"rank": 2, "token_str": "</s>"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tekken.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTokenizerModes(t *testing.T) {
	const n = 10
	tekkenDir := t.TempDir()
	writeByteTekken(t, tekkenDir, n)
	want := []int32{1, 'a' + n, 'b' + n}

	tok, path, err := loadTokenizerMode("mistral", tekkenDir)
	if err != nil {
		t.Fatalf("mistral: %v", err)
	}
	if got := tok.Encode(nil, "ab", true); !slices.Equal(got, want) || path != "" {
		t.Errorf("mistral: Encode(ab) = %v (path %q), want %v", got, path, want)
	}

	// auto: a tekken.json alone is not a Mistral checkpoint; with
	// consolidated weights beside it, it is.
	if _, _, err := loadTokenizerMode("auto", tekkenDir); err == nil {
		t.Errorf("auto loaded a directory holding only tekken.json")
	}
	if err := os.WriteFile(filepath.Join(tekkenDir, "consolidated.safetensors"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tok, _, err = loadTokenizerMode("auto", tekkenDir)
	if err != nil {
		t.Fatalf("auto on a Mistral checkpoint: %v", err)
	}
	if got := tok.Encode(nil, "ab", true); !slices.Equal(got, want) {
		t.Errorf("auto on a Mistral checkpoint: Encode(ab) = %v, want %v", got, want)
	}
	for _, mode := range []string{"hf", "slow"} {
		if _, _, err := loadTokenizerMode(mode, tekkenDir); err == nil {
			t.Errorf("%s loaded tekken.json as a Hugging Face tokenizer", mode)
		}
	}

	// mistral on something else names the flag.
	if _, _, err := loadTokenizerMode("mistral", t.TempDir()); err == nil || !strings.Contains(err.Error(), "--tokenizer-mode mistral") {
		t.Errorf("mistral without tekken.json: %v", err)
	}
	// A mode vLLM does not know fails as vLLM's registry does.
	_, _, err = loadTokenizerMode("foo", tekkenDir)
	var invalid *py.Error
	if !errors.As(err, &invalid) || invalid.Type != "ValueError" || invalid.Msg != "No tokenizer registered for tokenizer_mode='foo'." {
		t.Errorf("unknown mode: %#v", err)
	}
}

func TestTokenizerModeRefusals(t *testing.T) {
	for _, mode := range plan.RegisteredTokenizerModes {
		_, err := benchtest.ParseArgs([]string{"--tokenizer-mode", mode}, func(string) string { return "" })
		var u *py.UsageError
		if !errors.As(err, &u) || u.Msg != "--tokenizer-mode "+mode+" is not supported yet" {
			t.Errorf("--tokenizer-mode %s: %v, want a usage error naming the flag", mode, err)
		}
		if _, err := benchtest.ParseArgs([]string{"--tokenizer-mode", mode, "--skip-tokenizer-init"}, func(string) string { return "" }); err != nil {
			t.Errorf("--tokenizer-mode %s --skip-tokenizer-init: %v (no tokenizer is loaded, as in Python)", mode, err)
		}
	}
	for _, mode := range builtTokenizerModes {
		if _, err := benchtest.ParseArgs([]string{"--tokenizer-mode", mode}, func(string) string { return "" }); err != nil {
			t.Errorf("--tokenizer-mode %s: %v", mode, err)
		}
	}
}
