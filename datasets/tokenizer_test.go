package datasets

import (
	"strings"
	"sync"
)

// bpeTokenizer is a small deterministic byte-level BPE for tests. Like a
// real BPE its decode of arbitrary ids does not re-encode to the same
// length: merges join neighbours, a lone continuation byte decodes to
// U+FFFD (three bytes), and the in-vocabulary special token <unk> decodes
// to five literal characters.
//
// Ids: 0 is <unk> (special, inside the base vocabulary), 1..256 are the
// bytes 0..255, then one id per merge; the added token <s> (BOS) is
// VocabSize(), outside the base vocabulary as Hugging Face counts it.
type bpeTokenizer struct {
	merges  map[[2]int32]int32 // pair → merged id
	ranks   map[[2]int32]int   // pair → merge priority
	pieces  [][]byte           // id → bytes
	vocab   int
	bos     int32
	encodes sync.Map // memo: text → ids (the tests tokenize the same text often)
}

const testUnk = "<unk>"

func newBPETokenizer() *bpeTokenizer {
	t := &bpeTokenizer{merges: map[[2]int32]int32{}, ranks: map[[2]int32]int{}}
	t.pieces = append(t.pieces, []byte(testUnk))
	for b := range 256 {
		t.pieces = append(t.pieces, []byte{byte(b)})
	}
	byteID := func(c byte) int32 { return int32(c) + 1 }
	idOf := map[string]int32{}
	for b := range 256 {
		idOf[string([]byte{byte(b)})] = byteID(byte(b))
	}
	// Frequent English pairs first, then merges of merges.
	for _, m := range []string{
		"th", "he", "in", "er", "an", " t", " a", "re", "on", "at", "en", "nd", "ti", "es", "or",
		"te", "of", "ed", "is", "it", " s", " w", " o", "ar", "st", "to", "nt", "ng", "se", "ha",
		"the", " th", "ing", "and", " the", "ion", "tion", " and", "ent", "er ",
	} {
		best := [2]int32{-1, -1}
		for cut := 1; cut < len(m); cut++ {
			l, okL := idOf[m[:cut]]
			r, okR := idOf[m[cut:]]
			if okL && okR {
				best = [2]int32{l, r}
				break
			}
		}
		if best[0] < 0 {
			panic("test tokenizer: cannot build merge " + m)
		}
		id := int32(len(t.pieces))
		t.pieces = append(t.pieces, []byte(m))
		t.merges[best] = id
		t.ranks[best] = len(t.ranks)
		idOf[m] = id
	}
	t.vocab = len(t.pieces)
	t.bos = int32(t.vocab)
	return t
}

func (t *bpeTokenizer) Encode(dst []int32, text string, addSpecial bool) []int32 {
	if addSpecial {
		dst = append(dst, t.bos)
	}
	if v, ok := t.encodes.Load(text); ok {
		return append(dst, v.([]int32)...)
	}
	var ids []int32
	for i := 0; i < len(text); i++ {
		ids = append(ids, int32(text[i])+1)
	}
	for {
		bestRank, at := -1, -1
		for i := 0; i+1 < len(ids); i++ {
			if r, ok := t.ranks[[2]int32{ids[i], ids[i+1]}]; ok && (bestRank < 0 || r < bestRank) {
				bestRank, at = r, i
			}
		}
		if at < 0 {
			break
		}
		pair := [2]int32{ids[at], ids[at+1]}
		merged := ids[:0:0]
		for i := 0; i < len(ids); i++ {
			if i+1 < len(ids) && ids[i] == pair[0] && ids[i+1] == pair[1] {
				merged = append(merged, t.merges[pair])
				i++
				continue
			}
			merged = append(merged, ids[i])
		}
		ids = merged
	}
	t.encodes.Store(text, ids)
	return append(dst, ids...)
}

func (t *bpeTokenizer) Decode(ids []int32, skipSpecial bool) string {
	var b strings.Builder
	for _, id := range ids {
		switch {
		case id == t.bos || id == 0:
			if !skipSpecial {
				if id == t.bos {
					b.WriteString("<s>")
				} else {
					b.WriteString(testUnk)
				}
			}
		case id > 0 && int(id) < len(t.pieces):
			b.Write(t.pieces[id])
		}
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

func (t *bpeTokenizer) VocabSize() int             { return t.vocab }
func (t *bpeTokenizer) NumSpecialTokensToAdd() int { return 1 }
func (t *bpeTokenizer) AllSpecialIDs() []int32     { return []int32{0, t.bos} }

var _ Tokenizer = (*bpeTokenizer)(nil)
