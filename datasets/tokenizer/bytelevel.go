package tokenizer

import (
	"encoding/binary"
	"unicode/utf8"
)

// GPT-2's byte-level alphabet maps every byte to a printable rune so that
// byte strings can live in a JSON vocabulary: printable Latin-1 bytes map to
// themselves and the other 68 bytes to U+0100 upwards, in byte order.
var (
	byteToRune [256]rune
	// runeByte is the inverse, +1, with 0 for a rune outside the alphabet
	// (which lies below byteRuneLimit): decoding the whole vocabulary at
	// load looks up a million runes.
	runeByte [byteRuneLimit]uint16
)

const byteRuneLimit = 256 + 68

func init() {
	next := rune(256)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = next
			next++
		}
		runeByte[byteToRune[b]] = uint16(b) + 1
	}
}

// byteLevelDecode turns a byte-level token back into the bytes it stands
// for. A token holding a rune outside the alphabet (cohere's emoji,
// DeepSeek's <｜…｜> markers) stands for its own UTF-8 bytes, as in Hugging
// Face's ByteLevel decoder; ok reports whether every rune was in the alphabet.
func byteLevelDecode(dst []byte, token string) (out []byte, ok bool) {
	start := len(dst)
	for _, r := range token {
		if r < 0 || r >= byteRuneLimit || runeByte[r] == 0 {
			return append(dst[:start], token...), false
		}
		dst = append(dst, byte(runeByte[r]-1))
	}
	return dst, true
}

// appendLossyUTF8 appends b to dst with every maximal invalid subsequence
// replaced by one U+FFFD, which is what Rust's String::from_utf8_lossy does
// (Go's strings.ToValidUTF8 collapses whole runs instead, and a plain rune
// loop replaces each byte).
func appendLossyUTF8(dst, b []byte) []byte {
	valid := 0 // b[valid:i] is valid and not yet appended
	for i := 0; i < len(b); {
		for i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:])&highBits == 0 {
			i += 8
		}
		if i == len(b) {
			break
		}
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			i += size
			continue
		}
		dst = append(append(dst, b[valid:i]...), "\uFFFD"...)
		i += invalidPrefixLen(b[i:])
		valid = i
	}
	return append(dst, b[valid:]...)
}

// invalidPrefixLen is the length of the maximal subpart of an ill-formed
// sequence at the start of b (Unicode §3.9, "U+FFFD substitution of maximal
// subparts"): a lead byte and the continuation bytes that could still have
// completed it.
func invalidPrefixLen(b []byte) int {
	lo, hi, need := byte(0x80), byte(0xBF), 0
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		lo, need = 0xA0, 2
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		hi, need = 0x9F, 2
	case c == 0xF0:
		lo, need = 0x90, 3
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		hi, need = 0x8F, 3
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}
