// Package jsonstr unescapes the content of JSON strings, the one place the
// module's JSON readers (the SSE chunk decoder, the tokenizer.json scanner,
// Python's json.loads) turn escape sequences into text. By default it reads
// a string as encoding/json does; two flags select the readings some callers
// must keep: fastjson's, for the stream decoder whose text must read as it
// always has, and bytes passed through as they come, for a scanner whose
// unescaped strings alias its input.
//
// Both functions append to dst and allocate only when dst must grow, or to
// report an error.
package jsonstr

import (
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// Flags choose between the readings of a JSON string that decoders differ on.
type Flags uint8

const (
	// KeepInvalidUTF8 copies bytes that are not UTF-8 as they come;
	// encoding/json makes U+FFFD of each such byte.
	KeepInvalidUTF8 Flags = 1 << iota
	// FastjsonSurrogates reads a \u escape of a UTF-16 surrogate as
	// fastjson does: with a \u escape after it, the two make one rune,
	// U+FFFD when they do not pair; with anything else after it, it stays
	// as it came, six bytes of escape. encoding/json makes U+FFFD of a
	// surrogate that does not pair with the escape after it, and reads that
	// escape on its own.
	FastjsonSurrogates
)

// The ways a string's content can break JSON's grammar; a SyntaxError wraps
// one, so callers can word it as their own format does.
var (
	ErrControl       = errors.New("control character in string")
	ErrEscape        = errors.New("invalid escape in string")
	ErrUnicodeEscape = errors.New(`invalid \u escape in string`)
	ErrQuote         = errors.New("unescaped quote in string")
	ErrUnterminated  = errors.New("unterminated string")
)

// A SyntaxError is where a string's content breaks JSON's grammar.
type SyntaxError struct {
	Offset int   // bytes into the content where the offending byte or escape starts
	Err    error // one of ErrControl, ErrEscape, ErrUnicodeEscape, ErrQuote, ErrUnterminated
}

func (e *SyntaxError) Error() string { return e.Err.Error() }
func (e *SyntaxError) Unwrap() error { return e.Err }

// plain marks the bytes a string's content holds as they are: not the
// quote, the backslash or a control character. plainASCII also leaves out
// the bytes of multi-byte UTF-8, which the default reading checks.
var plain, plainASCII = func() (all, ascii [256]bool) {
	for c := 0x20; c < 0x100; c++ {
		all[c] = c != '"' && c != '\\'
		ascii[c] = all[c] && c < utf8.RuneSelf
	}
	return all, ascii
}()

// shortEscapes maps the byte after a backslash to the byte it stands for,
// for the two-byte escapes.
var shortEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// Append appends the unescaped text of content, a JSON string's content
// without its quotes, to dst. An error is a *SyntaxError; dst then holds
// the text before it.
func Append[T ~string | ~[]byte](dst []byte, content T, f Flags) ([]byte, error) {
	dst, _, err := appendString(dst, content, f, false)
	return dst, err
}

// AppendQuoted appends the unescaped text of the JSON string that s starts,
// just after its opening quote, to dst, and returns the length of s up to
// and including the closing quote. An error is a *SyntaxError, and the
// length returned with it is its Offset.
func AppendQuoted[T ~string | ~[]byte](dst []byte, s T, f Flags) ([]byte, int, error) {
	return appendString(dst, s, f, true)
}

// appendString unescapes s up to its closing quote (quoted) or its end,
// returning the offset after what it read.
func appendString[T ~string | ~[]byte](dst []byte, s T, f Flags, quoted bool) ([]byte, int, error) {
	table := &plainASCII
	if f&KeepInvalidUTF8 != 0 {
		table = &plain
	}
	i := 0
	for {
		start := i
		for i < len(s) && table[s[i]] {
			i++
		}
		dst = append(dst, s[start:i]...)
		if i == len(s) {
			if quoted {
				return dst, i, &SyntaxError{Offset: i, Err: ErrUnterminated}
			}
			return dst, i, nil
		}
		switch c := s[i]; {
		case c == '"':
			if quoted {
				return dst, i + 1, nil
			}
			return dst, i, &SyntaxError{Offset: i, Err: ErrQuote}
		case c == '\\':
			if i+1 < len(s) && shortEscapes[s[i+1]] != 0 {
				dst = append(dst, shortEscapes[s[i+1]])
				i += 2
				continue
			}
			var err error
			if dst, i, err = appendUnicodeEscape(dst, s, i, f); err != nil {
				return dst, i, err
			}
		case c < 0x20:
			return dst, i, &SyntaxError{Offset: i, Err: ErrControl}
		default: // the first byte of multi-byte UTF-8, checked
			r, n := decodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
		}
	}
}

// appendUnicodeEscape appends the text of the \u escape at s[i], with the
// escape after it when the two are a surrogate pair, and returns the offset
// after what it read; any other escape there is an error.
func appendUnicodeEscape[T ~string | ~[]byte](dst []byte, s T, i int, f Flags) ([]byte, int, error) {
	switch {
	case i+1 == len(s):
		return dst, i, &SyntaxError{Offset: i, Err: ErrUnterminated}
	case s[i+1] != 'u':
		return dst, i, &SyntaxError{Offset: i, Err: ErrEscape}
	}
	r, ok := hex4(s, i+2)
	if !ok {
		return dst, i, &SyntaxError{Offset: i, Err: ErrUnicodeEscape}
	}
	if !utf16.IsSurrogate(r) {
		return utf8.AppendRune(dst, r), i + 6, nil
	}
	next := i + 6
	followed := next+1 < len(s) && s[next] == '\\' && s[next+1] == 'u'
	if f&FastjsonSurrogates != 0 {
		if !followed {
			return append(dst, s[i:next]...), next, nil
		}
		r2, ok := hex4(s, next+2)
		if !ok {
			return dst, next, &SyntaxError{Offset: next, Err: ErrUnicodeEscape}
		}
		return utf8.AppendRune(dst, utf16.DecodeRune(r, r2)), next + 6, nil
	}
	if followed {
		if r2, ok := hex4(s, next+2); ok {
			if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
				return utf8.AppendRune(dst, pair), next + 6, nil
			}
		}
	}
	return utf8.AppendRune(dst, utf8.RuneError), next, nil
}

// hex4 reads the four hex digits at s[i].
func hex4[T ~string | ~[]byte](s T, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for j := i; j < i+4; j++ {
		c := s[j]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// decodeRune is utf8.DecodeRune for either kind of text.
func decodeRune[T ~string | ~[]byte](s T) (rune, int) {
	var b [utf8.UTFMax]byte
	n := copy(b[:], s[:min(len(s), utf8.UTFMax)])
	return utf8.DecodeRune(b[:n])
}
