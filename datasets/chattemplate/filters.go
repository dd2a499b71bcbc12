package chattemplate

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/stampede-bench/stampede/internal/py"
)

// filterFunc applies a filter to its subject v with the call's
// arguments. Every filter mirrors jinja2 3.1's, with tojson replaced by
// the one transformers installs.
type filterFunc func(s *state, v any, args []any, kw []kwarg) (any, error)

var filters map[string]filterFunc

func init() {
	filters = map[string]filterFunc{
		"abs":        filterAbs,
		"attr":       filterAttr,
		"capitalize": stringFilter("capitalize", pyCapitalize),
		"center":     filterCenter,
		"count":      filterLength,
		"d":          filterDefault,
		"default":    filterDefault,
		"dictsort":   filterDictsort,
		"e":          stringFilter("escape", htmlEscape),
		"escape":     stringFilter("escape", htmlEscape),
		"first":      filterFirst,
		"float":      filterFloat,
		"format":     filterFormat,
		"indent":     filterIndent,
		"int":        filterInt,
		"items":      filterItems,
		"join":       filterJoin,
		"last":       filterLast,
		"length":     filterLength,
		"list":       filterList,
		"lower":      stringFilter("lower", strings.ToLower),
		"map":        filterMap,
		"max":        minMaxFilter("max", 1),
		"min":        minMaxFilter("min", -1),
		"reject":     selectFilter("reject", false, false),
		"rejectattr": selectFilter("rejectattr", true, false),
		"replace":    filterReplace,
		"reverse":    filterReverse,
		"round":      filterRound,
		"safe":       filterString,
		"select":     selectFilter("select", false, true),
		"selectattr": selectFilter("selectattr", true, true),
		"sort":       filterSort,
		"string":     filterString,
		"sum":        filterSum,
		"title":      stringFilter("title", jinjaTitle),
		"tojson":     filterToJSON,
		"trim":       filterTrim,
		"unique":     filterUnique,
		"upper":      stringFilter("upper", strings.ToUpper),
		"wordcount":  filterWordcount,
	}
}

func stringFilter(name string, f func(string) string) filterFunc {
	return func(_ *state, v any, args []any, kw []kwarg) (any, error) {
		if err := noArgs(name, args, kw); err != nil {
			return nil, err
		}
		return f(pyStr(v)), nil
	}
}

func filterString(_ *state, v any, args []any, kw []kwarg) (any, error) {
	if err := noArgs("string", args, kw); err != nil {
		return nil, err
	}
	return pyStr(v), nil
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// wordBoundary is jinja2's _word_beginning_split_re.
var wordBoundary = regexp.MustCompile(`[-\s({\[<]+`)

// jinjaTitle is the title filter, which differs from str.title(): words
// start only after whitespace, "-", or an opening bracket.
func jinjaTitle(s string) string {
	var b strings.Builder
	last := 0
	word := func(w string) {
		for i, r := range w {
			if i == 0 {
				b.WriteRune(unicode.ToUpper(r))
			} else {
				b.WriteRune(unicode.ToLower(r))
			}
		}
	}
	for _, m := range wordBoundary.FindAllStringIndex(s, -1) {
		word(s[last:m[0]])
		b.WriteString(s[m[0]:m[1]])
		last = m[1]
	}
	word(s[last:])
	return b.String()
}

func filterTrim(_ *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("trim", args, kw, []string{"chars"}, nil)
	if err != nil {
		return nil, err
	}
	chars, ws, err := optionalChars("trim", a[0])
	if err != nil {
		return nil, err
	}
	return pyStrip(pyStr(v), chars, ws, true, true), nil
}

func filterLength(_ *state, v any, args []any, kw []kwarg) (any, error) {
	if err := noArgs("length", args, kw); err != nil {
		return nil, err
	}
	n, err := pyLen(v)
	return int64(n), err
}

func filterReplace(_ *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("replace", args, kw, []string{"old", "new", "count"}, required, required, nil)
	if err != nil {
		return nil, err
	}
	if a[2] == nil {
		a[2] = int64(-1)
	}
	return pyReplace(pyStr(v), pyStr(a[0]), pyStr(a[1]), a[2])
}

func filterJoin(s *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("join", args, kw, []string{"d", "attribute"}, "", nil)
	if err != nil {
		return nil, err
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	if a[1] != nil {
		if items, err = mapAttribute(items, a[1], nil); err != nil {
			return nil, err
		}
	}
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = pyStr(it)
	}
	return strings.Join(parts, pyStr(a[0])), nil
}

func filterFirst(_ *state, v any, args []any, kw []kwarg) (any, error) {
	if err := noArgs("first", args, kw); err != nil {
		return nil, err
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return undefined{hint: "No first item, sequence was empty."}, nil
	}
	return items[0], nil
}

func filterLast(_ *state, v any, args []any, kw []kwarg) (any, error) {
	if err := noArgs("last", args, kw); err != nil {
		return nil, err
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return undefined{hint: "No last item, sequence was empty."}, nil
	}
	return items[len(items)-1], nil
}

func filterDefault(_ *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("default", args, kw, []string{"default_value", "boolean"}, "", false)
	if err != nil {
		return nil, err
	}
	if _, ok := v.(undefined); ok || truthy(a[1]) && !truthy(v) {
		return a[0], nil
	}
	return v, nil
}

// filterToJSON is transformers' replacement for jinja2's tojson:
// json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
// sort_keys=sort_keys), without HTML escaping.
func filterToJSON(_ *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("tojson", args, kw, []string{"ensure_ascii", "indent", "separators", "sort_keys"}, false, nil, nil, false)
	if err != nil {
		return nil, err
	}
	opts := py.JSONOptions{EnsureASCII: truthy(a[0]), SortKeys: truthy(a[3])}
	switch ind := a[1].(type) {
	case nil:
	case string:
		opts.Indent, opts.Pretty = ind, true
	default:
		n, ok := intValue(ind)
		if !ok {
			return nil, fmt.Errorf("indent must be an int or a str, not %s", typeName(ind))
		}
		opts.Indent, opts.Pretty = strings.Repeat(" ", int(max(0, min(n, 64)))), true
	}
	opts.ItemSep, opts.KeySep = ", ", ": "
	if opts.Pretty {
		opts.ItemSep = ","
	}
	if a[2] != nil {
		seps, err := iterate(a[2])
		if err != nil || len(seps) != 2 {
			return nil, errors.New("separators must be an (item_separator, key_separator) pair")
		}
		if opts.ItemSep, err = stringArg("tojson", seps[0]); err != nil {
			return nil, err
		}
		if opts.KeySep, err = stringArg("tojson", seps[1]); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	if err := writeJSON(&b, v, opts); err != nil {
		return nil, err
	}
	return b.String(), nil
}

// filterInt follows jinja2: strings parse in the given base, anything
// that fails falls back to int(float(value)), then to the default.
func filterInt(_ *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("int", args, kw, []string{"default", "base"}, int64(0), int64(10))
	if err != nil {
		return nil, err
	}
	if u, ok := v.(undefined); ok {
		return nil, undefinedError(u)
	}
	base, ok := intValue(a[1])
	if !ok || base < 0 || base == 1 || base > 36 {
		return nil, errors.New("int() base must be >= 2 and <= 36, or 0")
	}
	switch x := v.(type) {
	case string:
		if i, err := parsePyInt(x, int(base)); err == nil {
			return i, nil
		}
		if f, err := parsePyFloat(x); err == nil {
			return floatToInt(f)
		}
		return a[0], nil
	case bool, int64:
		i, _ := intValue(x)
		return i, nil
	case float64:
		return floatToInt(x)
	}
	return a[0], nil
}

func floatToInt(f float64) (any, error) {
	if math.IsInf(f, 0) {
		return nil, errors.New("cannot convert float infinity to integer")
	}
	if math.IsNaN(f) {
		return nil, errors.New("cannot convert float NaN to integer")
	}
	return int64(f), nil
}

func parsePyInt(s string, base int) (int64, error) {
	s = strings.ReplaceAll(strings.TrimFunc(s, py.IsSpace), "_", "")
	sign := ""
	if s != "" && (s[0] == '-' || s[0] == '+') {
		sign, s = s[:1], s[1:]
	}
	// Python accepts the base's own prefix: int("0x1A", 16) == 26.
	prefix := map[int]string{2: "0b", 8: "0o", 16: "0x"}[base]
	if prefix != "" && len(s) > 2 && strings.EqualFold(s[:2], prefix) {
		s = s[2:]
	}
	return strconv.ParseInt(sign+s, base, 64)
}

func parsePyFloat(s string) (float64, error) {
	s = strings.TrimFunc(s, py.IsSpace)
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "inf", "infinity", "nan":
	default:
		if strings.ContainsAny(strings.ToLower(s), "xpn") {
			return 0, errors.New("invalid float literal")
		}
	}
	return strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
}

func filterFloat(_ *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("float", args, kw, []string{"default"}, 0.0)
	if err != nil {
		return nil, err
	}
	if u, ok := v.(undefined); ok {
		return nil, undefinedError(u)
	}
	switch x := v.(type) {
	case string:
		if f, err := parsePyFloat(x); err == nil {
			return f, nil
		}
	case bool, int64, float64:
		f, _ := number(x)
		return f, nil
	}
	return a[0], nil
}

func filterList(_ *state, v any, args []any, kw []kwarg) (any, error) {
	if err := noArgs("list", args, kw); err != nil {
		return nil, err
	}
	items, err := iterate(v)
	return append([]any{}, items...), err
}

func filterItems(_ *state, v any, args []any, kw []kwarg) (any, error) {
	if err := noArgs("items", args, kw); err != nil {
		return nil, err
	}
	switch d := v.(type) {
	case undefined:
		return []any{}, nil
	case *dict:
		return dictItems(d), nil
	}
	return nil, errors.New("can only get item pairs from a mapping")
}

// sortKey lowers strings when a sort or comparison ignores case, as
// jinja2's ignore_case does.
func sortKey(v any, caseSensitive bool) any {
	if s, ok := v.(string); ok && !caseSensitive {
		return strings.ToLower(s)
	}
	return v
}

// sortValues is a stable sort of items by key(item), failing as Python
// would on unorderable keys.
func sortValues(items []any, key func(any) (any, error), reverse bool) ([]any, error) {
	keys := make([]any, len(items))
	for i, it := range items {
		k, err := key(it)
		if err != nil {
			return nil, err
		}
		keys[i] = k
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	var cmpErr error
	sort.SliceStable(idx, func(i, j int) bool {
		c, err := pyCompare(keys[idx[i]], keys[idx[j]])
		if err != nil && cmpErr == nil {
			cmpErr = err
		}
		if reverse {
			return c > 0
		}
		return c < 0
	})
	if cmpErr != nil {
		return nil, cmpErr
	}
	out := make([]any, len(items))
	for i, k := range idx {
		out[i] = items[k]
	}
	return out, nil
}

func filterDictsort(_ *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("dictsort", args, kw, []string{"case_sensitive", "by", "reverse"}, false, "key", false)
	if err != nil {
		return nil, err
	}
	d, ok := v.(*dict)
	if !ok {
		return nil, fmt.Errorf("'%s' object has no attribute 'items'", typeName(v))
	}
	pos := 0
	switch a[1] {
	case "key":
	case "value":
		pos = 1
	default:
		return nil, errors.New("you can only sort by either \"key\" or \"value\"")
	}
	return sortValues(dictItems(d), func(it any) (any, error) {
		return sortKey(it.(tuple)[pos], truthy(a[0])), nil
	}, truthy(a[2]))
}

// attrPath is jinja2's make_attrgetter: a dotted path of item lookups,
// numeric parts as integer indexes.
func attrPath(item any, path any) (any, error) {
	p, ok := path.(string)
	if !ok {
		return getItem(item, path)
	}
	for _, part := range strings.Split(p, ".") {
		var key any = part
		if n, err := strconv.ParseInt(part, 10, 64); err == nil {
			key = n
		}
		var err error
		if item, err = getItem(item, key); err != nil {
			return nil, err
		}
	}
	return item, nil
}

func mapAttribute(items []any, path, def any) ([]any, error) {
	out := make([]any, len(items))
	for i, it := range items {
		v, err := attrPath(it, path)
		if err != nil {
			return nil, err
		}
		if _, undef := v.(undefined); undef && def != nil {
			v = def
		}
		out[i] = v
	}
	return out, nil
}

// selectFilter builds select, reject, selectattr and rejectattr: keep
// the items (or their attribute) for which the named test, or plain
// truth when no test is named, equals keep.
func selectFilter(name string, byAttr, keep bool) filterFunc {
	return func(s *state, v any, args []any, kw []kwarg) (any, error) {
		if !truthy(v) {
			// jinja2 selects nothing from any falsy value, None included.
			return []any{}, nil
		}
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		var path any
		if byAttr {
			if len(args) == 0 {
				return nil, fmt.Errorf("%s() missing required argument 'attr'", name)
			}
			path, args = args[0], args[1:]
		}
		check := func(x any) (bool, error) { return truthy(x), nil }
		if len(args) > 0 {
			testName, ok := args[0].(string)
			if !ok {
				return nil, fmt.Errorf("%s() test name must be a string, not %s", name, typeName(args[0]))
			}
			test, ok := tests[testName]
			if !ok {
				return nil, fmt.Errorf("no test named '%s'", testName)
			}
			testArgs := args[1:]
			check = func(x any) (bool, error) { return test(x, testArgs) }
		}
		out := []any{}
		for _, it := range items {
			subject := it
			if byAttr {
				if subject, err = attrPath(it, path); err != nil {
					return nil, err
				}
			}
			ok, err := check(subject)
			if err != nil {
				return nil, err
			}
			if ok == keep {
				out = append(out, it)
			}
		}
		return out, nil
	}
}

// filterMap is map(attribute=..., default=...) or map("filter", args...).
func filterMap(s *state, v any, args []any, kw []kwarg) (any, error) {
	if !truthy(v) {
		// jinja2 maps nothing over any falsy value, None included.
		return []any{}, nil
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	if len(args) == 0 {
		var path, def any
		for _, k := range kw {
			switch k.name {
			case "attribute":
				path = k.val
			case "default":
				def = k.val
			default:
				return nil, fmt.Errorf("map() got an unexpected keyword argument '%s'", k.name)
			}
		}
		if path == nil {
			return nil, errors.New("map() needs a filter name or attribute=")
		}
		return mapAttribute(items, path, def)
	}
	name, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("map() filter name must be a string, not %s", typeName(args[0]))
	}
	f, ok := filters[name]
	if !ok {
		return nil, fmt.Errorf("no filter named '%s'", name)
	}
	out := make([]any, len(items))
	for i, it := range items {
		if out[i], err = f(s, it, args[1:], kw); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func filterReverse(_ *state, v any, args []any, kw []kwarg) (any, error) {
	if err := noArgs("reverse", args, kw); err != nil {
		return nil, err
	}
	if str, ok := v.(string); ok {
		r := []rune(str)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r), nil
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	kind := "reversed"
	switch v.(type) {
	case []any:
		kind = "list_reverseiterator"
	case *dict:
		kind = "dict_reversekeyiterator"
	}
	return &iterator{kind: kind, items: out}, nil
}

func filterAbs(_ *state, v any, args []any, kw []kwarg) (any, error) {
	if err := noArgs("abs", args, kw); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case bool, int64:
		i, _ := intValue(x)
		if i < 0 {
			i = -i
		}
		return i, nil
	case float64:
		return math.Abs(x), nil
	}
	return nil, fmt.Errorf("bad operand type for abs(): '%s'", typeName(v))
}

// filterRound: "common" is Python's round(), which rounds exact halves
// to even on the exact binary value, as strconv does.
func filterRound(_ *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("round", args, kw, []string{"precision", "method"}, int64(0), "common")
	if err != nil {
		return nil, err
	}
	prec, ok := intValue(a[0])
	if !ok {
		return nil, fmt.Errorf("precision must be an int, not %s", typeName(a[0]))
	}
	f, ok := number(v)
	if !ok {
		return nil, fmt.Errorf("type %s doesn't define __round__ method", typeName(v))
	}
	switch a[1] {
	case "common":
		if _, isInt := intValue(v); isInt && prec >= 0 {
			i, _ := intValue(v)
			return i, nil
		}
		if prec < 0 || prec > 300 || math.IsInf(f, 0) || math.IsNaN(f) {
			p := math.Pow(10, float64(prec))
			return math.RoundToEven(f*p) / p, nil
		}
		return strconv.ParseFloat(strconv.FormatFloat(f, 'f', int(prec), 64), 64)
	case "floor", "ceil":
		p := math.Pow(10, float64(prec))
		if a[1] == "floor" {
			return math.Floor(f*p) / p, nil
		}
		return math.Ceil(f*p) / p, nil
	}
	return nil, errors.New("method must be 'common', 'ceil' or 'floor'")
}

// filterIndent is jinja2 3.1's indent(width=4, first=False, blank=False).
func filterIndent(_ *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("indent", args, kw, []string{"width", "first", "blank"}, int64(4), false, false)
	if err != nil {
		return nil, err
	}
	var pad string
	if w, ok := a[0].(string); ok {
		pad = w
	} else if n, ok := intValue(a[0]); ok {
		pad = strings.Repeat(" ", int(max(0, min(n, 1024))))
	} else {
		return nil, fmt.Errorf("width must be an int or a str, not %s", typeName(a[0]))
	}
	text, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("can only indent a string, not %s", typeName(v))
	}
	lines := pySplitlines(text+"\n", false)
	var out string
	if truthy(a[2]) {
		out = strings.Join(lines, "\n"+pad)
	} else {
		var b strings.Builder
		b.WriteString(lines[0])
		for _, l := range lines[1:] {
			b.WriteByte('\n')
			if l != "" {
				b.WriteString(pad)
			}
			b.WriteString(l)
		}
		out = b.String()
	}
	if truthy(a[1]) {
		out = pad + out
	}
	return out, nil
}

func filterUnique(_ *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("unique", args, kw, []string{"case_sensitive", "attribute"}, false, nil)
	if err != nil {
		return nil, err
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	var seen []any
	out := []any{}
	for _, it := range items {
		k := it
		if a[1] != nil {
			if k, err = attrPath(it, a[1]); err != nil {
				return nil, err
			}
		}
		k = sortKey(k, truthy(a[0]))
		if !hashableDeep(k) {
			return nil, fmt.Errorf("unhashable type: '%s'", typeName(k))
		}
		dup := false
		for _, s := range seen {
			if pyEqual(s, k) {
				dup = true
				break
			}
		}
		if !dup {
			seen = append(seen, k)
			out = append(out, it)
		}
	}
	return out, nil
}

// wordPattern is Python's \w+ on str.
var wordPattern = regexp.MustCompile(`[\p{L}\p{N}\p{Mn}\p{Pc}]+`)

func filterWordcount(_ *state, v any, args []any, kw []kwarg) (any, error) {
	if err := noArgs("wordcount", args, kw); err != nil {
		return nil, err
	}
	return int64(len(wordPattern.FindAllStringIndex(pyStr(v), -1))), nil
}

func filterCenter(_ *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("center", args, kw, []string{"width"}, int64(80))
	if err != nil {
		return nil, err
	}
	w, ok := intValue(a[0])
	if !ok {
		return nil, fmt.Errorf("width must be an int, not %s", typeName(a[0]))
	}
	return py.Center(pyStr(v), int(min(w, maxOutput))), nil
}

func filterAttr(_ *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("attr", args, kw, []string{"name"}, required)
	if err != nil {
		return nil, err
	}
	name, err := stringArg("attr", a[0])
	if err != nil {
		return nil, err
	}
	return getAttr(v, name)
}

func filterFormat(_ *state, v any, args []any, kw []kwarg) (any, error) {
	if len(args) > 0 && len(kw) > 0 {
		return nil, errors.New("can't handle positional and keyword arguments at the same time")
	}
	if len(kw) > 0 {
		return nil, errors.New("keyword arguments to format are not supported")
	}
	var arg any = tuple(args)
	if len(args) == 1 {
		arg = args[0]
	}
	return percentFormat(pyStr(v), arg)
}

func filterSum(_ *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("sum", args, kw, []string{"attribute", "start"}, nil, int64(0))
	if err != nil {
		return nil, err
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	if a[0] != nil {
		if items, err = mapAttribute(items, a[0], nil); err != nil {
			return nil, err
		}
	}
	total := a[1]
	for _, it := range items {
		if total, err = arith("+", total, it); err != nil {
			return nil, err
		}
	}
	return total, nil
}

func filterSort(_ *state, v any, args []any, kw []kwarg) (any, error) {
	a, err := bind("sort", args, kw, []string{"reverse", "case_sensitive", "attribute"}, false, false, nil)
	if err != nil {
		return nil, err
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	return sortValues(items, func(it any) (any, error) {
		if a[2] != nil {
			var err error
			if it, err = attrPath(it, a[2]); err != nil {
				return nil, err
			}
		}
		return sortKey(it, truthy(a[1])), nil
	}, truthy(a[0]))
}

// minMaxFilter builds min (sign -1) and max (sign 1); ties keep the
// first item, as Python's min and max do.
func minMaxFilter(name string, sign int) filterFunc {
	return func(_ *state, v any, args []any, kw []kwarg) (any, error) {
		a, err := bind(name, args, kw, []string{"case_sensitive", "attribute"}, false, nil)
		if err != nil {
			return nil, err
		}
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return undefined{hint: "No aggregated item, sequence was empty."}, nil
		}
		key := func(it any) (any, error) {
			if a[1] != nil {
				var err error
				if it, err = attrPath(it, a[1]); err != nil {
					return nil, err
				}
			}
			return sortKey(it, truthy(a[0])), nil
		}
		best := items[0]
		bestKey, err := key(best)
		if err != nil {
			return nil, err
		}
		for _, it := range items[1:] {
			k, err := key(it)
			if err != nil {
				return nil, err
			}
			c, err := pyCompare(k, bestKey)
			if err != nil {
				return nil, err
			}
			if c*sign > 0 {
				best, bestKey = it, k
			}
		}
		return best, nil
	}
}
