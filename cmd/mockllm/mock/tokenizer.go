package mock

import (
	"strings"

	"github.com/stampede-bench/stampede/datasets"
)

// words are the pieces generated text is made of: one word, with its
// leading space, per token. They are all in the mock tokenizer's vocabulary,
// so re-tokenising generated text gives back exactly one token per word.
var words = [...]string{
	" the", " of", " and", " to", " in", " a", " is", " that", " for", " it",
	" as", " was", " with", " be", " by", " on", " not", " he", " this", " are",
	" or", " his", " from", " at", " which", " but", " have", " an", " had", " they",
	" you", " were", " their", " one", " all", " we", " can", " her", " has", " there",
	" been", " if", " more", " when", " will", " would", " who", " so", " no", " time",
	" model", " token", " stream", " server", " request", " bench", " step", " batch", " cache", " queue",
	" fast", " slow", " data", " loop",
}

// wordTokenBase is the id of words[0]; ids below it are raw bytes.
const wordTokenBase = 256

// MockTokenizer is the built-in tokenizer: deterministic, reversible and
// free of any model files. Its vocabulary is the 256 single bytes (id =
// byte value) followed by the generated words (id 256 + index in the word
// list, each word with its leading space). Encode matches the longest word
// at each position and falls back to single bytes, so
// Decode(Encode(x)) == x for every string, including invalid UTF-8, and
// generated text re-tokenises to one token per generated word. It has no
// special tokens.
type MockTokenizer struct {
	ids     map[string]int32
	longest int
}

var _ datasets.Tokenizer = (*MockTokenizer)(nil)

// NewMockTokenizer returns the built-in tokenizer.
func NewMockTokenizer() *MockTokenizer {
	t := &MockTokenizer{ids: make(map[string]int32, len(words))}
	for i, w := range words {
		t.ids[w] = int32(wordTokenBase + i)
		t.longest = max(t.longest, len(w))
	}
	return t
}

// Encode appends text's token ids to dst. addSpecial is ignored: the
// vocabulary has no special tokens.
func (t *MockTokenizer) Encode(dst []int32, text string, addSpecial bool) []int32 {
	for i := 0; i < len(text); {
		if text[i] == ' ' {
			if id, n := t.matchWord(text[i:]); n > 0 {
				dst = append(dst, id)
				i += n
				continue
			}
		}
		dst = append(dst, int32(text[i]))
		i++
	}
	return dst
}

// matchWord returns the longest vocabulary word that s starts with.
func (t *MockTokenizer) matchWord(s string) (id int32, n int) {
	// A word has no space after its first byte, so the candidates are the
	// prefixes of s up to its next space.
	piece := len(s)
	if i := strings.IndexByte(s[1:], ' '); i >= 0 {
		piece = i + 1
	}
	for l := min(piece, t.longest); l >= 2; l-- {
		if id, ok := t.ids[s[:l]]; ok {
			return id, l
		}
	}
	return 0, 0
}

// Decode concatenates the pieces of ids; ids outside the vocabulary decode
// to U+FFFD. skipSpecial is ignored.
func (t *MockTokenizer) Decode(ids []int32, skipSpecial bool) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(t.piece(id))
	}
	return b.String()
}

// piece returns the text of one token id.
func (t *MockTokenizer) piece(id int32) string {
	switch {
	case id >= 0 && id < wordTokenBase:
		return string([]byte{byte(id)})
	case id >= wordTokenBase && int(id) < wordTokenBase+len(words):
		return words[id-wordTokenBase]
	}
	return "\uFFFD"
}

// VocabSize is the number of token ids.
func (t *MockTokenizer) VocabSize() int { return wordTokenBase + len(words) }

// NumSpecialTokensToAdd is 0: there are no special tokens.
func (t *MockTokenizer) NumSpecialTokensToAdd() int { return 0 }

// AllSpecialIDs is empty.
func (t *MockTokenizer) AllSpecialIDs() []int32 { return nil }

// InVocab reports whether id is a valid token id, which /detokenize checks.
func (t *MockTokenizer) InVocab(id int32) bool { return id >= 0 && int(id) < t.VocabSize() }
