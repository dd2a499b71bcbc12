package chattemplate

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// getAttr is jinja2's sandboxed obj.name: a method of the object's
// Python type if it has one, else the item obj[name]; anything missing is
// Undefined (and only using that Undefined fails).
func getAttr(obj any, name string) (any, error) {
	switch o := obj.(type) {
	case undefined:
		return nil, undefinedError(o)
	case *dict:
		if m := dictMethod(o, name); m != nil {
			return m, nil
		}
		if v, ok := o.Get(name); ok {
			return v, nil
		}
	case string:
		if m := stringMethod(o, name); m != nil {
			return m, nil
		}
	case *namespace:
		if v, ok := o.attrs.Get(name); ok {
			return v, nil
		}
	case *loopInfo:
		if v, ok := o.attr(name); ok {
			return v, nil
		}
	case []any:
		if m := listMethod(o, name); m != nil {
			return m, nil
		}
	case tuple:
		if m := listMethod(o, name); m != nil {
			return m, nil
		}
	}
	return missingAttr(obj, name), nil
}

func missingAttr(obj any, name string) undefined {
	return undefined{hint: fmt.Sprintf("'%s' has no attribute '%s'", objectName(obj), name)}
}

// objectName is how jinja2 names an object in "has no attribute" errors.
func objectName(obj any) string {
	switch obj.(type) {
	case nil:
		return "None"
	case *dict:
		return "dict object"
	case []any:
		return "list object"
	case string:
		return "str object"
	}
	return typeName(obj) + " object"
}

// getItem is jinja2's obj[key]: the item if there is one, else (for a
// string key) the attribute, else Undefined.
func getItem(obj, key any) (any, error) {
	if u, ok := obj.(undefined); ok {
		return nil, undefinedError(u)
	}
	switch o := obj.(type) {
	case *dict:
		if hashable(key) {
			if v, ok := dictGet(o, key); ok {
				return v, nil
			}
		}
	case []any:
		if v, ok := index(o, key); ok {
			return v, nil
		}
	case tuple:
		if v, ok := index(o, key); ok {
			return v, nil
		}
	case string:
		if i, ok := intValue(key); ok {
			runes := []rune(o)
			if i < 0 {
				i += int64(len(runes))
			}
			if i >= 0 && i < int64(len(runes)) {
				return string(runes[i]), nil
			}
		}
	case *loopInfo:
		if name, ok := key.(string); ok {
			if v, ok := o.attr(name); ok {
				return v, nil
			}
		}
	}
	if name, ok := key.(string); ok {
		if _, isDict := obj.(*dict); !isDict {
			return getAttr(obj, name)
		}
		if m := dictMethod(obj.(*dict), name); m != nil {
			return m, nil
		}
		return undefined{hint: fmt.Sprintf("'dict object' has no attribute '%s'", name)}, nil
	}
	return undefined{hint: fmt.Sprintf("'%s' has no attribute '%s'", objectName(obj), pyStr(key))}, nil
}

func index(items []any, key any) (any, bool) {
	i, ok := intValue(key)
	if !ok {
		return nil, false
	}
	if i < 0 {
		i += int64(len(items))
	}
	if i < 0 || i >= int64(len(items)) {
		return nil, false
	}
	return items[i], true
}

// slice is Python's obj[start:stop:step] on a list, tuple or string.
func slice(obj, start, stop, step any) (any, error) {
	if u, ok := obj.(undefined); ok {
		return nil, undefinedError(u)
	}
	var items []any
	var runes []rune
	var n int
	switch o := obj.(type) {
	case []any:
		items, n = o, len(o)
	case tuple:
		items, n = o, len(o)
	case string:
		runes = []rune(o)
		n = len(runes)
	default:
		return nil, fmt.Errorf("'%s' object is not subscriptable", typeName(obj))
	}
	idx, err := sliceIndices(n, start, stop, step)
	if err != nil {
		return nil, err
	}
	switch o := obj.(type) {
	case string:
		out := make([]rune, 0, len(idx))
		for _, i := range idx {
			out = append(out, runes[i])
		}
		return string(out), nil
	case tuple:
		out := make(tuple, 0, len(idx))
		for _, i := range idx {
			out = append(out, o[i])
		}
		return out, nil
	}
	out := make([]any, 0, len(idx))
	for _, i := range idx {
		out = append(out, items[i])
	}
	return out, nil
}

// sliceIndices is CPython's PySlice_AdjustIndices: clamp start and stop
// into range, counting negative values from the end.
func sliceIndices(n int, start, stop, step any) ([]int, error) {
	st := int64(1)
	if step != nil {
		var ok bool
		if st, ok = intValue(step); !ok {
			return nil, errors.New("slice indices must be integers or None")
		}
		if st == 0 {
			return nil, errors.New("slice step cannot be zero")
		}
	}
	bound := func(v any, def int64) (int64, error) {
		if v == nil {
			return def, nil
		}
		i, ok := intValue(v)
		if !ok {
			return 0, errors.New("slice indices must be integers or None")
		}
		lo, hi := int64(0), int64(n)
		if st < 0 {
			lo, hi = -1, int64(n)-1
		}
		if i < 0 {
			i += int64(n)
		}
		return max(lo, min(i, hi)), nil
	}
	defStart, defStop := int64(0), int64(n)
	if st < 0 {
		defStart, defStop = int64(n)-1, -1
	}
	a, err := bound(start, defStart)
	if err != nil {
		return nil, err
	}
	b, err := bound(stop, defStop)
	if err != nil {
		return nil, err
	}
	var out []int
	for i := a; (st > 0 && i < b) || (st < 0 && i > b); i += st {
		out = append(out, int(i))
	}
	return out, nil
}

// loopInfo is the `loop` variable of a for statement.
type loopInfo struct {
	items []any
	index int
}

func (l *loopInfo) attr(name string) (any, bool) {
	n := len(l.items)
	switch name {
	case "index":
		return int64(l.index + 1), true
	case "index0":
		return int64(l.index), true
	case "revindex":
		return int64(n - l.index), true
	case "revindex0":
		return int64(n - l.index - 1), true
	case "first":
		return l.index == 0, true
	case "last":
		return l.index == n-1, true
	case "length":
		return int64(n), true
	case "depth":
		// Only recursive loops, which chat templates do not use, go
		// deeper than 1.
		return int64(1), true
	case "depth0":
		return int64(0), true
	case "previtem":
		if l.index == 0 {
			return undefined{hint: "there is no previous item"}, true
		}
		return l.items[l.index-1], true
	case "nextitem":
		if l.index == n-1 {
			return undefined{hint: "there is no next item"}, true
		}
		return l.items[l.index+1], true
	case "cycle":
		return &function{name: "cycle", call: func(args []any, _ []kwarg) (any, error) {
			if len(args) == 0 {
				return nil, errors.New("no items for cycling given")
			}
			return args[l.index%len(args)], nil
		}}, true
	}
	return nil, false
}

// method builds a bound method value.
func method(name string, call func(args []any, kw []kwarg) (any, error)) *function {
	return &function{name: name, call: call}
}

func dictMethod(d *dict, name string) *function {
	switch name {
	case "items":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			if err := noArgs(name, args, kw); err != nil {
				return nil, err
			}
			return dictItems(d), nil
		})
	case "keys":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			if err := noArgs(name, args, kw); err != nil {
				return nil, err
			}
			return d.Keys(), nil
		})
	case "values":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			if err := noArgs(name, args, kw); err != nil {
				return nil, err
			}
			out := make([]any, 0, d.Len())
			for _, v := range d.All() {
				out = append(out, v)
			}
			return out, nil
		})
	case "get":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			a, err := bind("get", args, kw, []string{"key", "default"}, required, nil)
			if err != nil {
				return nil, err
			}
			if !hashable(a[0]) {
				return nil, fmt.Errorf("unhashable type: '%s'", typeName(a[0]))
			}
			if v, ok := dictGet(d, a[0]); ok {
				return v, nil
			}
			return a[1], nil
		})
	case "copy":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			c := d.Copy()
			return &c, nil
		})
	case "update", "pop", "popitem", "setdefault", "clear":
		return method(name, func([]any, []kwarg) (any, error) {
			return nil, fmt.Errorf("access to attribute '%s' of 'dict' object is unsafe", name)
		})
	}
	return nil
}

func dictItems(d *dict) []any {
	out := make([]any, 0, d.Len())
	for k, v := range d.All() {
		out = append(out, tuple{k, v})
	}
	return out
}

func listMethod(items []any, name string) *function {
	switch name {
	case "count":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			a, err := bind(name, args, kw, []string{"value"}, required)
			if err != nil {
				return nil, err
			}
			n := int64(0)
			for _, it := range items {
				if pyEqual(it, a[0]) {
					n++
				}
			}
			return n, nil
		})
	case "index":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			a, err := bind(name, args, kw, []string{"value"}, required)
			if err != nil {
				return nil, err
			}
			for i, it := range items {
				if pyEqual(it, a[0]) {
					return int64(i), nil
				}
			}
			return nil, fmt.Errorf("%s is not in list", pyRepr(a[0]))
		})
	case "append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse":
		return method(name, func([]any, []kwarg) (any, error) {
			return nil, fmt.Errorf("access to attribute '%s' of 'list' object is unsafe", name)
		})
	}
	return nil
}

func noArgs(name string, args []any, kw []kwarg) error {
	if len(args)+len(kw) > 0 {
		return fmt.Errorf("%s() takes no arguments (%d given)", name, len(args)+len(kw))
	}
	return nil
}

// requiredArg marks a parameter without a default in bind.
type requiredArg struct{}

var required = requiredArg{}

// bind matches positional and keyword arguments to the named parameters
// of a built-in, filling in defaults; it fails as Python would on
// missing, unknown, repeated or surplus arguments.
func bind(fname string, args []any, kw []kwarg, names []string, defaults ...any) ([]any, error) {
	if len(args) > len(names) {
		return nil, fmt.Errorf("%s() takes at most %d argument(s) (%d given)", fname, len(names), len(args))
	}
	out := make([]any, len(names))
	set := make([]bool, len(names))
	copy(out, args)
	for i := range args {
		set[i] = true
	}
	for _, k := range kw {
		found := false
		for i, n := range names {
			if n == k.name {
				if set[i] {
					return nil, fmt.Errorf("%s() got multiple values for argument '%s'", fname, n)
				}
				out[i], set[i], found = k.val, true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s() got an unexpected keyword argument '%s'", fname, k.name)
		}
	}
	for i := range names {
		if set[i] {
			continue
		}
		if defaults[i] == required {
			return nil, fmt.Errorf("%s() missing required argument '%s'", fname, names[i])
		}
		out[i] = defaults[i]
	}
	return out, nil
}

func stringArg(fname string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s() argument must be str, not %s", fname, typeName(v))
	}
	return s, nil
}

// optionalChars reads the chars argument of strip/lstrip/rstrip: None
// means whitespace.
func optionalChars(fname string, v any) (chars string, whitespace bool, err error) {
	if v == nil {
		return "", true, nil
	}
	chars, err = stringArg(fname, v)
	return chars, false, err
}

func stringMethod(s, name string) *function {
	strip := func(left, right bool) *function {
		return method(name, func(args []any, kw []kwarg) (any, error) {
			a, err := bind(name, args, kw, []string{"chars"}, nil)
			if err != nil {
				return nil, err
			}
			chars, ws, err := optionalChars(name, a[0])
			if err != nil {
				return nil, err
			}
			return pyStrip(s, chars, ws, left, right), nil
		})
	}
	unary := func(f func(string) string) *function {
		return method(name, func(args []any, kw []kwarg) (any, error) {
			if err := noArgs(name, args, kw); err != nil {
				return nil, err
			}
			return f(s), nil
		})
	}
	switch name {
	case "strip":
		return strip(true, true)
	case "lstrip":
		return strip(true, false)
	case "rstrip":
		return strip(false, true)
	case "upper":
		return unary(strings.ToUpper)
	case "lower":
		return unary(strings.ToLower)
	case "title":
		return unary(pyTitle)
	case "capitalize":
		return unary(pyCapitalize)
	case "split", "rsplit":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			a, err := bind(name, args, kw, []string{"sep", "maxsplit"}, nil, int64(-1))
			if err != nil {
				return nil, err
			}
			limit, ok := intValue(a[1])
			if !ok {
				return nil, fmt.Errorf("%s() maxsplit must be int, not %s", name, typeName(a[1]))
			}
			if a[0] == nil {
				return strList(pySplitWhitespace(s, int(limit), name == "rsplit")), nil
			}
			sep, err := stringArg(name, a[0])
			if err != nil {
				return nil, err
			}
			if sep == "" {
				return nil, errors.New("empty separator")
			}
			return strList(pySplit(s, sep, int(limit), name == "rsplit")), nil
		})
	case "splitlines":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			a, err := bind(name, args, kw, []string{"keepends"}, false)
			if err != nil {
				return nil, err
			}
			return strList(pySplitlines(s, truthy(a[0]))), nil
		})
	case "startswith", "endswith":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			a, err := bind(name, args, kw, []string{"prefix", "start", "end"}, required, nil, nil)
			if err != nil {
				return nil, err
			}
			sub, err := subrange(s, a[1], a[2])
			if err != nil {
				return nil, err
			}
			candidates := []any{a[0]}
			if t, ok := a[0].(tuple); ok {
				candidates = t
			}
			for _, c := range candidates {
				p, ok := c.(string)
				if !ok {
					return nil, fmt.Errorf("%s first arg must be str or a tuple of str, not %s", name, typeName(c))
				}
				if name == "startswith" && strings.HasPrefix(sub, p) || name == "endswith" && strings.HasSuffix(sub, p) {
					return true, nil
				}
			}
			return false, nil
		})
	case "replace":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			a, err := bind(name, args, kw, []string{"old", "new", "count"}, required, required, int64(-1))
			if err != nil {
				return nil, err
			}
			return pyReplace(s, a[0], a[1], a[2])
		})
	case "find", "rfind", "index", "rindex", "count":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			a, err := bind(name, args, kw, []string{"sub"}, required)
			if err != nil {
				return nil, err
			}
			sub, err := stringArg(name, a[0])
			if err != nil {
				return nil, err
			}
			var i int
			switch name {
			case "count":
				if sub == "" {
					return int64(utf8.RuneCountInString(s) + 1), nil
				}
				return int64(strings.Count(s, sub)), nil
			case "find", "index":
				i = strings.Index(s, sub)
			default:
				i = strings.LastIndex(s, sub)
			}
			if i < 0 {
				if name == "index" || name == "rindex" {
					return nil, errors.New("substring not found")
				}
				return int64(-1), nil
			}
			return int64(utf8.RuneCountInString(s[:i])), nil
		})
	case "join":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			a, err := bind(name, args, kw, []string{"iterable"}, required)
			if err != nil {
				return nil, err
			}
			items, err := iterate(a[0])
			if err != nil {
				return nil, err
			}
			parts := make([]string, len(items))
			for i, it := range items {
				if parts[i], err = stringArg("join", it); err != nil {
					return nil, fmt.Errorf("sequence item %d: expected str instance, %s found", i, typeName(it))
				}
			}
			return strings.Join(parts, s), nil
		})
	case "format":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			return pyFormat(s, args, kw)
		})
	case "removeprefix", "removesuffix":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			a, err := bind(name, args, kw, []string{"fix"}, required)
			if err != nil {
				return nil, err
			}
			fix, err := stringArg(name, a[0])
			if err != nil {
				return nil, err
			}
			if name == "removeprefix" {
				return strings.TrimPrefix(s, fix), nil
			}
			return strings.TrimSuffix(s, fix), nil
		})
	case "isdigit", "isspace", "isalpha", "isalnum", "islower", "isupper":
		return method(name, func(args []any, kw []kwarg) (any, error) {
			if err := noArgs(name, args, kw); err != nil {
				return nil, err
			}
			return pyIsClass(s, name), nil
		})
	}
	return nil
}

func strList(parts []string) []any {
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out
}

// subrange is s[start:end] in characters, for startswith/endswith.
func subrange(s string, start, end any) (string, error) {
	if start == nil && end == nil {
		return s, nil
	}
	v, err := slice(s, start, end, nil)
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

func pyReplace(s string, oldV, newV, countV any) (any, error) {
	old, err := stringArg("replace", oldV)
	if err != nil {
		return nil, err
	}
	repl, err := stringArg("replace", newV)
	if err != nil {
		return nil, err
	}
	count, ok := intValue(countV)
	if !ok {
		return nil, fmt.Errorf("replace() count must be int, not %s", typeName(countV))
	}
	if count < 0 {
		count = -1
	}
	out := strings.Replace(s, old, repl, int(count))
	if len(out) > maxOutput {
		return nil, fmt.Errorf("string longer than %d bytes", maxOutput)
	}
	return out, nil
}
