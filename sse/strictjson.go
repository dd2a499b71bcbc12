package sse

import "fmt"

// checkLexemes reports the first lexical error in JSON text b: what a strict
// parser such as Python's json.loads rejects but fastjson's parser lets
// through. fastjson checks the structure (brackets, commas, colons, the
// literals true, false and null) and the Decoder relies on it for that; it
// takes a string's content and any run of number characters as they come.
// So this one pass checks exactly the rest: strings hold no control
// characters and only valid escapes, numbers follow the JSON grammar and are
// not followed by more number characters, and nothing outside strings is
// anything but a structural character, whitespace, a number or a literal
// (no NaN or Infinity).
//
// A flat scan, it costs less than fastjson.Validate, which walks the whole
// structure a second time, and it catches what Validate misses: a control
// character that precedes an escape sequence in the same string.
func checkLexemes(b []byte) error {
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r', '{', '}', '[', ']', ',', ':':
			i++
		case '"':
			end, err := scanString(b, i+1)
			if err != nil {
				return err
			}
			i = end
		case 't':
			i += literalLen(b[i:], "true")
		case 'f':
			i += literalLen(b[i:], "false")
		case 'n':
			i += literalLen(b[i:], "null")
		default:
			end, ok := scanNumber(b, i)
			if !ok {
				return fmt.Errorf("unexpected %q at offset %d", c, i)
			}
			i = end
		}
	}
	return nil
}

// literalLen returns len(lit) when b starts with it, else 1, so the rest of
// a broken literal is checked byte by byte ("nan", which fastjson would take
// for a number, fails at the 'a'); what passes, such as a lone 't' before a
// quote, fastjson's parser rejects.
func literalLen(b []byte, lit string) int {
	if len(b) >= len(lit) && string(b[:len(lit)]) == lit {
		return len(lit)
	}
	return 1
}

// plainStringByte marks the bytes a string may hold as they are: all but
// control characters, the quote and the backslash.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString checks a string whose opening quote precedes b[i] and returns
// the index after its closing quote.
func scanString(b []byte, i int) (int, error) {
	for {
		for i < len(b) && plainStringByte[b[i]] {
			i++
		}
		if i == len(b) {
			return 0, fmt.Errorf("unterminated string")
		}
		switch c := b[i]; c {
		case '"':
			return i + 1, nil
		case '\\':
			n, ok := escapeLen(b[i:])
			if !ok {
				return 0, fmt.Errorf("invalid escape %q in a string at offset %d", b[i:min(i+6, len(b))], i)
			}
			i += n
		default:
			return 0, fmt.Errorf("control character %#02x in a string at offset %d", c, i)
		}
	}
}

// escapeLen returns the length of the escape sequence at the start of b.
func escapeLen(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, true
	case 'u':
		if len(b) < 6 {
			return 0, false
		}
		for _, h := range b[2:6] {
			if !isHex(h) {
				return 0, false
			}
		}
		return 6, true
	}
	return 0, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber matches -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at b[i]
// and returns the index after it. The match must end where fastjson's raw
// number run ends (at a byte outside [0-9.eE+-]), so "01" or "1.2.3" fail.
func scanNumber(b []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		return i
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && isDigit(b[i]):
		i = digits(i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false
		}
		i = j
	}
	if i < len(b) {
		switch b[i] {
		case '.', 'e', 'E', '+', '-':
			return 0, false
		}
		if isDigit(b[i]) {
			return 0, false
		}
	}
	return i, true
}
