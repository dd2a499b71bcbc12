package tokenizer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/stampede-bench/stampede/internal/jsonstr"
)

// jsonScanner reads the large parts of tokenizer.json (the vocabulary and
// the merges, up to 30 MB) without encoding/json, which validates every
// nested raw message again and builds them through reflection: this is what
// keeps Llama-3's load under Hugging Face's own. Small components still go
// through encoding/json.
type jsonScanner struct {
	data []byte
	pos  int
}

func (s *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("JSON offset %d: %s", s.pos, fmt.Sprintf(format, args...))
}

func (s *jsonScanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *jsonScanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *jsonScanner) expect(c byte) error {
	if s.peek() != c {
		return s.errorf("expected %q", c)
	}
	s.pos++
	return nil
}

// readString reads a JSON string, decoding escapes.
func (s *jsonScanner) readString() (string, error) {
	b, err := s.readStringBytes()
	return string(b), err
}

// readStringBytes reads a JSON string; without escapes the result aliases
// the input, so the caller must copy it to keep it.
func (s *jsonScanner) readStringBytes() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	start := s.pos
	s.skipPlain()
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; {
		case c == '"':
			s.pos++
			return s.data[start : s.pos-1], nil
		case c == '\\':
			return s.readEscapedString(start)
		case c < 0x20:
			return nil, s.errorf("control character in string")
		default:
			s.pos++
		}
	}
	return nil, s.errorf("unterminated string")
}

// Word-at-a-time byte tests: the high bit of a byte of the result is set
// when that byte of x is zero (hasZero) or below n (hasLess, n <= 0x80).
// A borrow can also set a bit above a byte that tests true, never below
// one, so the lowest set bit is exact.
const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

func hasZero(x uint64) uint64    { return (x - lowBits) & ^x & highBits }
func hasLess(x, n uint64) uint64 { return (x - n*lowBits) & ^x & highBits }

// skipPlain advances inside a string over the bytes that need no attention
// (not '"', '\\' or a control character), eight at a time: most of
// tokenizer.json is such bytes, in short strings.
func (s *jsonScanner) skipPlain() {
	for s.pos+8 <= len(s.data) {
		w := binary.LittleEndian.Uint64(s.data[s.pos:])
		if m := hasLess(w, 0x20) | hasZero(w^('"'*lowBits)) | hasZero(w^('\\'*lowBits)); m != 0 {
			s.pos += bits.TrailingZeros64(m) / 8
			return
		}
		s.pos += 8
	}
}

// readEscapedString reads the rest of a string that holds an escape, from
// its content's start, into a new slice. Bytes that are not UTF-8 stay as
// they come, as they do in the strings without escapes, which alias the
// input.
func (s *jsonScanner) readEscapedString(start int) ([]byte, error) {
	buf, n, err := jsonstr.AppendQuoted(nil, s.data[start:], jsonstr.KeepInvalidUTF8)
	if err != nil {
		return nil, s.stringError(start, err)
	}
	s.pos = start + n
	return buf, nil
}

// stringError words a bad string at the offset of what is wrong: the bad
// byte, or the end of an escape's first two bytes.
func (s *jsonScanner) stringError(start int, err error) error {
	se, ok := errors.AsType[*jsonstr.SyntaxError](err)
	if !ok {
		return s.errorf("%v", err)
	}
	s.pos = start + se.Offset
	switch se.Err {
	case jsonstr.ErrControl:
		return s.errorf("control character in string")
	case jsonstr.ErrEscape:
		s.pos += 2
		return s.errorf("invalid escape \\%c", s.data[s.pos-1])
	case jsonstr.ErrUnicodeEscape:
		s.pos += 2
		if s.pos+4 > len(s.data) {
			return s.errorf("short \\u escape")
		}
		return s.errorf("invalid \\u escape %q", s.data[s.pos:s.pos+4])
	}
	return s.errorf("unterminated string")
}

// readInt reads a JSON integer that fits an int32.
func (s *jsonScanner) readInt() (int32, error) {
	s.skipSpace()
	start := s.pos
	neg := s.pos < len(s.data) && s.data[s.pos] == '-'
	if neg {
		s.pos++
	}
	v := int64(0)
	digits := s.pos
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		v = v*10 + int64(s.data[s.pos]-'0')
		s.pos++
		if v > 1<<31 {
			break // too large; the digits left make it an error
		}
	}
	n := s.pos - digits
	if n == 0 || v > 1<<31 || (!neg && v == 1<<31) ||
		(s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9') {
		for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
			s.pos++
		}
		return 0, s.errorf("invalid integer %q", s.data[start:s.pos])
	}
	if neg {
		v = -v
	}
	return int32(v), nil
}

// skipValue steps over any JSON value and returns its raw bytes.
func (s *jsonScanner) skipValue() ([]byte, error) {
	s.skipSpace()
	start := s.pos
	end := func() []byte {
		e := s.pos
		for e > start && (s.data[e-1] == ' ' || s.data[e-1] == '\t' || s.data[e-1] == '\n' || s.data[e-1] == '\r') {
			e--
		}
		return s.data[start:e]
	}
	depth := 0
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; {
		case c == '"':
			if _, err := s.readStringBytes(); err != nil {
				return nil, err
			}
		case c == '{' || c == '[':
			depth++
			s.pos++
			continue
		case c == '}' || c == ']':
			if depth == 0 {
				return end(), nil // a scalar ended with its container
			}
			depth--
			s.pos++
		case c == ',' && depth == 0:
			return end(), nil
		default:
			s.pos++
			continue
		}
		if depth == 0 {
			return end(), nil
		}
	}
	if depth != 0 || s.pos == start {
		return nil, s.errorf("unexpected end of input")
	}
	return end(), nil
}

// eachField calls fn for every member of the object at the cursor; fn must
// consume the value (or return without reading it, and it is skipped).
func (s *jsonScanner) eachField(fn func(key string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		key, err := s.readString()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		before := s.pos
		if err := fn(key); err != nil {
			return err
		}
		if s.pos == before {
			if _, err := s.skipValue(); err != nil {
				return err
			}
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.errorf("expected ',' or '}' after field %q", key)
		}
	}
}

// eachElement calls fn for every element of the array at the cursor.
func (s *jsonScanner) eachElement(fn func(i int) error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := fn(i); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.errorf("expected ',' or ']' after element %d", i)
		}
	}
}

// readVocab reads {"token": id, ...} into one arena: entry i is the token
// arena[ends[i-1]:ends[i]] (unescaped) with id ids[i], in file order. Flat
// arrays rather than a map: the garbage collector has nothing to trace and
// the vocabulary table (table.go) is built from them without a copy when
// the ids come in order.
func (s *jsonScanner) readVocab() (arena []byte, ends []uint32, ids []int32, err error) {
	if err := s.expect('{'); err != nil {
		return nil, nil, nil, err
	}
	if s.peek() == '}' {
		s.pos++
		return arena, ends, ids, nil
	}
	for {
		raw, err := s.readStringBytes()
		if err != nil {
			return nil, nil, nil, err
		}
		arena = append(arena, raw...)
		ends = append(ends, uint32(len(arena)))
		if err := s.expect(':'); err != nil {
			return nil, nil, nil, err
		}
		id, err := s.readInt()
		if err != nil {
			return nil, nil, nil, err
		}
		ids = append(ids, id)
		switch s.peek() {
		case ',':
			s.pos++
			s.skipSpace()
		case '}':
			s.pos++
			return arena, ends, ids, nil
		default:
			return nil, nil, nil, s.errorf("expected ',' or '}' after field %q", raw)
		}
	}
}

// readMerge reads one merge, written as an "a b" string or an ["a", "b"]
// pair, at the cursor. a and b alias the input or pair's storage, so they
// are valid until the next call.
func (s *jsonScanner) readMerge(rank int, pair *[][]byte) (a, b []byte, err error) {
	if s.peek() == '"' {
		line, err := s.readStringBytes()
		if err != nil {
			return nil, nil, err
		}
		a, b, ok := bytes.Cut(line, []byte{' '})
		if !ok || bytes.IndexByte(b, ' ') >= 0 {
			return nil, nil, fmt.Errorf("merge %d %q is not a pair of tokens", rank, line)
		}
		return a, b, nil
	}
	*pair = (*pair)[:0]
	err = s.eachElement(func(int) error {
		str, err := s.readStringBytes()
		*pair = append(*pair, str)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if len(*pair) != 2 {
		return nil, nil, fmt.Errorf("merge %d %q is not a pair of tokens", rank, *pair)
	}
	return (*pair)[0], (*pair)[1], nil
}
