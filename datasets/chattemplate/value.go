package chattemplate

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/stampede-bench/stampede/internal/py"
)

// Template values mirror the Python objects jinja2 works on:
//
//	nil        None
//	undefined  jinja2.Undefined (renders "", is falsy, fails on use)
//	bool       bool
//	int64      int
//	float64    float
//	string     str
//	[]any      list
//	tuple      tuple
//	*dict      dict (insertion ordered, as Python's is)
//	*namespace jinja2's namespace()
//	*loopInfo  the `loop` variable of a for statement
//	*function  a global, a filter bound to arguments, or a bound method
//	*macro     a {% macro %}

// undefined is a missing variable, attribute or item. hint is the message
// jinja2 would raise when the value is used for more than rendering,
// truth testing, iteration or length.
type undefined struct{ hint string }

type tuple = py.Tuple

// iterator is what Python's reversed() returns and jinja2's reverse
// filter passes on: it iterates, but is always true, has no len() and
// cannot be indexed or serialized.
type iterator struct {
	kind  string // Python type name, e.g. list_reverseiterator
	items []any
}

// dict is an insertion-ordered mapping. Keys are comparable Go values
// (string, int64, float64, bool, nil), numbers folded by dictKey.
type dict = py.Dict[any, any]

func newDict(capacity int) *dict { return py.NewDict[any, any](capacity) }

// dictGet is d.get(k), finding 1, 1.0 and True under one key.
func dictGet(d *dict, k any) (any, bool) { return d.Get(dictKey(k)) }

// dictKey folds numeric keys the way Python's hashing does (1 == 1.0 ==
// True), so lookups by any of them find the same entry.
func dictKey(k any) any {
	switch k := k.(type) {
	case bool:
		if k {
			return int64(1)
		}
		return int64(0)
	case float64:
		if k == math.Trunc(k) && math.Abs(k) < 1<<53 {
			return int64(k)
		}
	}
	return k
}

func hashable(k any) bool {
	switch k.(type) {
	case nil, bool, int64, float64, string:
		return true
	}
	return false
}

// hashableDeep is Python's hashability: scalars, Undefined, and tuples
// of hashable values.
func hashableDeep(v any) bool {
	switch v := v.(type) {
	case undefined, *namespace, *function, *macro, *loopInfo, *iterator:
		return true
	case tuple:
		for _, it := range v {
			if !hashableDeep(it) {
				return false
			}
		}
		return true
	}
	return hashable(v)
}

// namespace is the mutable attribute bag made by namespace(); it is the
// only value a template may assign attributes on.
type namespace struct{ attrs *dict }

// function is anything callable from a template other than a macro.
type function struct {
	name string
	call func(args []any, kw []kwarg) (any, error)
}

type kwarg struct {
	name string
	val  any
}

// typeName is Python's type(v).__name__, for error messages.
func typeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "NoneType"
	case undefined:
		return "Undefined"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case tuple:
		return "tuple"
	case *dict:
		return "dict"
	case *namespace:
		return "Namespace"
	case *loopInfo:
		return "LoopContext"
	case *iterator:
		return v.kind
	case *function:
		return "builtin_function_or_method"
	case *macro:
		return "Macro"
	}
	return fmt.Sprintf("%T", v)
}

// truthy is Python's bool(v).
func truthy(v any) bool {
	if _, ok := v.(undefined); ok {
		return false
	}
	return py.Truthy(v)
}

// pyStr is Python's str(v); Undefined renders as "".
func pyStr(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case undefined:
		return ""
	}
	return pyRepr(v)
}

// pyRepr is Python's repr(v).
func pyRepr(v any) string {
	var b strings.Builder
	writeRepr(&b, v)
	return b.String()
}

func writeRepr(b *strings.Builder, v any) { py.AppendRepr(b, v, writeObjectRepr) }

// writeObjectRepr writes repr() of the jinja2 objects py does not know.
func writeObjectRepr(b *strings.Builder, v any) {
	switch v := v.(type) {
	case undefined:
		b.WriteString("Undefined")
	case *namespace:
		b.WriteString("<Namespace ")
		writeRepr(b, v.attrs)
		b.WriteByte('>')
	case *loopInfo:
		fmt.Fprintf(b, "<LoopContext %d/%d>", v.index+1, len(v.items))
	case *iterator:
		fmt.Fprintf(b, "<%s object>", v.kind)
	case *function:
		fmt.Fprintf(b, "<built-in function %s>", v.name)
	case *macro:
		fmt.Fprintf(b, "<Macro '%s'>", v.name)
	default:
		fmt.Fprintf(b, "%v", v)
	}
}

// pyEqual is Python's ==. Undefined equals only Undefined.
func pyEqual(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case undefined:
		_, ok := b.(undefined)
		return ok
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case bool, int64, float64:
		x, okA := number(a)
		y, okB := number(b)
		if !okB {
			return false
		}
		if xi, ok := a.(int64); ok {
			if yi, ok := intValue(b); ok {
				return xi == yi
			}
		}
		return okA && x == y
	case []any:
		bl, ok := b.([]any)
		return ok && seqEqual(a, bl)
	case tuple:
		bt, ok := b.(tuple)
		return ok && seqEqual(a, bt)
	case *dict:
		bd, ok := b.(*dict)
		if !ok || a.Len() != bd.Len() {
			return false
		}
		for k, av := range a.All() {
			bv, ok := bd.Get(k)
			if !ok || !pyEqual(av, bv) {
				return false
			}
		}
		return true
	}
	return a == b
}

func seqEqual(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !pyEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// number converts bool, int and float to float64.
func number(v any) (float64, bool) {
	if f, ok := v.(float64); ok {
		return f, true
	}
	i, ok := intValue(v)
	return float64(i), ok
}

// intValue converts bool and int to int64 (not float: Python refuses a
// float where it needs an index).
func intValue(v any) (int64, bool) {
	switch v := v.(type) {
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	case int64:
		return v, true
	}
	return 0, false
}

// pyCompare orders a and b as Python's < does, or fails as Python does
// for unorderable types.
func pyCompare(a, b any) (int, error) {
	if x, ok := number(a); ok {
		if y, ok := number(b); ok {
			xi, aInt := intValue(a)
			yi, bInt := intValue(b)
			switch {
			case aInt && bInt:
				return cmpOrdered(xi, yi), nil
			case x < y:
				return -1, nil
			case x > y:
				return 1, nil
			}
			return 0, nil
		}
	}
	switch a := a.(type) {
	case string:
		if bs, ok := b.(string); ok {
			return strings.Compare(a, bs), nil
		}
	case []any:
		if bl, ok := b.([]any); ok {
			return seqCompare(a, bl)
		}
	case tuple:
		if bt, ok := b.(tuple); ok {
			return seqCompare(a, bt)
		}
	}
	return 0, fmt.Errorf("'<' not supported between instances of '%s' and '%s'", typeName(a), typeName(b))
}

func cmpOrdered[T int64 | float64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func seqCompare(a, b []any) (int, error) {
	for i := 0; i < len(a) && i < len(b); i++ {
		if pyEqual(a[i], b[i]) {
			continue
		}
		return pyCompare(a[i], b[i])
	}
	return cmpOrdered(int64(len(a)), int64(len(b))), nil
}

// pyLen is len(v); Undefined has length 0 as in jinja2.
func pyLen(v any) (int, error) {
	switch v := v.(type) {
	case undefined:
		return 0, nil
	case string:
		return utf8.RuneCountInString(v), nil
	case []any:
		return len(v), nil
	case tuple:
		return len(v), nil
	case *dict:
		return v.Len(), nil
	case *loopInfo:
		return len(v.items), nil
	}
	return 0, fmt.Errorf("object of type '%s' has no len()", typeName(v))
}

// iterate is Python's list(iter(v)): characters of a string, keys of a
// dict, nothing for Undefined.
func iterate(v any) ([]any, error) {
	switch v := v.(type) {
	case undefined:
		return nil, nil
	case []any:
		return v, nil
	case tuple:
		return v, nil
	case *iterator:
		return v.items, nil
	case *dict:
		return v.Keys(), nil
	case string:
		out := make([]any, 0, len(v))
		for _, r := range v {
			out = append(out, string(r))
		}
		return out, nil
	}
	return nil, fmt.Errorf("'%s' object is not iterable", typeName(v))
}

// contains is Python's `item in container`.
func contains(container, item any) (bool, error) {
	switch c := container.(type) {
	case string:
		s, ok := item.(string)
		if !ok {
			return false, fmt.Errorf("'in <string>' requires string as left operand, not %s", typeName(item))
		}
		return strings.Contains(c, s), nil
	case *dict:
		if !hashable(item) && hashableDeep(item) {
			return false, nil // hashable in Python, and never a key here
		}
		if !hashable(item) {
			return false, fmt.Errorf("unhashable type: '%s'", typeName(item))
		}
		_, ok := dictGet(c, item)
		return ok, nil
	case *namespace:
		return false, fmt.Errorf("argument of type 'Namespace' is not iterable")
	}
	items, err := iterate(container)
	if err != nil {
		return false, fmt.Errorf("argument of type '%s' is not iterable", typeName(container))
	}
	for _, it := range items {
		if pyEqual(it, item) {
			return true, nil
		}
	}
	return false, nil
}

// fromGo converts ordinary Go data (as encoding/json produces it, plus
// the other integer and slice types) into template values. Go maps have
// no order; their keys are taken in sorted order.
func fromGo(v any) any {
	switch v := v.(type) {
	case nil, bool, int64, float64, string, undefined, tuple, *dict, *namespace, *function:
		return v
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case float32:
		return float64(v)
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case []any:
		out := make([]any, len(v))
		for i, it := range v {
			out[i] = fromGo(it)
		}
		return out
	case []string:
		out := make([]any, len(v))
		for i, it := range v {
			out[i] = it
		}
		return out
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := newDict(len(keys))
		for _, k := range keys {
			d.Set(k, fromGo(v[k]))
		}
		return d
	case Message:
		return v.value()
	case []Message:
		out := make([]any, len(v))
		for i, m := range v {
			out[i] = m.value()
		}
		return out
	}
	return fromReflect(reflect.ValueOf(v))
}

// fromReflect handles the remaining kinds: other integer widths, slices
// and string-keyed maps of any element type.
func fromReflect(rv reflect.Value) any {
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	case reflect.String:
		return rv.String()
	case reflect.Bool:
		return rv.Bool()
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = fromGo(rv.Index(i).Interface())
		}
		return out
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			break
		}
		keys := make([]string, 0, rv.Len())
		for _, k := range rv.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		d := newDict(len(keys))
		for _, k := range keys {
			d.Set(k, fromGo(rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key())).Interface()))
		}
		return d
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return fromGo(rv.Elem().Interface())
	}
	return fmt.Sprint(rv.Interface())
}
