package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tokenizersDir is where scripts/fetch-tokenizers.sh puts the real
// tokenizer files (git-ignored); STAMPEDE_TOKENIZERS_DIR overrides it.
func tokenizersDir() string {
	if d := os.Getenv("STAMPEDE_TOKENIZERS_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "testdata", "tokenizers")
}

// golden is one file of testdata/golden, written by testdata/gen/golden.mjs
// from Hugging Face's own tokenizer.
type golden struct {
	Oracle    string `json:"oracle"`
	File      string `json:"file"`
	VocabSize int    `json:"vocab_size"`
	Cases     []struct {
		Label       string  `json:"label"`
		Text        string  `json:"text"`
		IDs         []int32 `json:"ids"`
		SpecialIDs  []int32 `json:"special_ids"`
		Decoded     string  `json:"decoded"`
		DecodedSkip string  `json:"decoded_skip"`
	} `json:"cases"`
	Decodes []struct {
		IDs      []int32 `json:"ids"`
		Text     string  `json:"text"`
		TextSkip string  `json:"text_skip"`
	} `json:"decodes"`
}

var loaded = map[string]*Tokenizer{}

// familyTokenizer loads a family's tokenizer file, skipping the test when
// it has not been fetched (and failing when STAMPEDE_REQUIRE_TOKENIZERS=1
// and no tokenizer file at all is present).
func familyTokenizer(t testing.TB, file string) *Tokenizer {
	t.Helper()
	if tok, ok := loaded[file]; ok {
		return tok
	}
	path := filepath.Join(tokenizersDir(), file)
	if strings.HasPrefix(file, "testdata/") {
		path = file // committed in this package's testdata
	}
	if name, ok := strings.CutPrefix(file, "variant:"); ok {
		path = deriveVariant(t, name)
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s absent (run scripts/fetch-tokenizers.sh): %v", path, err)
	}
	tok, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	loaded[file] = tok
	return tok
}

// deriveVariant writes the tokenizer.json of a variant (testdata/golden/
// variants.json): its base file (fetched, or in this package's testdata
// when it starts "testdata/") with top-level components and model fields
// replaced and added tokens appended, as golden.mjs builds it.
func deriveVariant(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "golden", "variants.json"))
	if err != nil {
		t.Fatal(err)
	}
	var specs struct {
		Variants map[string]struct {
			Base        string                     `json:"base"`
			Set         map[string]json.RawMessage `json:"set"`
			ModelSet    map[string]json.RawMessage `json:"model_set"`
			AddedTokens []json.RawMessage          `json:"added_tokens"`
		} `json:"variants"`
	}
	if err := json.Unmarshal(data, &specs); err != nil {
		t.Fatal(err)
	}
	spec, ok := specs.Variants[name]
	if !ok {
		t.Fatalf("variant %q is not in variants.json", name)
	}
	basePath := filepath.Join(tokenizersDir(), spec.Base)
	if strings.HasPrefix(spec.Base, "testdata/") {
		basePath = spec.Base
	}
	base, err := os.ReadFile(basePath)
	if err != nil {
		t.Skipf("%s absent (run scripts/fetch-tokenizers.sh): %v", basePath, err)
	}
	var file map[string]json.RawMessage
	if err := json.Unmarshal(base, &file); err != nil {
		t.Fatal(err)
	}
	for key, raw := range spec.Set {
		file[key] = raw
	}
	if len(spec.ModelSet) > 0 {
		var model map[string]json.RawMessage
		if err := json.Unmarshal(file["model"], &model); err != nil {
			t.Fatal(err)
		}
		for key, raw := range spec.ModelSet {
			model[key] = raw
		}
		file["model"], _ = json.Marshal(model)
	}
	var added []json.RawMessage
	if err := json.Unmarshal(file["added_tokens"], &added); err != nil {
		t.Fatal(err)
	}
	file["added_tokens"], _ = json.Marshal(append(added, spec.AddedTokens...))
	out, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTokenizerFilesPresent(t *testing.T) {
	matches, _ := filepath.Glob(filepath.Join(tokenizersDir(), "*.json"))
	if len(matches) > 0 {
		return
	}
	if os.Getenv("STAMPEDE_REQUIRE_TOKENIZERS") == "1" {
		t.Fatalf("STAMPEDE_REQUIRE_TOKENIZERS=1 but %s holds no tokenizer files; run scripts/fetch-tokenizers.sh", tokenizersDir())
	}
	t.Skipf("no tokenizer files in %s; run scripts/fetch-tokenizers.sh", tokenizersDir())
}

func TestGolden(t *testing.T) {
	dir := filepath.Join("testdata", "golden")
	if d := os.Getenv("STAMPEDE_GOLDEN_DIR"); d != "" {
		dir = d // a larger corpus from testdata/gen/golden.mjs with GOLDEN_OUT
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "variants.json" })
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		family := filepath.Base(file[:len(file)-len(".json")])
		t.Run(family, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var g golden
			if err := json.Unmarshal(data, &g); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			tok := familyTokenizer(t, g.File)
			if got := tok.VocabSize(); got != g.VocabSize {
				t.Errorf("VocabSize() = %d, want %d", got, g.VocabSize)
			}
			failures := 0
			for _, c := range g.Cases {
				if c.Label == "prose" {
					// Special tokens are what addSpecial adds to ordinary text.
					if got, want := tok.NumSpecialTokensToAdd(), len(c.SpecialIDs)-len(c.IDs); got != want {
						t.Errorf("NumSpecialTokensToAdd() = %d, want %d", got, want)
					}
				}
				key := family + "/" + c.Label
				if got := tok.Encode(nil, c.Text, false); !slices.Equal(got, c.IDs) {
					failures++
					t.Errorf("%s: Encode(%q)\n got %v\nwant %v", key, c.Text, got, c.IDs)
				}
				if got := tok.Encode(nil, c.Text, true); !slices.Equal(got, c.SpecialIDs) {
					failures++
					t.Errorf("%s: Encode(%q, addSpecial)\n got %v\nwant %v", key, c.Text, got, c.SpecialIDs)
				}
				if got := tok.Decode(c.SpecialIDs, false); got != c.Decoded {
					t.Errorf("%s: Decode(%v) = %q, want %q", key, c.SpecialIDs, got, c.Decoded)
				}
				if got := tok.Decode(c.SpecialIDs, true); got != c.DecodedSkip {
					t.Errorf("%s: Decode(%v, skip) = %q, want %q", key, c.SpecialIDs, got, c.DecodedSkip)
				}
				if failures > 10 {
					t.Fatal("too many failures")
				}
			}
			for i, d := range g.Decodes {
				if got := tok.Decode(d.IDs, false); got != d.Text {
					t.Errorf("decode %d: Decode(%v) = %q, want %q", i, d.IDs, got, d.Text)
				}
				if got := tok.Decode(d.IDs, true); got != d.TextSkip {
					t.Errorf("decode %d: Decode(%v, skip) = %q, want %q", i, d.IDs, got, d.TextSkip)
				}
			}
		})
	}
}
