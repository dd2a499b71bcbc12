package chattemplate

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// jsonOptions are the json.dumps arguments transformers' tojson exposes.
type jsonOptions struct {
	ensureASCII     bool
	pretty          bool   // indent is not None
	indent          string // one level of indentation
	itemSep, keySep string
	sortKeys        bool
}

// writeJSON is Python's json.dumps: insertion-ordered objects, floats as
// repr() (NaN and Infinity spelled out), only control characters, quote
// and backslash escaped unless ensure_ascii.
func writeJSON(b *strings.Builder, v any, o jsonOptions, depth int) error {
	if depth > maxNesting {
		return fmt.Errorf("value nested deeper than %d", maxNesting)
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(jsonFloat(x))
	case string:
		writeJSONString(b, x, o.ensureASCII)
	case []any:
		return writeJSONArray(b, x, o, depth)
	case tuple:
		return writeJSONArray(b, x, o, depth)
	case *dict:
		return writeJSONObject(b, x, o, depth)
	default:
		return fmt.Errorf("object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

func jsonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return formatFloat(f)
}

func newline(b *strings.Builder, o jsonOptions, depth int) {
	b.WriteByte('\n')
	for range depth {
		b.WriteString(o.indent)
	}
}

func writeJSONArray(b *strings.Builder, items []any, o jsonOptions, depth int) error {
	if len(items) == 0 {
		b.WriteString("[]")
		return nil
	}
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		if o.pretty {
			newline(b, o, depth+1)
		}
		if err := writeJSON(b, it, o, depth+1); err != nil {
			return err
		}
	}
	if o.pretty {
		newline(b, o, depth)
	}
	b.WriteByte(']')
	return nil
}

func writeJSONObject(b *strings.Builder, d *dict, o jsonOptions, depth int) error {
	if len(d.keys) == 0 {
		b.WriteString("{}")
		return nil
	}
	type entry struct {
		key string
		val any
	}
	entries := make([]entry, len(d.keys))
	for i, k := range d.keys {
		var ks string
		switch kv := k.(type) {
		case string:
			ks = kv
		case nil:
			ks = "null"
		case bool:
			ks = map[bool]string{true: "true", false: "false"}[kv]
		case int64:
			ks = strconv.FormatInt(kv, 10)
		case float64:
			ks = jsonFloat(kv)
		default:
			return fmt.Errorf("keys must be str, int, float, bool or None, not %s", typeName(k))
		}
		entries[i] = entry{ks, d.vals[k]}
	}
	if o.sortKeys {
		sort.SliceStable(entries, func(i, j int) bool { return entries[i].key < entries[j].key })
	}
	b.WriteByte('{')
	for i, e := range entries {
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		if o.pretty {
			newline(b, o, depth+1)
		}
		writeJSONString(b, e.key, o.ensureASCII)
		b.WriteString(o.keySep)
		if err := writeJSON(b, e.val, o, depth+1); err != nil {
			return err
		}
	}
	if o.pretty {
		newline(b, o, depth)
	}
	b.WriteByte('}')
	return nil
}

func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || ensureASCII && r > 0x7e && r <= 0xffff:
				b.WriteString(`\u`)
				b.WriteByte(hex[r>>12&0xf])
				b.WriteByte(hex[r>>8&0xf])
				b.WriteByte(hex[r>>4&0xf])
				b.WriteByte(hex[r&0xf])
			case ensureASCII && r > 0xffff:
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
