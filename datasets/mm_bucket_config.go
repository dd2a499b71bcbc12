package datasets

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stampede-bench/stampede/internal/py"
)

// MMBucketConfig is --random-mm-bucket-config in Python dict order.
type MMBucketConfig []MMBucket

// UnmarshalFlag parses a Python literal dict as vLLM's
// _parse_mm_bucket_config does: keys are (H, W, T) tuples of ints, or
// strings that are themselves such tuple literals; values are cast with
// float(). argparse reports any failure as "invalid
// _parse_mm_bucket_config value", so the detail here is for callers.
func (c *MMBucketConfig) UnmarshalFlag(s string) error {
	lit, err := parsePyLiteral(s)
	if err != nil {
		return err
	}
	if lit.kind != litDict {
		return fmt.Errorf("bucket config must be a dict, not %s", lit.repr())
	}
	var out MMBucketConfig
	for i, k := range lit.keys {
		key := k
		if key.kind == litStr {
			if inner, err := parsePyLiteral(key.s); err == nil {
				key = inner
			}
		}
		if key.kind != litTuple || len(key.items) != 3 {
			return fmt.Errorf("invalid bucket key %s: want a tuple (H, W, T) of ints", k.repr())
		}
		var dims [3]int
		for j, x := range key.items {
			if x.kind != litInt {
				return fmt.Errorf("invalid bucket key %s: want a tuple (H, W, T) of ints", k.repr())
			}
			dims[j] = int(x.i)
		}
		p, err := lit.values[i].float()
		if err != nil {
			return err
		}
		b := MMBucket{Height: dims[0], Width: dims[1], Frames: dims[2], Probability: p}
		replaced := false
		for j := range out {
			if out[j].Height == b.Height && out[j].Width == b.Width && out[j].Frames == b.Frames {
				out[j].Probability = p
				replaced = true
			}
		}
		if !replaced {
			out = append(out, b)
		}
	}
	*c = out
	return nil
}

// litKind is the Python type of a literal.
type litKind uint8

const (
	litNone litKind = iota
	litInt          // int, and bool (a subclass of int)
	litFloat
	litStr
	litTuple
	litList
	litDict
)

// pyLit is a value of the ast.literal_eval subset the bucket config needs:
// None, True/False, ints, floats, strings, tuples, lists and dicts.
type pyLit struct {
	kind   litKind
	i      int64
	f      float64
	s      string
	isBool bool
	items  []pyLit
	keys   []pyLit
	values []pyLit
}

// float is Python's float(v).
func (v pyLit) float() (float64, error) {
	switch v.kind {
	case litInt:
		return float64(v.i), nil
	case litFloat:
		return v.f, nil
	case litStr:
		return py.ParseFloat(v.s)
	}
	return 0, errors.New("float() argument must be a string or a real number")
}

// repr is Python's repr(v), as messages quote keys.
func (v pyLit) repr() string {
	switch v.kind {
	case litNone:
		return "None"
	case litInt:
		if v.isBool {
			if v.i != 0 {
				return "True"
			}
			return "False"
		}
		return strconv.FormatInt(v.i, 10)
	case litFloat:
		return py.FloatRepr(v.f)
	case litStr:
		return py.StrRepr(v.s)
	case litTuple, litList:
		parts := make([]string, len(v.items))
		for i, it := range v.items {
			parts[i] = it.repr()
		}
		if v.kind == litList {
			return "[" + strings.Join(parts, ", ") + "]"
		}
		if len(parts) == 1 {
			return "(" + parts[0] + ",)"
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	parts := make([]string, len(v.keys))
	for i := range v.keys {
		parts[i] = v.keys[i].repr() + ": " + v.values[i].repr()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// maxLiteralDepth bounds nesting, as Python's parser does.
const maxLiteralDepth = 200

// parsePyLiteral evaluates s as ast.literal_eval would for the supported
// subset. Leading and trailing spaces and tabs are allowed, as Python
// strips them before parsing.
func parsePyLiteral(s string) (pyLit, error) {
	p := litParser{s: strings.Trim(s, " \t")}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return pyLit{}, err
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return pyLit{}, fmt.Errorf("invalid syntax at offset %d", p.i)
	}
	return v, nil
}

type litParser struct {
	s string
	i int
}

func (p *litParser) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r', '\f':
			p.i++
		default:
			return
		}
	}
}

func (p *litParser) syntaxError() error {
	return fmt.Errorf("invalid syntax at offset %d", p.i)
}

func (p *litParser) value(depth int) (pyLit, error) {
	if depth > maxLiteralDepth {
		return pyLit{}, errors.New("literal nested too deeply")
	}
	p.skipSpace()
	if p.i >= len(p.s) {
		return pyLit{}, p.syntaxError()
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.dict(depth)
	case c == '(':
		return p.sequence(depth, ')', litTuple)
	case c == '[':
		return p.sequence(depth, ']', litList)
	case c == '\'' || c == '"':
		return p.str()
	case c == '-' || c == '+':
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return pyLit{}, err
		}
		switch v.kind {
		case litInt:
			if c == '-' {
				v.i = -v.i
			}
			v.isBool = false
			return v, nil
		case litFloat:
			if c == '-' {
				v.f = -v.f
			}
			return v, nil
		}
		return pyLit{}, errors.New("malformed node or string: unary sign on a non-number")
	case c >= '0' && c <= '9' || c == '.':
		return p.number()
	case isIdentStart(c):
		start := p.i
		for p.i < len(p.s) && (isIdentStart(p.s[p.i]) || (p.s[p.i] >= '0' && p.s[p.i] <= '9')) {
			p.i++
		}
		switch word := p.s[start:p.i]; word {
		case "None":
			return pyLit{kind: litNone}, nil
		case "True":
			return pyLit{kind: litInt, i: 1, isBool: true}, nil
		case "False":
			return pyLit{kind: litInt, isBool: true}, nil
		default:
			return pyLit{}, fmt.Errorf("malformed node or string: name %s", word)
		}
	}
	return pyLit{}, p.syntaxError()
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func (p *litParser) number() (pyLit, error) {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if (c >= '0' && c <= '9') || c == '_' || c == '.' || c == 'e' || c == 'E' || c == 'x' || c == 'X' ||
			(c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
			((c == '+' || c == '-') && (p.s[p.i-1] == 'e' || p.s[p.i-1] == 'E')) {
			p.i++
			continue
		}
		break
	}
	text := p.s[start:p.i]
	if v, ok := decimalLiteral(text); ok {
		if len(text) > 1 && text[0] == '0' && strings.Trim(text, "0_") != "" {
			return pyLit{}, errors.New("leading zeros in decimal integer literals are not permitted")
		}
		return pyLit{kind: litInt, i: v}, nil
	}
	if strings.HasPrefix(text, "0x") || strings.HasPrefix(text, "0X") {
		v, err := strconv.ParseInt(strings.ReplaceAll(text[2:], "_", ""), 16, 64)
		if err != nil {
			return pyLit{}, p.syntaxError()
		}
		return pyLit{kind: litInt, i: v}, nil
	}
	f, err := py.ParseFloat(text)
	if err != nil || strings.ContainsAny(strings.ToLower(text), "in") {
		return pyLit{}, p.syntaxError()
	}
	return pyLit{kind: litFloat, f: f}, nil
}

// decimalLiteral parses a Python decimal integer literal: digits with
// single underscores between them (the sign is the parser's unary
// operator).
func decimalLiteral(text string) (int64, bool) {
	prevDigit := false
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c >= '0' && c <= '9':
			prevDigit = true
		case c == '_' && prevDigit && i+1 < len(text):
			prevDigit = false
		default:
			return 0, false
		}
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(text, "_", ""), 10, 64)
	return v, err == nil && prevDigit
}

// str parses a single- or double-quoted string with Python's common
// escapes; adjacent string literals concatenate, as in Python.
func (p *litParser) str() (pyLit, error) {
	var out strings.Builder
	for {
		quote := p.s[p.i]
		p.i++
		for {
			if p.i >= len(p.s) || p.s[p.i] == '\n' {
				return pyLit{}, errors.New("unterminated string literal")
			}
			c := p.s[p.i]
			if c == quote {
				p.i++
				break
			}
			if c != '\\' {
				out.WriteByte(c)
				p.i++
				continue
			}
			if p.i+1 >= len(p.s) {
				return pyLit{}, errors.New("unterminated string literal")
			}
			esc := p.s[p.i+1]
			p.i += 2
			switch esc {
			case '\\', '\'', '"':
				out.WriteByte(esc)
			case 'n':
				out.WriteByte('\n')
			case 't':
				out.WriteByte('\t')
			case 'r':
				out.WriteByte('\r')
			case '0':
				out.WriteByte(0)
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[esc]
				if p.i+n > len(p.s) {
					return pyLit{}, errors.New("truncated escape in string literal")
				}
				v, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
				if err != nil || !utf8.ValidRune(rune(v)) {
					return pyLit{}, errors.New("malformed escape in string literal")
				}
				out.WriteRune(rune(v))
				p.i += n
			default:
				out.WriteByte('\\')
				out.WriteByte(esc)
			}
		}
		save := p.i
		p.skipSpace()
		if p.i < len(p.s) && (p.s[p.i] == '\'' || p.s[p.i] == '"') {
			continue
		}
		p.i = save
		return pyLit{kind: litStr, s: out.String()}, nil
	}
}

func (p *litParser) sequence(depth int, closer byte, kind litKind) (pyLit, error) {
	v := pyLit{kind: kind}
	p.i++
	sawComma := false
	for {
		p.skipSpace()
		if p.i < len(p.s) && p.s[p.i] == closer {
			p.i++
			if kind == litTuple && len(v.items) == 1 && !sawComma {
				return v.items[0], nil // (x) is x, not a tuple
			}
			return v, nil
		}
		item, err := p.value(depth + 1)
		if err != nil {
			return pyLit{}, err
		}
		v.items = append(v.items, item)
		comma, err := p.afterItem(closer)
		if err != nil {
			return pyLit{}, err
		}
		sawComma = sawComma || comma
	}
}

func (p *litParser) dict(depth int) (pyLit, error) {
	v := pyLit{kind: litDict}
	p.i++
	for {
		p.skipSpace()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return v, nil
		}
		key, err := p.value(depth + 1)
		if err != nil {
			return pyLit{}, err
		}
		if key.kind == litList || key.kind == litDict {
			return pyLit{}, fmt.Errorf("unhashable type: '%s'", map[litKind]string{litList: "list", litDict: "dict"}[key.kind])
		}
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return pyLit{}, p.syntaxError()
		}
		p.i++
		value, err := p.value(depth + 1)
		if err != nil {
			return pyLit{}, err
		}
		v.setItem(key, value)
		if _, err := p.afterItem('}'); err != nil {
			return pyLit{}, err
		}
	}
}

// afterItem consumes what may follow a display's item: a "," (consumed,
// comma is true; Python allows one before the closer too) or the closer
// (left for the caller's loop to consume).
func (p *litParser) afterItem(closer byte) (comma bool, err error) {
	p.skipSpace()
	if p.i < len(p.s) {
		switch p.s[p.i] {
		case ',':
			p.i++
			return true, nil
		case closer:
			return false, nil
		}
	}
	return false, p.syntaxError()
}

// setItem stores value under key with dict semantics (equal keys: last
// value, first position). Keys compare by value, 1 == 1.0 == True.
func (v *pyLit) setItem(key, value pyLit) {
	for i := range v.keys {
		if litEqual(v.keys[i], key) {
			v.values[i] = value
			return
		}
	}
	v.keys = append(v.keys, key)
	v.values = append(v.values, value)
}

func litEqual(a, b pyLit) bool {
	num := func(x pyLit) (float64, bool) {
		switch x.kind {
		case litInt:
			return float64(x.i), true
		case litFloat:
			return x.f, true
		}
		return 0, false
	}
	if fa, ok := num(a); ok {
		fb, ok := num(b)
		return ok && fa == fb
	}
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case litNone:
		return true
	case litStr:
		return a.s == b.s
	case litTuple:
		if len(a.items) != len(b.items) {
			return false
		}
		for i := range a.items {
			if !litEqual(a.items[i], b.items[i]) {
				return false
			}
		}
		return true
	}
	return false
}
