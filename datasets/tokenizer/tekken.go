package tokenizer

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stampede-bench/stampede/internal/hfenv"
)

// Mistral's tekken.json, as mistral_common's Tekkenizer reads it (vLLM's
// --tokenizer-mode mistral):
//
//   - config.default_num_special_tokens (n) special tokens take ids 0..n-1:
//     those listed in special_tokens (their rank is their id), then fillers
//     "<SPECIAL_i>" up to n. Files of version v7 or older may omit the
//     list and get the 20 tokens of the old layout.
//   - config.default_vocab_size is the whole vocabulary; the first
//     default_vocab_size - n entries of vocab are tiktoken ranks (base64
//     token_bytes, rank = position, ranks 0..255 the single bytes), and
//     rank r is id r + n. Later vocab entries are not used.
//   - Text is split with config.pattern and byte-pair encoded as tiktoken
//     does. Special tokens are never recognised in text: "<s>" in a prompt
//     is three ordinary tokens.
//   - Encoding with special tokens adds only BOS ("<s>"), as transformers'
//     MistralCommonBackend does in test mode. Decoding keeps special tokens
//     as their text or drops them; each run of ordinary tokens is decoded
//     on its own, invalid UTF-8 replaced; a dropped-special decode loses a
//     leading "lang:xx" as transformers does.

// tekkenFile is the part of tekken.json the tokenizer needs.
type tekkenFile struct {
	Config struct {
		Pattern                 string `json:"pattern"`
		DefaultVocabSize        *int   `json:"default_vocab_size"`
		DefaultNumSpecialTokens *int   `json:"default_num_special_tokens"`
		Version                 string `json:"version"`
	} `json:"config"`
	Vocab []struct {
		Rank       int    `json:"rank"`
		TokenBytes string `json:"token_bytes"`
	} `json:"vocab"`
	SpecialTokens *[]struct {
		Rank     int    `json:"rank"`
		TokenStr string `json:"token_str"`
	} `json:"special_tokens"`
}

// maxTekkenSpecials bounds the special tokens (real files have 1,000) so
// that a corrupt count cannot make the loader build millions of fillers.
const maxTekkenSpecials = 1 << 16

// tekkenVersions are mistral_common's TokenizerVersion values, in order.
var tekkenVersions = []string{"v1", "v2", "v3", "v7", "v11", "v13", "v15"}

// tekkenLegacySpecials are the special tokens of tekken files of version
// v7 or older that do not list theirs.
var tekkenLegacySpecials = []string{
	"<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
	"[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
	"[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
	"[TOOL_CONTENT]",
}

// LoadMistral loads a Mistral tokenizer as --tokenizer-mode mistral does:
// path is a tekken.json file or a directory holding one. SentencePiece
// Mistral tokenizers (tokenizer.model.v*) are refused with an error saying
// so.
func LoadMistral(path string) (*Tokenizer, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	file := path
	if info.IsDir() {
		file = filepath.Join(path, "tekken.json")
		if _, err := os.Stat(file); err != nil {
			if spm, _ := filepath.Glob(filepath.Join(path, "tokenizer.model*")); len(spm) > 0 {
				return nil, fmt.Errorf("tokenizer: %s holds a SentencePiece Mistral tokenizer (%s), which is not supported; only tekken.json is",
					path, filepath.Base(spm[0]))
			}
			return nil, fmt.Errorf("tokenizer: directory %s holds no tekken.json", path)
		}
	} else if base := filepath.Base(file); !strings.Contains(base, "tekken") || filepath.Ext(base) != ".json" {
		return nil, fmt.Errorf("tokenizer: %s is not a tekken .json file (SentencePiece Mistral tokenizers are not supported)", path)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := parseTekken(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", file, err)
	}
	return t, nil
}

// IsMistralDir reports whether dir is a local model directory that vLLM's
// --tokenizer-mode auto loads with Mistral's tokenizer: it holds Mistral's
// consolidated*.safetensors weights and a tekken.json or tokenizer.model.v*
// file.
func IsMistralDir(dir string) bool {
	weights, _ := filepath.Glob(filepath.Join(dir, "consolidated*.safetensors"))
	if len(weights) == 0 {
		return false
	}
	if _, err := os.Stat(filepath.Join(dir, "tekken.json")); err == nil {
		return true
	}
	spm, _ := filepath.Glob(filepath.Join(dir, "tokenizer.model.v*"))
	return len(spm) > 0
}

// ResolveMistral finds the tekken.json for --tokenizer/--model in
// --tokenizer-mode mistral: a local file or directory as is; otherwise a
// hub model id, read from the Hugging Face cache or downloaded into it.
func ResolveMistral(nameOrPath string, opts ResolveOptions) (string, error) {
	if _, err := os.Stat(nameOrPath); err == nil {
		return nameOrPath, nil
	}
	if !repoIDPattern.MatchString(nameOrPath) || strings.Contains(nameOrPath, "..") {
		return "", fmt.Errorf("tokenizer %q: no such file or directory, and not a hub model id (org/name)", nameOrPath)
	}
	opts = opts.withDefaults()
	dir := repoDir(opts.CacheDir, nameOrPath)
	commit := opts.Revision
	if ref, err := os.ReadFile(filepath.Join(dir, "refs", opts.Revision)); err == nil {
		commit = strings.TrimSpace(string(ref))
	}
	if path := filepath.Join(dir, "snapshots", commit, "tekken.json"); fileExists(path) {
		return path, nil
	}
	if opts.Offline {
		return "", fmt.Errorf("tokenizer %q: tekken.json is not in the hub cache %s and HF_HUB_OFFLINE is set", nameOrPath, opts.CacheDir)
	}
	if strings.Contains(opts.Revision, "..") || strings.ContainsAny(opts.Revision, `\`) {
		return "", fmt.Errorf("tokenizer %q: revision %q is not a branch, tag or commit", nameOrPath, opts.Revision)
	}
	body, got, err := fetch(nameOrPath, "tekken.json", opts)
	if err != nil {
		return "", err
	}
	if commitPattern.MatchString(got) {
		commit = got
	}
	snapshot := filepath.Join(dir, "snapshots", commit)
	if err := os.MkdirAll(snapshot, 0o755); err != nil {
		return "", fmt.Errorf("tokenizer %q: %w", nameOrPath, err)
	}
	path := filepath.Join(snapshot, "tekken.json")
	if err := hfenv.WriteFile(path, body); err != nil {
		return "", fmt.Errorf("tokenizer %q: %w", nameOrPath, err)
	}
	if commit != opts.Revision {
		if err := os.MkdirAll(filepath.Join(dir, "refs"), 0o755); err == nil {
			_ = hfenv.WriteFile(filepath.Join(dir, "refs", opts.Revision), []byte(commit))
		}
	}
	return path, nil
}

func fileExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir()
}

// parseTekken builds a Tokenizer from the bytes of a tekken.json file.
func parseTekken(data []byte) (*Tokenizer, error) {
	var f tekkenFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not a tekken.json: %w", err)
	}
	cfg := &f.Config
	version := -1
	for i, v := range tekkenVersions {
		if v == cfg.Version {
			version = i
		}
	}
	if version < 0 {
		return nil, fmt.Errorf("unknown version %q (known: %s)", cfg.Version, strings.Join(tekkenVersions, ", "))
	}
	if cfg.DefaultVocabSize == nil || cfg.DefaultNumSpecialTokens == nil {
		return nil, fmt.Errorf("config lacks default_vocab_size or default_num_special_tokens")
	}
	vocabSize, numSpecial := *cfg.DefaultVocabSize, *cfg.DefaultNumSpecialTokens
	inner := vocabSize - numSpecial
	switch {
	case numSpecial < 1 || inner < 256:
		return nil, fmt.Errorf("config: default_vocab_size %d with %d special tokens leaves fewer than the 256 byte tokens", vocabSize, numSpecial)
	case numSpecial > maxTekkenSpecials:
		return nil, fmt.Errorf("config: default_num_special_tokens %d is larger than %d", numSpecial, maxTekkenSpecials)
	case vocabSize > maxTokenID:
		return nil, fmt.Errorf("config: default_vocab_size %d is larger than %d", vocabSize, maxTokenID)
	case len(f.Vocab) < inner:
		return nil, fmt.Errorf("vocab has %d entries; default_vocab_size %d - %d special tokens needs %d", len(f.Vocab), vocabSize, numSpecial, inner)
	}

	var specials []string
	if f.SpecialTokens == nil {
		if version > 3 { // newer than v7
			return nil, fmt.Errorf("version %s must list its special_tokens", cfg.Version)
		}
		specials = append(specials, tekkenLegacySpecials...)
	} else {
		for i, st := range *f.SpecialTokens {
			if st.Rank != i {
				return nil, fmt.Errorf("special token %d (%q) has rank %d; special tokens take ids in order", i, st.TokenStr, st.Rank)
			}
			specials = append(specials, st.TokenStr)
		}
	}
	if len(specials) > numSpecial {
		return nil, fmt.Errorf("%d special tokens listed, more than default_num_special_tokens %d", len(specials), numSpecial)
	}
	for i := len(specials); i < numSpecial; i++ {
		specials = append(specials, "<SPECIAL_"+strconv.Itoa(i)+">")
	}
	seen := make(map[string]bool, len(specials))
	for _, s := range specials {
		if seen[s] {
			return nil, fmt.Errorf("special token %q appears twice", s)
		}
		seen[s] = true
	}

	// Ranks, shifted past the special tokens: the bpe model works on ids.
	ids := make(map[string]int32, inner)
	var buf []byte
	for i, v := range f.Vocab[:inner] {
		if v.Rank != i {
			return nil, fmt.Errorf("vocab entry %d has rank %d, want %d", i, v.Rank, i)
		}
		var err error
		if buf, err = base64.StdEncoding.AppendDecode(buf[:0], []byte(v.TokenBytes)); err != nil {
			return nil, fmt.Errorf("vocab entry %d: token_bytes: %w", i, err)
		}
		if i < 256 && (len(buf) != 1 || buf[0] != byte(i)) {
			return nil, fmt.Errorf("vocab entry %d is %q; the first 256 entries must be the single bytes in order", i, buf)
		}
		if _, dup := ids[string(buf)]; dup {
			return nil, fmt.Errorf("vocab entry %d repeats token %q", i, buf)
		}
		ids[string(buf)] = int32(i + numSpecial)
	}

	split, err := newMatcher(cfg.Pattern)
	if err != nil {
		return nil, fmt.Errorf("config: pattern: %w", err)
	}
	t := &Tokenizer{
		pre:       []preTokenizer{splitPreTokenizer{pattern: split, behavior: isolated}, byteLevelPreTokenizer{}},
		dec:       byteLevelDecoder{},
		vocabSize: vocabSize,
		tekken:    true,
	}
	vocab, err := indexedTable(ids)
	if err != nil {
		return nil, err
	}
	m := &bpe{vocab: vocab, byteMode: true, ignoreMerges: true, unk: -1, merges: tiktokenMerges(ids), cache: newWordCache()}
	for b := range 256 {
		m.byteIDs[b], m.fallbackIDs[b] = int32(b+numSpecial), -1
	}
	t.model = m

	// id -> token in the byte-level alphabet, as the decoder reads it;
	// the special tokens spelled as their UTF-8 text.
	strs := make([]string, numSpecial+len(ids))
	t.known = make([]bool, len(strs))
	for tok, id := range ids {
		strs[id], t.known[id] = byteLevelString(tok), true
	}
	for i, s := range specials {
		strs[i], t.known[i] = byteLevelString(s), true
	}
	t.tokens = tokenList{base: newStrTable(strs)}
	t.added = make([]addedToken, numSpecial)
	t.addedIDs = make([]int32, numSpecial)
	bos := int32(-1)
	for i, s := range specials {
		t.added[i] = addedToken{ID: int32(i), Content: s, Special: true}
		t.addedIDs[i] = int32(i)
		t.setToken(int32(i), byteLevelString(s))
		if s == "<s>" {
			bos = int32(i)
		}
	}
	if bos < 0 {
		return nil, fmt.Errorf("special tokens lack <s>, the BOS token")
	}
	t.post = templateProcessor{before: []int32{bos}}
	t.finish()
	// The special tokens are ids 0..n-1, whatever an ordinary token spells.
	clear(t.special)
	for i := range numSpecial {
		t.special[i] = true
	}
	return t, nil
}

// byteLevelString spells s's bytes in the byte-level alphabet.
func byteLevelString(s string) string {
	out := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = byteToRune[s[i]]
	}
	return string(out)
}

// langPrefix is the "lang:xx" Voxtral's transcriptions start with, which
// transformers removes when special tokens are skipped.
var langPrefix = regexp.MustCompile(`^lang:[a-z]{2}`)

// decodeTekken is Tekkenizer.decode behind transformers: runs of ordinary
// tokens are decoded one by one (invalid UTF-8 replaced per run), special
// tokens kept as their text or dropped.
func (t *Tokenizer) decodeTekken(ids []int32, skipSpecial bool) string {
	var b strings.Builder
	var run []byte
	flush := func() {
		if utf8.Valid(run) {
			b.Write(run)
		} else {
			b.Write(appendLossyUTF8(nil, run))
		}
		run = run[:0]
	}
	for _, id := range ids {
		if !t.has(id) {
			continue
		}
		text := t.byteLevelAt(id)
		if !t.special[id] {
			run = append(run, text...)
			continue
		}
		flush()
		if !skipSpecial {
			b.WriteString(text)
		}
	}
	flush()
	if skipSpecial {
		return langPrefix.ReplaceAllString(b.String(), "")
	}
	return b.String()
}
