package bench

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stampede-bench/stampede/internal/py"
)

// This file reproduces the few pieces of Python's formatting that
// `vllm bench serve` output depends on: str.format's "<", "^" and ".2f"
// specs, str(float), and json.dump's default encoding of a dict.

// pyLeft is "{:<N}": s padded with spaces on the right to width code
// points; a longer s is kept whole.
func pyLeft(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

// pyCenter is "{s:{c}^{n}}": s centred in width with fill; when the
// padding is odd the extra fill character goes to the right.
func pyCenter(s string, fill byte, width int) string {
	pad := width - utf8.RuneCountInString(s)
	if pad <= 0 {
		return s
	}
	left := pad / 2
	return strings.Repeat(string(fill), left) + s + strings.Repeat(string(fill), pad-left)
}

// pyFixed2 is "{:.2f}".
func pyFixed2(f float64) string { return py.Fixed(f, 2) }

// pyPercentileWord is the percentile's text in labels and keys, Python's
// `str(int(p)) if int(p) == p else str(p)`: "99", "99.9", "12.5".
func pyPercentileWord(p float64) string {
	if p == math.Trunc(p) && !math.IsInf(p, 0) {
		if p == 0 {
			return "0" // int(-0.0) is 0
		}
		return strconv.FormatFloat(p, 'f', 0, 64)
	}
	return py.FloatRepr(p)
}

// pyDict is a Python dict of JSON values: keys keep their first insertion
// position, and setting an existing key replaces its value in place, as
// `d[k] = v` and `{**a, **b}` do. Values may be nil, bool, int, int64,
// float64, string, []int, []float64, [][]float64, []string, []any,
// pyRawJSON, *pyDict or []*pyDict.
type pyDict struct {
	keys []string
	vals map[string]any
}

func newPyDict() *pyDict { return &pyDict{vals: map[string]any{}} }

// set is d[key] = v.
func (d *pyDict) set(key string, v any) {
	if _, ok := d.vals[key]; !ok {
		d.keys = append(d.keys, key)
	}
	d.vals[key] = v
}

// del is `if key in d: del d[key]`.
func (d *pyDict) del(key string) {
	if _, ok := d.vals[key]; !ok {
		return
	}
	delete(d.vals, key)
	for i, k := range d.keys {
		if k == key {
			d.keys = append(d.keys[:i], d.keys[i+1:]...)
			break
		}
	}
}

// update is d.update(other): other's keys in its order.
func (d *pyDict) update(other *pyDict) {
	for _, k := range other.keys {
		d.set(k, other.vals[k])
	}
}

// pyRawJSON is a value already encoded as Python's json.dumps writes it.
type pyRawJSON []byte

// pyJSON encodes v as Python's json.dumps(v) with default arguments:
// separators ", " and ": ", no indentation, ensure_ascii, floats as repr
// with Infinity/-Infinity/NaN, and no trailing newline.
func pyJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := appendPyJSON(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// appendPyJSON appends json.dumps(v) to b (see pyJSON).
func appendPyJSON(b *bytes.Buffer, v any) error {
	return appendPyJSONWith(b, v, appendPyJSONFloat)
}

// appendPyJSONWith is json.dumps(v) with every float, at any depth,
// written by float; the encoders differ only there.
func appendPyJSONWith(b *bytes.Buffer, v any, float func(dst []byte, f float64) []byte) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int:
		b.WriteString(strconv.Itoa(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		b.Write(float(b.AvailableBuffer(), v))
	case string:
		appendPyJSONString(b, v)
	case pyRawJSON:
		b.Write(v)
	case []int:
		return appendList(b, len(v), func(i int) error { b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(v[i]), 10)); return nil })
	case []float64:
		return appendList(b, len(v), func(i int) error { b.Write(float(b.AvailableBuffer(), v[i])); return nil })
	case [][]float64:
		return appendList(b, len(v), func(i int) error { return appendPyJSONWith(b, v[i], float) })
	case []string:
		return appendList(b, len(v), func(i int) error { appendPyJSONString(b, v[i]); return nil })
	case []any:
		return appendList(b, len(v), func(i int) error { return appendPyJSONWith(b, v[i], float) })
	case []*pyDict:
		return appendList(b, len(v), func(i int) error { return appendPyJSONWith(b, v[i], float) })
	case *pyDict:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			appendPyJSONString(b, k)
			b.WriteString(": ")
			if err := appendPyJSONWith(b, v.vals[k], float); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("result JSON: unsupported value type %T", v)
	}
	return nil
}

func appendList(b *bytes.Buffer, n int, item func(i int) error) error {
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		if err := item(i); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}

// appendPyJSONFloat appends json's encoding of f to dst: repr, except the
// non-finite values json.dump writes as JavaScript literals (allow_nan=True).
func appendPyJSONFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	}
	return py.AppendFloatRepr(dst, f)
}

// appendPyJSONString writes s as json's ensure_ascii encoder does: `"` and
// `\` escaped, \n \r \t \b \f by name, every other character outside
// printable ASCII (space..~) as \uXXXX in lower-case hex, characters
// beyond U+FFFF as a surrogate pair. Invalid UTF-8 bytes, which a Python
// str cannot hold, are written as U+FFFD.
func appendPyJSONString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	u4 := func(r rune) {
		b.WriteString(`\u`)
		b.WriteByte(hex[r>>12&0xf])
		b.WriteByte(hex[r>>8&0xf])
		b.WriteByte(hex[r>>4&0xf])
		b.WriteByte(hex[r&0xf])
	}
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r >= ' ' && r <= '~':
			b.WriteByte(byte(r))
		case r > 0xffff:
			r -= 0x10000
			u4(0xd800 | (r>>10)&0x3ff)
			u4(0xdc00 | r&0x3ff)
		default:
			u4(r)
		}
	}
	b.WriteByte('"')
}
