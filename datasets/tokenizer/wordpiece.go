package tokenizer

import (
	"unicode/utf8"
)

// wordPiece is Hugging Face's WordPiece model: greedy longest-match-first
// over the vocabulary, continuation pieces carrying a prefix ("##"), and the
// whole word becoming unk if any part of it cannot be matched.
type wordPiece struct {
	vocab    strTable
	unk      int32
	prefix   string
	maxChars int
}

func (m *wordPiece) tokenize(dst []int32, word string, ws *workspace) []int32 {
	if word == "" {
		return dst
	}
	if utf8.RuneCountInString(word) > m.maxChars {
		return append(dst, m.unk)
	}
	start0 := len(dst)
	for start := 0; start < len(word); {
		end := len(word)
		id := int32(-1)
		for start < end {
			var ok bool
			if start > 0 {
				ws.buf = append(append(ws.buf[:0], m.prefix...), word[start:end]...)
				id, ok = m.vocab.lookupBytes(ws.buf)
			} else {
				id, ok = m.vocab.lookup(word[start:end])
			}
			if ok {
				break
			}
			id = -1
			_, n := utf8.DecodeLastRuneInString(word[start:end])
			end -= n
		}
		if id < 0 {
			return append(dst[:start0], m.unk)
		}
		dst = append(dst, id)
		start = end
	}
	return dst
}
