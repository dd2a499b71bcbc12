package py

import (
	"fmt"
	"strconv"
	"strings"
)

// Tuple is a Python tuple: it prints as (a, b) or (a,), and json.dumps
// writes it as a list.
type Tuple []any

// Repr is Python's repr(v) for None (nil), bool, int, int64, float64,
// str, list ([]any, []string), Tuple and *Dict, at any depth.
func Repr(v any) string {
	var b strings.Builder
	AppendRepr(&b, v, nil)
	return b.String()
}

// AppendRepr writes repr(v) to b. other writes the repr of a value whose
// type Repr does not know, wherever it sits in v (it may call AppendRepr
// for what it holds); nil writes such a value with %v.
func AppendRepr(b *strings.Builder, v any, other func(b *strings.Builder, v any)) {
	switch v := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if v {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int:
		b.WriteString(strconv.Itoa(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		b.WriteString(FloatRepr(v))
	case string:
		b.WriteString(StrRepr(v))
	case []string:
		b.WriteByte('[')
		for i, s := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(StrRepr(s))
		}
		b.WriteByte(']')
	case []any:
		b.WriteByte('[')
		appendReprItems(b, v, other)
		b.WriteByte(']')
	case Tuple:
		b.WriteByte('(')
		appendReprItems(b, v, other)
		if len(v) == 1 {
			b.WriteByte(',')
		}
		b.WriteByte(')')
	case dict:
		b.WriteByte('{')
		i := 0
		_ = v.each(func(k, v any) error {
			if i > 0 {
				b.WriteString(", ")
			}
			i++
			AppendRepr(b, k, other)
			b.WriteString(": ")
			AppendRepr(b, v, other)
			return nil
		})
		b.WriteByte('}')
	default:
		if other == nil {
			fmt.Fprintf(b, "%v", v)
		} else {
			other(b, v)
		}
	}
}

func appendReprItems(b *strings.Builder, items []any, other func(b *strings.Builder, v any)) {
	for i, it := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		AppendRepr(b, it, other)
	}
}

// Truthy is Python's bool(v) for the values Repr knows; any other value
// is true, as objects are unless they say otherwise.
func Truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case int:
		return v != 0
	case int64:
		return v != 0
	case float64:
		return v != 0 // NaN is true
	case string:
		return v != ""
	case []string:
		return len(v) > 0
	case []any:
		return len(v) > 0
	case Tuple:
		return len(v) > 0
	case dict:
		return v.Len() > 0
	}
	return true
}
