package py

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/internal/jsonstr"
)

// JSONKind names a JSONValue's JSON type.
type JSONKind uint8

const (
	JSONNull JSONKind = iota
	JSONBool
	JSONNumber
	JSONString
	JSONArray
	JSONObject
)

// TypeName is the Python type a JSON kind decodes to, for messages.
func (k JSONKind) TypeName(raw string) string {
	switch k {
	case JSONNull:
		return "NoneType"
	case JSONBool:
		return "bool"
	case JSONNumber:
		if _, err := strconv.ParseInt(raw, 10, 64); err == nil {
			return "int"
		}
		return "float"
	case JSONString:
		return "str"
	case JSONArray:
		return "list"
	}
	return "dict"
}

// JSONValue is a value as Python's json.loads reads it. Scalars keep their source text (raw);
// strings also keep the decoded text (str), which object keys compare by.
type JSONValue struct {
	Kind    JSONKind
	Raw     string
	Text    string
	Items   []*JSONValue
	Members Dict[string, *JSONValue]
}

// Truthy is Python's bool() of the decoded value.
func (n *JSONValue) Truthy() bool {
	switch n.Kind {
	case JSONNull:
		return false
	case JSONBool:
		return n.Raw == "true"
	case JSONNumber:
		f, err := strconv.ParseFloat(n.Raw, 64)
		return err != nil || f != 0 // NaN and Infinity are truthy
	case JSONString:
		return n.Text != ""
	case JSONArray:
		return len(n.Items) > 0
	}
	return n.Members.Len() > 0
}

// Set stores value under key with dict semantics.
func (n *JSONValue) Set(key string, value *JSONValue) { n.Members.Set(key, value) }

func (n *JSONValue) Get(key string) *JSONValue { return n.Members.Value(key) }

// Encode writes n compactly, numbers as written.
func (n *JSONValue) Encode(b *bytes.Buffer) { n.write(b, false) }

// EncodePy writes n as Python's json.dumps(json.loads(text)) would: ", "
// and ": " separators, non-ASCII escaped, numbers with a fraction or
// exponent re-spelled as float repr.
func (n *JSONValue) EncodePy(b *bytes.Buffer) { n.write(b, true) }

func (n *JSONValue) write(b *bytes.Buffer, python bool) {
	itemSep, keySep := ",", ":"
	if python {
		itemSep, keySep = ", ", ": "
	}
	switch n.Kind {
	case JSONString:
		AppendJSONString(b, n.Text, python)
	case JSONNumber:
		if python {
			b.WriteString(RespellNumber(n.Raw))
		} else {
			b.WriteString(n.Raw)
		}
	case JSONArray:
		b.WriteByte('[')
		for i, it := range n.Items {
			if i > 0 {
				b.WriteString(itemSep)
			}
			it.write(b, python)
		}
		b.WriteByte(']')
	case JSONObject:
		b.WriteByte('{')
		first := true
		for key, value := range n.Members.All() {
			if !first {
				b.WriteString(itemSep)
			}
			first = false
			AppendJSONString(b, key, python)
			b.WriteString(keySep)
			value.write(b, python)
		}
		b.WriteByte('}')
	default:
		b.WriteString(n.Raw)
	}
}

// maxJSONDepth bounds nesting so hostile input cannot exhaust the stack;
// Python's own limit is its recursion limit, about 1000.
const maxJSONDepth = 1000

var errJSONDepth = errors.New("JSON nested too deeply")

// Loads parses s as Python's json.loads (strict mode): standard JSON
// plus the NaN, Infinity and -Infinity literals, surrounding whitespace
// allowed, any value at the top level.
func Loads(s string) (*JSONValue, error) {
	p := jsonParser{s: s}
	p.skipSpace()
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.i != len(s) {
		return nil, fmt.Errorf("extra data at offset %d", p.i)
	}
	return n, nil
}

type jsonParser struct {
	s string
	i int
}

func (p *jsonParser) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: "+format, append([]any{p.i}, args...)...)
}

func (p *jsonParser) literal(word string, kind JSONKind) (*JSONValue, error) {
	if len(p.s)-p.i >= len(word) && p.s[p.i:p.i+len(word)] == word {
		p.i += len(word)
		return &JSONValue{Kind: kind, Raw: word}, nil
	}
	return nil, p.errorf("expecting value")
}

func (p *jsonParser) value(depth int) (*JSONValue, error) {
	if depth > maxJSONDepth {
		return nil, errJSONDepth
	}
	if p.i >= len(p.s) {
		return nil, p.errorf("expecting value")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		str, raw, err := p.string()
		if err != nil {
			return nil, err
		}
		return &JSONValue{Kind: JSONString, Raw: raw, Text: str}, nil
	case c == 'n':
		return p.literal("null", JSONNull)
	case c == 't':
		return p.literal("true", JSONBool)
	case c == 'f':
		return p.literal("false", JSONBool)
	case c == 'N':
		return p.literal("NaN", JSONNumber)
	case c == 'I':
		return p.literal("Infinity", JSONNumber)
	case c == '-' && len(p.s) > p.i+1 && p.s[p.i+1] == 'I':
		p.i++
		n, err := p.literal("Infinity", JSONNumber)
		if err == nil {
			n.Raw = "-Infinity"
		}
		return n, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return nil, p.errorf("expecting value")
}

func (p *jsonParser) number() (*JSONValue, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case digits() == 0:
		return nil, p.errorf("expecting value")
	}
	if p.i+1 < len(p.s) && p.s[p.i] == '.' && p.s[p.i+1] >= '0' && p.s[p.i+1] <= '9' {
		p.i++
		digits()
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		save := p.i
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			p.i = save // Python stops the number before a bare 'e'
		}
	}
	return &JSONValue{Kind: JSONNumber, Raw: p.s[start:p.i]}, nil
}

// string parses a quoted string at p.i, returning its decoded text and
// its source text. Bytes that are not UTF-8 become U+FFFD, so the decoded
// text re-encodes to itself.
func (p *jsonParser) string() (string, string, error) {
	start := p.i
	text, n, err := jsonstr.AppendQuoted(nil, p.s[start+1:], 0)
	if err != nil {
		return "", "", p.stringError(start, err)
	}
	p.i = start + 1 + n
	return string(text), p.s[start:p.i], nil
}

// stringError words a bad string as json.loads does, at the offset it
// reports: the bad byte, or the end of an escape's first two bytes.
func (p *jsonParser) stringError(start int, err error) error {
	se, ok := errors.AsType[*jsonstr.SyntaxError](err)
	if !ok {
		return err
	}
	p.i = start + 1 + se.Offset
	switch se.Err {
	case jsonstr.ErrControl:
		return p.errorf("invalid control character")
	case jsonstr.ErrEscape:
		p.i += 2
		return p.errorf("invalid \\escape")
	case jsonstr.ErrUnicodeEscape:
		p.i += 2
		return p.errorf("invalid \\uXXXX escape")
	}
	return p.errorf("unterminated string starting at %d", start)
}

func (p *jsonParser) array(depth int) (*JSONValue, error) {
	n := &JSONValue{Kind: JSONArray}
	if p.open(']') {
		return n, nil
	}
	for {
		p.skipSpace()
		item, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.Items = append(n.Items, item)
		done, err := p.endOfItem(']')
		if err != nil {
			return nil, err
		}
		if done {
			return n, nil
		}
	}
}

func (p *jsonParser) object(depth int) (*JSONValue, error) {
	n := &JSONValue{Kind: JSONObject}
	if p.open('}') {
		return n, nil
	}
	for {
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, p.errorf("expecting property name enclosed in double quotes")
		}
		key, _, err := p.string()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.errorf("expecting ':' delimiter")
		}
		p.i++
		p.skipSpace()
		value, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.Set(key, value)
		done, err := p.endOfItem('}')
		if err != nil {
			return nil, err
		}
		if done {
			return n, nil
		}
	}
}

// open consumes an opening bracket and the space after it, and the
// closer too when it follows at once; it reports whether it did (the
// container is empty).
func (p *jsonParser) open(closer byte) (empty bool) {
	p.i++
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == closer {
		p.i++
		return true
	}
	return false
}

// endOfItem consumes what follows an array item or object member: a ","
// (more follow) or closer (the container is done).
func (p *jsonParser) endOfItem(closer byte) (done bool, err error) {
	p.skipSpace()
	if p.i < len(p.s) {
		switch p.s[p.i] {
		case ',':
			p.i++
			return false, nil
		case closer:
			p.i++
			return true, nil
		}
	}
	return false, p.errorf("expecting ',' delimiter")
}

// RespellNumber re-spells a JSON number as json.dumps(json.loads(raw)):
// integers keep their digits, floats take Python's repr.
func RespellNumber(raw string) string {
	switch raw {
	case "NaN", "Infinity", "-Infinity":
		return raw
	}
	if !strings.ContainsAny(raw, ".eE") {
		if raw == "-0" {
			return "0"
		}
		return raw
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil && f == 0 {
		return raw
	}
	var buf [32]byte
	return string(AppendJSONFloat(buf[:0], f))
}

// Repr is Python's repr() of the value json.loads makes of n: strings
// quoted, numbers as str() gives them, containers with ", " and ": "
// separators and repr'd items, keys in dict order.
func (n *JSONValue) Repr() string {
	var b strings.Builder
	n.AppendRepr(&b)
	return b.String()
}

// PyStr is Python's str() of the value json.loads makes of n: a string is
// its own text, anything else its repr.
func (n *JSONValue) PyStr() string {
	if n.Kind == JSONString {
		return n.Text
	}
	return n.Repr()
}

// AppendRepr writes n.Repr() to b.
func (n *JSONValue) AppendRepr(b *strings.Builder) {
	switch n.Kind {
	case JSONNull:
		b.WriteString("None")
	case JSONBool:
		if n.Raw == "true" {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case JSONNumber:
		b.WriteString(NumberStr(n.Raw))
	case JSONString:
		b.WriteString(StrRepr(n.Text))
	case JSONArray:
		b.WriteByte('[')
		for i, it := range n.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			it.AppendRepr(b)
		}
		b.WriteByte(']')
	case JSONObject:
		b.WriteByte('{')
		first := true
		for key, value := range n.Members.All() {
			if !first {
				b.WriteString(", ")
			}
			first = false
			b.WriteString(StrRepr(key))
			b.WriteString(": ")
			value.AppendRepr(b)
		}
		b.WriteByte('}')
	}
}

// NumberStr is str() of json.loads(raw) for a JSON number (or NaN,
// Infinity, -Infinity): integers keep their digits, floats print as repr,
// the non-finite as nan, inf and -inf.
func NumberStr(raw string) string {
	switch s := RespellNumber(raw); s {
	case "NaN":
		return "nan"
	case "Infinity":
		return "inf"
	case "-Infinity":
		return "-inf"
	default:
		return s
	}
}

// Reencode is json.dumps(json.loads(raw)): any JSON text re-encoded the
// way Python would send it after parsing it, key order kept, numbers with
// a fraction or exponent as float repr ("1e3" → 1000.0), integers as
// written ("-0" → 0), NaN/Infinity literals kept.
func Reencode(raw []byte) ([]byte, error) {
	n, err := Loads(string(raw))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(raw) + len(raw)/8)
	n.EncodePy(&b)
	return b.Bytes(), nil
}
