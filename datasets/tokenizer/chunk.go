package tokenizer

import (
	"encoding/binary"
	"strings"
)

// Long texts are encoded in chunks, and a chunk's ids are remembered: the
// random dataset re-encodes a truncated copy of each prompt, and its
// prompts, taken in order, are windows of one cycle of ids that overlap
// their neighbours almost entirely, so most of a text has been encoded
// before, a chunk at a time.
//
// A cut is exact only where the encoding of the whole is the encoding of
// the parts put end to end, whatever the parts hold. For the tokenizers
// chunkable accepts, that holds before a space that follows an ASCII
// letter:
//   - no normalizer runs, and no added token holds a space or strips
//     spaces (lstrip, rstrip) or looks at its neighbours (single_word), so
//     no added token's match crosses the cut and the matches on either side
//     are those of the whole;
//   - the split pattern is cl100k's or Qwen's, where a match holding a
//     letter ends at the first non-letter (\p{L}+ after an optional prefix,
//     or a contraction that ends in a letter), so a match ends at the cut,
//     the matches before it never looked past it, and matching resumes at
//     the cut as it would after any match;
//   - ByteLevel only maps bytes (no prefix space, no regex), and the model
//     encodes each piece alone.
//
// Which cuts are taken depends only on the 16 bytes before them (a hash), so two texts sharing a passage cut it in the same places and
// share its chunks, wherever the passage starts.

const (
	// chunkBits: one candidate cut in 2^chunkBits is taken, the one whose
	// hash has that many top bits zero: chunks of ~250 bytes of prose.
	chunkBits = 4
	// chunkMinText is the shortest text worth cutting.
	chunkMinText = 2048
	// chunkShardEntries bounds the chunk cache at 16 × 512 chunks (~4
	// MB): the random dataset's prompts are windows of one cycle of the
	// vocabulary, whose text (Llama 3's: ~640 KB, ~2,600 chunks) then stays
	// cached whole, in whatever order the prompts come. At 128 a shard,
	// 2,000 prompts of 8,192 tokens took 3.4 s of CPU, at 1,024 2.2 s.
	chunkShardEntries = 512
)

// chunkable reports whether text may be cut as described above.
func (t *Tokenizer) chunkable() bool {
	if t.normalizer != nil || t.tekken {
		return false
	}
	if _, ok := t.model.(*bpe); !ok {
		return false
	}
	if len(t.pre) != 2 {
		return false
	}
	split, ok := t.pre[0].(splitPreTokenizer)
	if !ok || split.behavior != isolated || split.invert {
		return false
	}
	if sc, ok := split.pattern.(scanner); !ok || !sc.wordEnds {
		return false
	}
	if bl, ok := t.pre[1].(byteLevelPreTokenizer); !ok || bl.addPrefixSpace || bl.useRegex {
		return false
	}
	for _, at := range t.added {
		if at.LStrip || at.RStrip || at.SingleWord {
			return false
		}
		for i := 0; i < len(at.Content); i++ {
			if at.Content[i] == ' ' {
				return false
			}
		}
	}
	return true
}

// nextCut returns the first cut in text[from:] (from < cut < len(text)), or
// len(text) when there is none: a space after an ASCII letter where the 16
// bytes before it hash to chunkBits top zero bits.
func nextCut(text string, from int) int {
	for i := from + 1; i < len(text); i++ {
		k := strings.IndexByte(text[i:], ' ')
		if k < 0 {
			break
		}
		i += k
		if c := text[i-1] | 0x20; i >= 16 && c >= 'a' && c <= 'z' {
			a := binary.LittleEndian.Uint64([]byte(text[i-16 : i-8]))
			b := binary.LittleEndian.Uint64([]byte(text[i-8 : i]))
			h := (a*0x9e3779b97f4a7c15 ^ b) * 0xbf58476d1ce4e5b9
			if (h^h>>29)>>(64-chunkBits) == 0 {
				return i
			}
		}
	}
	return len(text)
}

// encodeChunks encodes text a chunk at a time, through the chunk cache.
func (t *Tokenizer) encodeChunks(dst []int32, text string, ws *workspace) []int32 {
	return t.encodeChunksFrom(dst, text, 0, nil, ws)
}

// encodeChunksFrom is encodeChunks from start on, a cut of text, dst
// holding the ids of text[:start]; marks, when not nil, gets where each
// chunk from start on begins, in text and in dst.
func (t *Tokenizer) encodeChunksFrom(dst []int32, text string, start int, marks *[]chunkMark, ws *workspace) []int32 {
	for start < len(text) {
		if marks != nil {
			*marks = append(*marks, chunkMark{at: start, ids: len(dst)})
		}
		end := nextCut(text, start)
		chunk := text[start:end]
		var ok bool
		if dst, ok = t.chunks.get(dst, chunk); !ok {
			n := len(dst)
			dst = t.encodeWhole(dst, chunk, ws)
			t.chunks.put(chunk, dst[n:])
		}
		start = end
	}
	return dst
}

// chunkMark is where a chunk of an encoded text begins: at byte at, its
// ids at ids.
type chunkMark struct{ at, ids int }
