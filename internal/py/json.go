package py

import (
	"bytes"
	"fmt"
	"io"
	"iter"
	"math"
	"sort"
	"strconv"
)

// RawJSON is a value already encoded as json.dumps writes it; Dumps
// copies it as is.
type RawJSON []byte

// JSONOptions are json.dumps's keyword arguments that change its text.
// The zero value is not Python's default; DefaultJSON is.
type JSONOptions struct {
	EnsureASCII bool   // ensure_ascii: escape every character beyond '~'
	Pretty      bool   // indent is not None: one item a line
	Indent      string // with Pretty, one level (indent=n: n spaces)
	ItemSep     string // separators[0]
	KeySep      string // separators[1]
	// SortKeys is sort_keys, ordering keys by their JSON text; Python
	// orders the keys themselves, the same order for str keys.
	SortKeys bool
	// Default is default=: it is given a value Dumps cannot encode and
	// returns one it can, or the error to report. Nil raises Python's
	// TypeError text with the Go type name.
	Default func(v any) (any, error)
	// TypeName names a value's Python type in the error for a key Dumps
	// cannot encode; nil uses the Go type.
	TypeName func(v any) string
	// Float writes a float in place of Python's float.__repr__ (with
	// NaN, Infinity and -Infinity), as a JSONEncoder subclass may; nil
	// is json.dumps's own.
	Float func(dst []byte, f float64) []byte
	// MaxDepth bounds nesting (0: no bound), reporting deeper values as
	// an error where Python would exhaust its recursion limit.
	MaxDepth int

	// sink, set by WriteJSON, takes the text as lists grow past
	// flushBytes, so that a long list is never held whole.
	sink    io.Writer
	sinkErr error
}

// flushBytes is how much text WriteJSON holds before it writes.
const flushBytes = 64 << 10

// Lists that are read as they are written, one item at a time: a run's
// per-request lists, produced by a pass over its record log when the
// result is written, never held whole. Each may be iterated more than
// once (a value shared by several records is written each time).
type (
	Floats      iter.Seq[float64]
	Ints        iter.Seq[int]
	Strings     iter.Seq[string]
	FloatsLists iter.Seq[Floats]
)

// WriteJSON writes json.dumps(v, **o) to w, holding at most about
// flushBytes of text at a time inside the lazy lists (Floats, ...).
func WriteJSON(w io.Writer, v any, o *JSONOptions) error {
	c := *o
	c.sink = w
	var b bytes.Buffer
	if err := c.write(&b, v, 0); err != nil {
		return err
	}
	if c.sinkErr != nil {
		return c.sinkErr
	}
	_, err := w.Write(b.Bytes())
	return err
}

// flush hands b's text to the sink when there is enough of it.
func (o *JSONOptions) flush(b *bytes.Buffer) {
	if o.sink == nil || b.Len() < flushBytes || o.sinkErr != nil {
		return
	}
	if _, err := o.sink.Write(b.Bytes()); err != nil {
		o.sinkErr = err
	}
	b.Reset()
}

// writeSeq writes the items of seq as a list, as list does.
func writeSeq[T any](o *JSONOptions, b *bytes.Buffer, depth int, seq iter.Seq[T], item func(T) error) error {
	n := 0
	var err error
	for v := range seq {
		if n == 0 {
			b.WriteByte('[')
		} else {
			b.WriteString(o.ItemSep)
		}
		o.newline(b, depth+1)
		if err = item(v); err != nil {
			break
		}
		n++
		o.flush(b)
	}
	if err != nil {
		return err
	}
	if n == 0 {
		b.WriteString("[]")
		return nil
	}
	o.newline(b, depth)
	b.WriteByte(']')
	return nil
}

// DefaultJSON is json.dumps's defaults: ensure_ascii, separators ", "
// and ": ", no indentation, keys in insertion order.
var DefaultJSON = JSONOptions{EnsureASCII: true, ItemSep: ", ", KeySep: ": "}

// Dumps is json.dumps(v) with default arguments. v and everything in it
// may be nil, bool, int, int64, float64, string, RawJSON, []int,
// []float64, [][]float64, []string, []any, Tuple, a *Dict with str,
// int, float, bool or None keys, []*Object, or a lazy list (Floats,
// Ints, Strings, FloatsLists).
func Dumps(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := AppendJSON(&b, v, &DefaultJSON); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// AppendJSON appends json.dumps(v, **o) to b; see Dumps for the values
// it takes.
func AppendJSON(b *bytes.Buffer, v any, o *JSONOptions) error {
	return o.write(b, v, 0)
}

// dict is what every Dict instance shows json.dumps.
type dict interface {
	Len() int
	each(f func(k, v any) error) error
}

func (o *JSONOptions) write(b *bytes.Buffer, v any, depth int) error {
	if o.MaxDepth > 0 && depth > o.MaxDepth {
		return fmt.Errorf("value nested deeper than %d", o.MaxDepth)
	}
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
		b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(v), 10))
	case int64:
		b.Write(strconv.AppendInt(b.AvailableBuffer(), v, 10))
	case float64:
		b.Write(o.float(b.AvailableBuffer(), v))
	case string:
		AppendJSONString(b, v, o.EnsureASCII)
	case RawJSON:
		b.Write(v)
	case []int:
		return o.list(b, len(v), depth, func(i int) error {
			b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(v[i]), 10))
			return nil
		})
	case []float64:
		return o.list(b, len(v), depth, func(i int) error { b.Write(o.float(b.AvailableBuffer(), v[i])); return nil })
	case [][]float64:
		return o.list(b, len(v), depth, func(i int) error { return o.write(b, v[i], depth+1) })
	case []string:
		return o.list(b, len(v), depth, func(i int) error { AppendJSONString(b, v[i], o.EnsureASCII); return nil })
	case []any:
		return o.list(b, len(v), depth, func(i int) error { return o.write(b, v[i], depth+1) })
	case Tuple:
		return o.list(b, len(v), depth, func(i int) error { return o.write(b, v[i], depth+1) })
	case []*Object:
		return o.list(b, len(v), depth, func(i int) error { return o.write(b, v[i], depth+1) })
	case Floats:
		return writeSeq(o, b, depth, iter.Seq[float64](v), func(f float64) error { b.Write(o.float(b.AvailableBuffer(), f)); return nil })
	case Ints:
		return writeSeq(o, b, depth, iter.Seq[int](v), func(n int) error {
			b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(n), 10))
			return nil
		})
	case Strings:
		return writeSeq(o, b, depth, iter.Seq[string](v), func(s string) error { AppendJSONString(b, s, o.EnsureASCII); return nil })
	case FloatsLists:
		return writeSeq(o, b, depth, iter.Seq[Floats](v), func(f Floats) error { return o.write(b, f, depth+1) })
	case dict:
		return o.object(b, v, depth)
	default:
		if o.Default == nil {
			return fmt.Errorf("object of type %T is not JSON serializable", v)
		}
		w, err := o.Default(v)
		if err != nil {
			return err
		}
		return o.write(b, w, depth)
	}
	return nil
}

func (o *JSONOptions) float(dst []byte, f float64) []byte {
	if o.Float != nil {
		return o.Float(dst, f)
	}
	return AppendJSONFloat(dst, f)
}

// newline starts a line indented for depth levels, when o indents.
func (o *JSONOptions) newline(b *bytes.Buffer, depth int) {
	if !o.Pretty {
		return
	}
	b.WriteByte('\n')
	for range depth {
		b.WriteString(o.Indent)
	}
}

// list writes n items; an empty list is "[]" whatever the indentation.
func (o *JSONOptions) list(b *bytes.Buffer, n, depth int, item func(i int) error) error {
	if n == 0 {
		b.WriteString("[]")
		return nil
	}
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteString(o.ItemSep)
		}
		o.newline(b, depth+1)
		if err := item(i); err != nil {
			return err
		}
	}
	o.newline(b, depth)
	b.WriteByte(']')
	return nil
}

// member is a dict item with its key already spelled as json.dumps
// spells keys.
type member struct {
	key string
	val any
}

func (o *JSONOptions) object(b *bytes.Buffer, d dict, depth int) error {
	if d.Len() == 0 {
		b.WriteString("{}")
		return nil
	}
	if o.SortKeys {
		members := make([]member, 0, d.Len())
		err := d.each(func(k, v any) error {
			key, err := o.key(k)
			members = append(members, member{key, v})
			return err
		})
		if err != nil {
			return err
		}
		sort.SliceStable(members, func(i, j int) bool { return members[i].key < members[j].key })
		b.WriteByte('{')
		for i, m := range members {
			if err := o.member(b, i, m.key, m.val, depth); err != nil {
				return err
			}
		}
	} else {
		b.WriteByte('{')
		i := 0
		err := d.each(func(k, v any) error {
			key, err := o.key(k)
			if err != nil {
				return err
			}
			i++
			return o.member(b, i-1, key, v, depth)
		})
		if err != nil {
			return err
		}
	}
	o.newline(b, depth)
	b.WriteByte('}')
	return nil
}

func (o *JSONOptions) member(b *bytes.Buffer, i int, key string, v any, depth int) error {
	if i > 0 {
		b.WriteString(o.ItemSep)
	}
	o.newline(b, depth+1)
	AppendJSONString(b, key, o.EnsureASCII)
	b.WriteString(o.KeySep)
	return o.write(b, v, depth+1)
}

// key spells a dict key as json.dumps does: str as is, None, bool, int
// and float as their JSON text.
func (o *JSONOptions) key(k any) (string, error) {
	switch k := k.(type) {
	case string:
		return k, nil
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(k), nil
	case int:
		return strconv.Itoa(k), nil
	case int64:
		return strconv.FormatInt(k, 10), nil
	case float64:
		var buf [32]byte
		return string(o.float(buf[:0], k)), nil
	}
	name := fmt.Sprintf("%T", k)
	if o.TypeName != nil {
		name = o.TypeName(k)
	}
	return "", fmt.Errorf("keys must be str, int, float, bool or None, not %s", name)
}

// AppendJSONFloat appends json.dumps(f) to dst: repr, except that the
// non-finite values are the JavaScript literals Infinity, -Infinity and
// NaN (allow_nan=True).
func AppendJSONFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	}
	return AppendFloatRepr(dst, f)
}

// AppendJSONString writes s quoted as json.dumps does: `"` and `\`
// escaped, \n \r \t \b \f by name, other control characters as \u00XX;
// with ensureASCII also every character beyond '~' as \uXXXX in
// lower-case hex, characters beyond U+FFFF as a surrogate pair. A byte
// that is not UTF-8, which a Python str cannot hold, is written as
// U+FFFD.
func AppendJSONString(b *bytes.Buffer, s string, ensureASCII bool) {
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
		case r < ' ':
			u4(r)
		case r <= '~' || !ensureASCII:
			b.WriteRune(r)
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
