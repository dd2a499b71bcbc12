package tokenizer

import (
	"unicode/utf8"
	"unsafe"
)

// Rounds is the state of a prompt's rounds of Python's
// gen_prompt_decode_to_target_len (ids = encode(decode(ids)), then pad or
// truncate, again): the text of the last round, and where its chunks
// begin, so that the round after a truncation re-encodes only the last
// chunk (Truncated). One goroutine uses it, for one prompt after another.
type Rounds struct {
	t     *Tokenizer
	text  []byte
	marks []chunkMark
	// chunked is set when the last round was encoded a chunk at a time.
	chunked bool
}

// LengthRounds is what the datasets use of Rounds; an interface literal,
// so that they need not import this package to name it.
type LengthRounds = interface {
	Round(dst, ids []int32) []int32
	Truncated(ids []int32) []int32
	Text() []byte
	Done()
}

var _ LengthRounds = (*Rounds)(nil)

// NewRounds returns the state of rounds with t, until Done.
func (t *Tokenizer) NewRounds() LengthRounds {
	if r, ok := t.rounds.Get().(*Rounds); ok {
		return r
	}
	return &Rounds{t: t}
}

// Done gives r back for the next prompt's rounds.
func (r *Rounds) Done() { r.t.rounds.Put(r) }

// Text is the last round's decoded text; the caller's until the next
// round.
func (r *Rounds) Text() []byte { return r.text }

// Round is one round: the text becomes Decode(ids, false), and the result is
// Encode(Text, false) appended to dst, which may be ids[:0] (ids are
// decoded before dst is written). Text and ids are byte for byte what
// Decode and Encode give, without a string of every text: Decode's text
// is valid UTF-8 already and is encoded where it lies.
func (r *Rounds) Round(dst, ids []int32) []int32 {
	t := r.t
	r.marks, r.chunked = r.marks[:0], false
	if t.tekken || t.cleanUpSpaces || t.byteLevel.offs == nil {
		s := t.Decode(ids, false)
		r.text = append(r.text[:0], s...)
		return t.Encode(dst, s, false)
	}
	ws := t.pool.Get().(*workspace)
	defer t.pool.Put(ws)
	r.text = t.appendByteLevel(r.text[:0], ids, false)
	if !utf8.Valid(r.text) {
		ws.lossy = appendLossyUTF8(ws.lossy[:0], r.text)
		r.text = append(r.text[:0], ws.lossy...)
	}
	text := bytesText(r.text)
	if t.chunks != nil && len(text) >= chunkMinText {
		r.chunked = true
		return t.encodeChunksFrom(dst, text, 0, &r.marks, ws)
	}
	return t.encodeText(dst, text, ws)
}

// Truncated is the round after the last one's ids were cut to ids (the
// first of them): what Round(ids[:0], ids) would give, decoding
// nothing and encoding only the text past the last chunk the cut leaves
// whole.
//
// Why it is exact: a chunked round's tokenizer decodes what it encodes
// byte for byte (no normalizer, ByteLevel without a prefix space, the
// decoder exactly ByteLevel; chunkable), so the decoded cut ids are the
// last text up to the cut's byte, its last character made U+FFFD if the
// cut split it (Rust's from_utf8_lossy on an incomplete sequence). A chunk
// boundary of the last text before that point depends only on the bytes
// up to it, so it is one of the new text's, and the ids before it stand.
// Otherwise (not chunked, or too short a text) it is a full Round.
func (r *Rounds) Truncated(ids []int32) []int32 {
	t := r.t
	if !r.chunked {
		return r.Round(ids[:0], ids)
	}
	n := 0
	nb := int32(t.byteLevel.size())
	for _, id := range ids {
		if !t.has(id) {
			continue
		}
		tab, k := &t.byteLevel, id
		if id >= nb {
			tab, k = &t.byteTail, id-nb
		}
		n += int(tab.offs[k+1] - tab.offs[k])
	}
	if n > len(r.text) {
		return r.Round(ids[:0], ids)
	}
	// same is how much of the last text the new one keeps as it is.
	same := n
	if k := partialRuneStart(r.text[:n]); k >= 0 {
		same = k
	}
	r.text = r.text[:n]
	if same < n {
		r.text = append(r.text[:same], "\uFFFD"...)
	}
	text := bytesText(r.text)
	if len(text) < chunkMinText {
		return r.Round(ids[:0], ids)
	}
	// The last chunk that begins before the first byte that changed
	// begins a chunk of the new text too.
	m := len(r.marks) - 1
	for m > 0 && r.marks[m].at >= same {
		m--
	}
	mark := r.marks[m]
	r.marks = r.marks[:m]
	ws := t.pool.Get().(*workspace)
	defer t.pool.Put(ws)
	return t.encodeChunksFrom(ids[:mark.ids], text, mark.at, &r.marks, ws)
}

// partialRuneStart is where b's last character begins when b ends in the
// middle of it (b being the head of valid UTF-8), else -1.
func partialRuneStart(b []byte) int {
	for k := len(b) - 1; k >= 0 && k >= len(b)-utf8.UTFMax; k-- {
		if c := b[k]; c < 0x80 {
			return -1
		} else if c >= 0xC0 {
			if utf8.FullRune(b[k:]) {
				return -1
			}
			return k
		}
	}
	return -1
}

// bytesText is a view of b as a string, for the encoders, which keep
// nothing of the text they are given (the caches clone what they store).
func bytesText(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
