package tokenizer

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// precompiledNormalizer is SentencePiece's normalizer as tokenizer.json
// carries it: precompiled_charsmap, base64 of a little-endian uint32 trie
// size, a double-array trie (Darts' layout) of that many bytes keyed by
// UTF-8 text, and a blob of NUL-terminated replacements the trie's values
// point into.
//
// Hugging Face applies it per grapheme cluster: a cluster shorter than 6
// bytes whose bytes start with any key is replaced whole by the shortest
// such key's replacement (so "\r\n" becomes what "\r" becomes); any other
// cluster is rewritten character by character.
type precompiledNormalizer struct {
	array    []uint32
	replaced string // the replacements, NUL-terminated
	// ascii[b] says that the ASCII byte b has a replacement; when none does
	// (and "\r\n" has none), ASCII text is returned as it is.
	ascii      [utf8.RuneSelf]bool
	asciiClean bool
}

func newPrecompiled(charsmap []byte) (*precompiledNormalizer, error) {
	if len(charsmap) < 4 {
		return nil, fmt.Errorf("precompiled_charsmap of %d bytes has no trie size", len(charsmap))
	}
	size := binary.LittleEndian.Uint32(charsmap)
	rest := charsmap[4:]
	if uint64(size) > uint64(len(rest)) || size%4 != 0 || size == 0 {
		return nil, fmt.Errorf("precompiled_charsmap trie size %d does not fit its %d bytes", size, len(rest))
	}
	n := &precompiledNormalizer{array: make([]uint32, size/4)}
	for i := range n.array {
		n.array[i] = binary.LittleEndian.Uint32(rest[4*i:])
	}
	replaced := rest[size:]
	if !utf8.Valid(replaced) {
		return nil, fmt.Errorf("precompiled_charsmap replacements are not UTF-8")
	}
	n.replaced = string(replaced)
	n.asciiClean = true
	for b := range utf8.RuneSelf {
		_, n.ascii[b] = n.transform(string(rune(b)))
		n.asciiClean = n.asciiClean && !n.ascii[b]
	}
	if _, ok := n.transform("\r\n"); ok {
		n.asciiClean = false
	}
	return n, nil
}

// A double-array unit packs, for the node it leads to, the label of the
// edge into it, whether it has a value (a leaf child), and the offset of
// its children.
func unitLabel(u uint32) uint32  { return u & (1<<31 | 0xff) }
func unitLeaf(u uint32) bool     { return u>>8&1 == 1 }
func unitValue(u uint32) int     { return int(u & (1<<31 - 1)) }
func unitOffset(u uint32) uint32 { return u >> 10 << (u & (1 << 9) >> 6) }

// firstMatch returns the value of the shortest key that is a prefix of
// key; a NUL byte ends the search, as it ends a C string.
func (n *precompiledNormalizer) firstMatch(key string) (int, bool) {
	pos := unitOffset(n.array[0])
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == 0 {
			break
		}
		pos ^= uint32(c)
		if int(pos) >= len(n.array) {
			return 0, false
		}
		u := n.array[pos]
		if unitLabel(u) != uint32(c) {
			return 0, false
		}
		pos ^= unitOffset(u)
		if int(pos) >= len(n.array) {
			return 0, false
		}
		if unitLeaf(u) {
			return unitValue(n.array[pos]), true
		}
	}
	return 0, false
}

// transform returns the replacement of the shortest key starting chunk.
func (n *precompiledNormalizer) transform(chunk string) (string, bool) {
	v, ok := n.firstMatch(chunk)
	if !ok || v > len(n.replaced) {
		return "", false
	}
	end := v
	for end < len(n.replaced) && n.replaced[end] != 0 {
		end++
	}
	return n.replaced[v:end], true
}

func (n *precompiledNormalizer) normalize(s string) string {
	if n.asciiClean && isASCII(s) {
		return s
	}
	var b []byte
	changed := false
	for i := 0; i < len(s); {
		// An ASCII character followed by another is a cluster of its own,
		// except "\r\n"; anything else asks uniseg where the cluster ends.
		end := i + 1
		if s[i] >= utf8.RuneSelf || s[i] == '\r' || (end < len(s) && s[end] >= utf8.RuneSelf) {
			cluster, _, _, _ := uniseg.FirstGraphemeClusterInString(s[i:], -1)
			end = i + len(cluster)
		} else if !n.ascii[s[i]] {
			if changed {
				b = append(b, s[i])
			}
			i = end
			continue
		}
		cluster := s[i:end]
		if len(cluster) < 6 {
			if rep, ok := n.transform(cluster); ok {
				if !changed {
					b, changed = append(make([]byte, 0, len(s)+16), s[:i]...), true
				}
				b = append(b, rep...)
				i = end
				continue
			}
		}
		for k := 0; k < len(cluster); {
			_, size := utf8.DecodeRuneInString(cluster[k:])
			char := cluster[k : k+size]
			rep, ok := n.transform(char)
			if ok && !changed {
				b, changed = append(make([]byte, 0, len(s)+16), s[:i+k]...), true
			}
			switch {
			case ok:
				b = append(b, rep...)
			case changed:
				b = append(b, char...)
			}
			k += size
		}
		i = end
	}
	if !changed {
		return s
	}
	return string(b)
}

// parsePrecompiled reads a Precompiled normalizer; a null charsmap (which
// some converted files carry) normalizes nothing.
func parsePrecompiled(o object) (normalizer, error) {
	var encoded *string
	if err := o.field("precompiled_charsmap", &encoded); err != nil {
		return nil, err
	}
	if encoded == nil {
		return sequenceNormalizer(nil), nil
	}
	charsmap, err := base64.StdEncoding.DecodeString(*encoded)
	if err != nil {
		return nil, fmt.Errorf("the Precompiled normalizer's precompiled_charsmap: %w", err)
	}
	n, err := newPrecompiled(charsmap)
	if err != nil {
		return nil, fmt.Errorf("the Precompiled normalizer: %w", err)
	}
	return n, nil
}

// spaceRunPattern is the Replace pattern SentencePiece conversions put
// after the Precompiled normalizer to collapse runs of spaces.
const spaceRunPattern = " {2,}"

// spaceRunMatcher matches spaceRunPattern without a regex engine: every
// run of two or more ' '.
type spaceRunMatcher struct{}

func (spaceRunMatcher) appendMatches(dst []span, s string) []span {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' || i+1 >= len(s) || s[i+1] != ' ' {
			continue
		}
		end := i + 2
		for end < len(s) && s[end] == ' ' {
			end++
		}
		dst = append(dst, span{i, end})
		i = end
	}
	return dst
}
