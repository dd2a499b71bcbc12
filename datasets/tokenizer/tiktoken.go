package tokenizer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// tiktokenFamily is what a .tiktoken file does not say about its model: the
// split pattern (it lives in the model's Python code) and whether a BOS
// token is added. Families are recognised by their number of ranks.
type tiktokenFamily struct {
	name    string
	ranks   int
	pattern string
	bos     string // added in front when addSpecial is set, or ""
}

// patternKimiK2 is Kimi-K2's pattern. Its "&&" class intersections are
// Rust-regex syntax that regexp2 would misread, so loading it fails.
const patternKimiK2 = `[\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

var tiktokenFamilies = []tiktokenFamily{
	{name: "r50k_base (GPT-2)", ranks: 50256, pattern: patternGPT2},
	{name: "cl100k_base", ranks: 100256, pattern: patternLlama3},
	{name: "Llama-3", ranks: 128000, pattern: patternLlama3, bos: "<|begin_of_text|>"},
	{name: "Kimi-K2", ranks: 163584, pattern: patternKimiK2},
	{name: "o200k_base", ranks: 199998, pattern: patternO200k},
}

// readTiktoken reads a .tiktoken file.
func readTiktoken(path string) (map[string]int32, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ranks, err := parseTiktoken(data)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	return ranks, nil
}

// parseTiktoken reads "base64-token rank" lines; errors start with the line
// number.
func parseTiktoken(data []byte) (map[string]int32, error) {
	ranks := make(map[string]int32, 1<<17)
	var buf []byte
	var err error
	for line := 1; len(data) > 0; line++ {
		var text []byte
		text, data, _ = bytes.Cut(data, []byte{'\n'})
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			continue
		}
		tok, rank, ok := bytes.Cut(text, []byte{' '})
		if !ok {
			return nil, fmt.Errorf("%d: want \"<base64 token> <rank>\", got %.40q (a SentencePiece .model is not supported; use tokenizer.json)", line, text)
		}
		buf, err = base64.StdEncoding.AppendDecode(buf[:0], tok)
		if err != nil {
			return nil, fmt.Errorf("%d: token %q: %w", line, tok, err)
		}
		r, err := strconv.ParseInt(string(rank), 10, 32)
		if err != nil || r < 0 || r > maxTokenID {
			return nil, fmt.Errorf("%d: rank %q is not an integer in [0, %d]", line, rank, maxTokenID)
		}
		ranks[string(buf)] = int32(r)
	}
	return ranks, nil
}

// tokenizerConfig is the part of tokenizer_config.json a .tiktoken file
// needs: its special tokens.
type tokenizerConfig struct {
	AddedTokensDecoder map[string]struct {
		Content    string `json:"content"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		SingleWord bool   `json:"single_word"`
		Special    bool   `json:"special"`
	} `json:"added_tokens_decoder"`
	AddBOSToken *bool `json:"add_bos_token"`
}

// loadTiktoken builds a Tokenizer from a .tiktoken vocabulary, with the
// special tokens of a tokenizer_config.json beside it when there is one.
func loadTiktoken(path string) (*Tokenizer, error) {
	ranks, err := readTiktoken(path)
	if err != nil {
		return nil, err
	}
	var family *tiktokenFamily
	names := ""
	for i := range tiktokenFamilies {
		f := &tiktokenFamilies[i]
		names += fmt.Sprintf(", %s (%d)", f.name, f.ranks)
		if f.ranks == len(ranks) {
			family = f
		}
	}
	if family == nil {
		return nil, fmt.Errorf("%s: %d ranks match no known tiktoken family (known: %s); its split pattern is unknown", path, len(ranks), names[2:])
	}
	split, err := newMatcher(family.pattern)
	if err != nil {
		return nil, fmt.Errorf("%s: %s split pattern: %w", path, family.name, err)
	}
	t := &Tokenizer{
		pre:       []preTokenizer{splitPreTokenizer{pattern: split, behavior: isolated}, byteLevelPreTokenizer{}},
		dec:       byteLevelDecoder{},
		vocabSize: len(ranks),
	}
	vocab, err := indexedTable(ranks)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m := &bpe{vocab: vocab, byteMode: true, ignoreMerges: true, unk: -1, merges: tiktokenMerges(ranks), cache: newWordCache()}
	alphabet := make(map[string]int32, len(ranks))
	var buf []rune
	for tok, rank := range ranks {
		buf = buf[:0]
		for k := 0; k < len(tok); k++ {
			buf = append(buf, byteToRune[tok[k]])
		}
		alphabet[string(buf)] = rank
	}
	if t.tokens, t.known, err = tokensFromMap(alphabet); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for b := range 256 {
		m.byteIDs[b], m.fallbackIDs[b] = -1, -1
		if id, ok := ranks[string([]byte{byte(b)})]; ok {
			m.byteIDs[b] = id
		}
	}
	t.model = m

	var added []addedToken
	var cfg tokenizerConfig
	if data, err := os.ReadFile(filepath.Join(filepath.Dir(path), "tokenizer_config.json")); err == nil {
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("%s: tokenizer_config.json: %w", path, err)
		}
		for idText, at := range cfg.AddedTokensDecoder {
			id, err := strconv.ParseInt(idText, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%s: tokenizer_config.json: added token id %q is not an integer", path, idText)
			}
			added = append(added, addedToken{ID: int32(id), Content: at.Content, LStrip: at.LStrip,
				RStrip: at.RStrip, SingleWord: at.SingleWord, Special: at.Special})
		}
	}
	slices.SortFunc(added, func(a, b addedToken) int { return int(a.ID) - int(b.ID) })
	if err := t.setAddedTokens(added); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if family.bos != "" && (cfg.AddBOSToken == nil || *cfg.AddBOSToken) {
		for i, at := range added {
			if at.Content == family.bos {
				t.post = templateProcessor{before: []int32{t.addedIDs[i]}}
			}
		}
	}
	t.finish()
	return t, nil
}

// tiktokenMerges derives merge rules from ranks: tiktoken merges the
// adjacent pair whose concatenation has the lowest rank, so every way of
// cutting a token into two tokens is a rule ranked by the whole token.
func tiktokenMerges(ranks map[string]int32) mergeTable {
	n := 0
	for tok := range ranks {
		n += len(tok) - 1
	}
	merges := newMergeTable(n)
	for tok, rank := range ranks {
		for k := 1; k < len(tok); k++ {
			a, okA := ranks[tok[:k]]
			b, okB := ranks[tok[k:]]
			if okA && okB {
				merges.put(a, b, mergeRule{rank: rank, newID: rank})
			}
		}
	}
	return merges
}

// indexedTable lays out a vocabulary map by id and indexes it.
func indexedTable(vocab map[string]int32) (strTable, error) {
	l, known, err := tokensFromMap(vocab)
	if err != nil {
		return strTable{}, err
	}
	v := l.base
	v.index(len(vocab), func(id int32) bool { return known[id] })
	return v, nil
}
