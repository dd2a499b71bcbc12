package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// specialTokenFields are the tokenizer_config.json entries transformers
// builds all_special_ids from (its special_tokens_map).
var specialTokenFields = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// tokenName decodes a special token entry: "<s>" or {"content": "<s>", ...}.
func tokenName(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, s != ""
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.Content, obj.Content != ""
	}
	return "", false
}

// applyConfig reads tokenizer_config.json beside the tokenizer file, when
// there is one, so the Tokenizer behaves as transformers' (which vLLM uses)
// does: AllSpecialIDs means all_special_ids (the bos/eos/unk/sep/pad/cls/mask
// tokens and the additional_special_tokens, not every added token flagged
// special), and Decode cleans up tokenization spaces when
// clean_up_tokenization_spaces is set.
func (t *Tokenizer) applyConfig(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return nil // optional
	}
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("tokenizer_config.json: %w", err)
	}
	if raw, ok := cfg["clean_up_tokenization_spaces"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &t.cleanUpSpaces); err != nil {
			return fmt.Errorf("tokenizer_config.json: clean_up_tokenization_spaces: %w", err)
		}
	}
	var names []string
	for _, field := range specialTokenFields {
		if name, ok := tokenName(cfg[field]); ok {
			names = append(names, name)
		}
	}
	var extra []json.RawMessage
	if raw, ok := cfg["additional_special_tokens"]; ok && json.Unmarshal(raw, &extra) != nil {
		return fmt.Errorf("tokenizer_config.json: additional_special_tokens is not a list")
	}
	for _, raw := range extra {
		if name, ok := tokenName(raw); ok {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	var ids []int32
	for _, name := range names {
		if id, ok := t.tokenID(name); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	t.specialIDs = slices.Compact(ids)
	return nil
}

// tokenID finds a token's id, added tokens first, as transformers'
// convert_tokens_to_ids does.
func (t *Tokenizer) tokenID(token string) (int32, bool) {
	for i, at := range t.added {
		if at.Content == token {
			return t.addedIDs[i], true
		}
	}
	switch m := t.model.(type) {
	case *bpe:
		return m.writtenID(token)
	case *wordPiece:
		return m.vocab.lookup(token)
	case *unigram:
		return m.lookup(token)
	}
	for id := range int32(t.tokens.len()) {
		if t.known[id] && t.tokens.at(id) == token {
			return id, true
		}
	}
	return 0, false
}

// transformersCleanup is transformers' clean_up_tokenization, applied in
// this order (it lacks the WordPiece decoder's " do not" rule).
var transformersCleanup = [][2]string{
	{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
	{" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
}

func cleanUpSpaces(s string) string { return replaceEach(s, transformersCleanup) }
