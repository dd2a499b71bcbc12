package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stampede-bench/stampede/internal/py"
)

// JSONObject is a JSON object whose values are JSON text, in Python dict
// order: first insertion fixes a key's position, a later value for the
// same key replaces the value in place. Request bodies built from it list
// keys as vLLM's client would. Like a map, a copy shares its entries;
// clone makes one that does not.
type JSONObject struct {
	py.Dict[string, json.RawMessage]
}

// Merge sets every member of other over o, Python's {**o, **other}.
func (o *JSONObject) Merge(other JSONObject) { o.Update(&other.Dict) }

// clone returns a copy of o that changes apart from it.
func (o *JSONObject) clone() JSONObject { return JSONObject{o.Copy()} }

// MarshalJSON writes the object compactly, keys in order.
func (o JSONObject) MarshalJSON() ([]byte, error) { return o.encode(",", ":", false), nil }

// encodePy writes the object as Python's json.dumps does: ", " and ": "
// separators, keys with ensure_ascii escaping. Values are written as
// stored, so a request body holds them already in json.dumps form.
func (o JSONObject) encodePy() []byte { return o.encode(", ", ": ", true) }

func (o JSONObject) encode(itemSep, keySep string, ensureASCII bool) []byte {
	n := 2
	for key, value := range o.All() {
		n += len(key) + len(value) + 6
	}
	var b bytes.Buffer
	b.Grow(n)
	b.WriteByte('{')
	first := true
	for key, value := range o.All() {
		if !first {
			b.WriteString(itemSep)
		}
		first = false
		py.AppendJSONString(&b, key, ensureASCII)
		b.WriteString(keySep)
		if len(value) == 0 {
			b.WriteString("null")
		} else {
			b.Write(value)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// JSONText is a flag value that argparse passes through json.loads: the
// value re-encoded compactly with Python's semantics applied (duplicate
// keys: last value, first position). nil means the flag was not given.
type JSONText []byte

// UnmarshalFlag parses s as Python's json.loads would.
func (t *JSONText) UnmarshalFlag(s string) error {
	n, err := parsePyJSON(s)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	n.encode(&b)
	*t = b.Bytes()
	return nil
}

// Object returns the value as an ordered object; ok is false when the
// value is not a JSON object.
func (t JSONText) Object() (obj JSONObject, ok bool) {
	n, err := parsePyJSON(string(t))
	if err != nil || n.kind != jsonObject {
		return obj, false
	}
	for key, value := range n.members.All() {
		var b bytes.Buffer
		value.encode(&b)
		obj.Set(key, b.Bytes())
	}
	return obj, true
}

// jsonKind names a node's JSON type.
type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

// pyTypeName is the Python type a JSON kind decodes to, for messages.
func (k jsonKind) pyTypeName(raw string) string {
	switch k {
	case jsonNull:
		return "NoneType"
	case jsonBool:
		return "bool"
	case jsonNumber:
		if _, err := strconv.ParseInt(raw, 10, 64); err == nil {
			return "int"
		}
		return "float"
	case jsonString:
		return "str"
	case jsonArray:
		return "list"
	}
	return "dict"
}

// jsonNode is a parsed JSON value. Scalars keep their source text (raw);
// strings also keep the decoded text (str), which object keys compare by.
type jsonNode struct {
	kind    jsonKind
	raw     string
	str     string
	items   []*jsonNode
	members py.Dict[string, *jsonNode]
}

// truthy is Python's bool() of the decoded value.
func (n *jsonNode) truthy() bool {
	switch n.kind {
	case jsonNull:
		return false
	case jsonBool:
		return n.raw == "true"
	case jsonNumber:
		f, err := strconv.ParseFloat(n.raw, 64)
		return err != nil || f != 0 // NaN and Infinity are truthy
	case jsonString:
		return n.str != ""
	case jsonArray:
		return len(n.items) > 0
	}
	return n.members.Len() > 0
}

// set stores value under key with dict semantics.
func (n *jsonNode) set(key string, value *jsonNode) { n.members.Set(key, value) }

func (n *jsonNode) get(key string) *jsonNode { return n.members.Value(key) }

// encode writes n compactly, numbers as written.
func (n *jsonNode) encode(b *bytes.Buffer) { n.write(b, false) }

// encodePy writes n as Python's json.dumps(json.loads(text)) would: ", "
// and ": " separators, non-ASCII escaped, numbers with a fraction or
// exponent re-spelled as float repr.
func (n *jsonNode) encodePy(b *bytes.Buffer) { n.write(b, true) }

func (n *jsonNode) write(b *bytes.Buffer, python bool) {
	itemSep, keySep := ",", ":"
	if python {
		itemSep, keySep = ", ", ": "
	}
	switch n.kind {
	case jsonString:
		py.AppendJSONString(b, n.str, python)
	case jsonNumber:
		if python {
			b.WriteString(respellJSONNumber(n.raw))
		} else {
			b.WriteString(n.raw)
		}
	case jsonArray:
		b.WriteByte('[')
		for i, it := range n.items {
			if i > 0 {
				b.WriteString(itemSep)
			}
			it.write(b, python)
		}
		b.WriteByte(']')
	case jsonObject:
		b.WriteByte('{')
		first := true
		for key, value := range n.members.All() {
			if !first {
				b.WriteString(itemSep)
			}
			first = false
			py.AppendJSONString(b, key, python)
			b.WriteString(keySep)
			value.write(b, python)
		}
		b.WriteByte('}')
	default:
		b.WriteString(n.raw)
	}
}

// maxJSONDepth bounds nesting so hostile input cannot exhaust the stack;
// Python's own limit is its recursion limit, about 1000.
const maxJSONDepth = 1000

var errJSONDepth = errors.New("JSON nested too deeply")

// parsePyJSON parses s as Python's json.loads (strict mode): standard JSON
// plus the NaN, Infinity and -Infinity literals, surrounding whitespace
// allowed, any value at the top level.
func parsePyJSON(s string) (*jsonNode, error) {
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

func (p *jsonParser) literal(word string, kind jsonKind) (*jsonNode, error) {
	if len(p.s)-p.i >= len(word) && p.s[p.i:p.i+len(word)] == word {
		p.i += len(word)
		return &jsonNode{kind: kind, raw: word}, nil
	}
	return nil, p.errorf("expecting value")
}

func (p *jsonParser) value(depth int) (*jsonNode, error) {
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
		return &jsonNode{kind: jsonString, raw: raw, str: str}, nil
	case c == 'n':
		return p.literal("null", jsonNull)
	case c == 't':
		return p.literal("true", jsonBool)
	case c == 'f':
		return p.literal("false", jsonBool)
	case c == 'N':
		return p.literal("NaN", jsonNumber)
	case c == 'I':
		return p.literal("Infinity", jsonNumber)
	case c == '-' && len(p.s) > p.i+1 && p.s[p.i+1] == 'I':
		p.i++
		n, err := p.literal("Infinity", jsonNumber)
		if err == nil {
			n.raw = "-Infinity"
		}
		return n, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return nil, p.errorf("expecting value")
}

func (p *jsonParser) number() (*jsonNode, error) {
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
	return &jsonNode{kind: jsonNumber, raw: p.s[start:p.i]}, nil
}

// string parses a quoted string at p.i, returning its decoded text and
// its source text.
func (p *jsonParser) string() (string, string, error) {
	start := p.i
	p.i++
	var out []byte
	for {
		if p.i >= len(p.s) {
			return "", "", p.errorf("unterminated string starting at %d", start)
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(out), p.s[start:p.i], nil
		case c < 0x20:
			return "", "", p.errorf("invalid control character")
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", "", p.errorf("unterminated string starting at %d", start)
			}
			esc := p.s[p.i+1]
			p.i += 2
			switch esc {
			case '"', '\\', '/':
				out = append(out, esc)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", "", err
				}
				if utf16.IsSurrogate(r) && p.i+6 <= len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
					save := p.i
					p.i += 2
					r2, err := p.hex4()
					if err == nil && utf16.DecodeRune(r, r2) != utf8.RuneError {
						r = utf16.DecodeRune(r, r2)
					} else {
						p.i = save
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", "", p.errorf("invalid \\escape")
			}
		case c >= utf8.RuneSelf:
			// Bytes that are not UTF-8 become U+FFFD, so the decoded text
			// re-encodes to itself.
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			out = utf8.AppendRune(out, r)
			p.i += size
		default:
			out = append(out, c)
			p.i++
		}
	}
}

func (p *jsonParser) hex4() (rune, error) {
	if p.i+4 > len(p.s) {
		return 0, p.errorf("invalid \\uXXXX escape")
	}
	v, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
	if err != nil {
		return 0, p.errorf("invalid \\uXXXX escape")
	}
	p.i += 4
	return rune(v), nil
}

func (p *jsonParser) array(depth int) (*jsonNode, error) {
	n := &jsonNode{kind: jsonArray}
	if p.open(']') {
		return n, nil
	}
	for {
		p.skipSpace()
		item, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.items = append(n.items, item)
		done, err := p.endOfItem(']')
		if err != nil {
			return nil, err
		}
		if done {
			return n, nil
		}
	}
}

func (p *jsonParser) object(depth int) (*jsonNode, error) {
	n := &jsonNode{kind: jsonObject}
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
		n.set(key, value)
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

// respellJSONNumber re-spells a JSON number as json.dumps(json.loads(raw)):
// integers keep their digits, floats take Python's repr.
func respellJSONNumber(raw string) string {
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
	return string(py.AppendJSONFloat(buf[:0], f))
}
