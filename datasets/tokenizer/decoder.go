package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// decoder is one step of Hugging Face's decoder chain: it rewrites the list
// of token strings; the final list is concatenated.
type decoder interface {
	decodeChain(tokens []string) []string
}

type byteLevelDecoder struct{}

// decodeChain maps every token back to its bytes and the whole back to
// text, invalid sequences becoming U+FFFD as in Rust's from_utf8_lossy.
func (byteLevelDecoder) decodeChain(tokens []string) []string {
	var raw []byte
	for _, t := range tokens {
		raw, _ = byteLevelDecode(raw, t)
	}
	return []string{string(appendLossyUTF8(nil, raw))}
}

type byteFallbackDecoder struct{}

// decodeChain turns runs of "<0xXX>" tokens into the text they spell, or,
// when a run is not valid UTF-8, into one U+FFFD per byte token.
func (byteFallbackDecoder) decodeChain(tokens []string) []string {
	out := make([]string, 0, len(tokens))
	var pending []byte
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if utf8.Valid(pending) {
			out = append(out, string(pending))
		} else {
			for range pending {
				out = append(out, "\uFFFD")
			}
		}
		pending = pending[:0]
	}
	for _, t := range tokens {
		if b, ok := byteToken(t); ok {
			pending = append(pending, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

// byteToken parses "<0xXX>" (upper-case hex, as byte_fallback writes it).
func byteToken(t string) (byte, bool) {
	if len(t) != 6 || t[:3] != "<0x" || t[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexDigit(t[3])
	lo, ok2 := hexDigit(t[4])
	return hi<<4 | lo, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

type fuseDecoder struct{}

func (fuseDecoder) decodeChain(tokens []string) []string {
	return []string{strings.Join(tokens, "")}
}

// stripDecoder removes up to start leading and stop trailing copies of
// content from every token.
type stripDecoder struct {
	content     rune
	start, stop int
}

// eachToken returns f applied to every token (i is its position).
func eachToken(tokens []string, f func(i int, t string) string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = f(i, t)
	}
	return out
}

func (d stripDecoder) decodeChain(tokens []string) []string {
	return eachToken(tokens, func(_ int, t string) string {
		for k := 0; k < d.start; k++ {
			r, n := utf8.DecodeRuneInString(t)
			if n == 0 || r != d.content {
				break
			}
			t = t[n:]
		}
		for k := 0; k < d.stop; k++ {
			r, n := utf8.DecodeLastRuneInString(t)
			if n == 0 || r != d.content {
				break
			}
			t = t[:len(t)-n]
		}
		return t
	})
}

type replaceDecoder struct {
	pattern matcher
	content string
}

func (d replaceDecoder) decodeChain(tokens []string) []string {
	return eachToken(tokens, func(_ int, t string) string { return replaceAll(t, d.pattern, d.content) })
}

// metaspaceDecoder turns the replacement back into spaces, dropping it from
// the first token when a prefix was prepended.
type metaspaceDecoder struct {
	replacement rune
	scheme      prependScheme
}

func (d metaspaceDecoder) decodeChain(tokens []string) []string {
	return eachToken(tokens, func(i int, t string) string {
		var b strings.Builder
		for _, r := range t {
			if r == d.replacement {
				if i == 0 && d.scheme != prependNever {
					continue
				}
				r = ' '
			}
			b.WriteRune(r)
		}
		return b.String()
	})
}

// wordPieceDecoder joins continuation pieces to the word before them and
// separates words with spaces, then undoes BERT's tokenization spaces.
type wordPieceDecoder struct {
	prefix  string
	cleanup bool
}

func (d wordPieceDecoder) decodeChain(tokens []string) []string {
	return eachToken(tokens, func(i int, t string) string {
		if i != 0 {
			if strings.HasPrefix(t, d.prefix) {
				t = t[len(d.prefix):]
			} else {
				t = " " + t
			}
		}
		if d.cleanup {
			t = cleanupTokenization(t)
		}
		return t
	})
}

// tokenizationSpaces are Hugging Face's cleanup replacements, applied one
// after the other in this order.
var tokenizationSpaces = [][2]string{
	{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
	{" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
}

// cleanupTokenization is Hugging Face's cleanup for WordPiece output.
func cleanupTokenization(s string) string { return replaceEach(s, tokenizationSpaces) }

// replaceEach applies each (old, new) replacement to s in turn.
func replaceEach(s string, pairs [][2]string) string {
	for _, r := range pairs {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}

type sequenceDecoder []decoder

func (seq sequenceDecoder) decodeChain(tokens []string) []string {
	for _, d := range seq {
		tokens = d.decodeChain(tokens)
	}
	return tokens
}

func parseDecoder(raw json.RawMessage) (decoder, error) {
	o, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	switch typ := o.typeName(); typ {
	case "ByteLevel":
		return byteLevelDecoder{}, nil
	case "ByteFallback":
		return byteFallbackDecoder{}, nil
	case "Fuse":
		return fuseDecoder{}, nil
	case "Strip":
		var d stripDecoder
		var content string
		for key, v := range map[string]any{"content": &content, "start": &d.start, "stop": &d.stop} {
			if err := o.field(key, v); err != nil {
				return nil, err
			}
		}
		r := []rune(content)
		if len(r) != 1 {
			return nil, fmt.Errorf("decoder Strip: content %q is not one character", content)
		}
		d.content = r[0]
		return d, nil
	case "Replace":
		var d replaceDecoder
		if d.pattern, err = parsePattern(o["pattern"]); err != nil {
			return nil, err
		}
		return d, o.field("content", &d.content)
	case "Metaspace":
		p, err := parseMetaspace(o)
		if err != nil {
			return nil, err
		}
		return metaspaceDecoder{replacement: []rune(p.replacement)[0], scheme: p.scheme}, nil
	case "WordPiece":
		d := wordPieceDecoder{prefix: "##", cleanup: true}
		if err := o.field("prefix", &d.prefix); err != nil {
			return nil, err
		}
		return d, o.field("cleanup", &d.cleanup)
	case "Sequence":
		list, err := parseList(o, "decoders", parseDecoder)
		return sequenceDecoder(list), err
	default:
		return nil, fmt.Errorf("decoder %q is not supported (supported: ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, WordPiece, Sequence)", typ)
	}
}
