package chattemplate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/stampede-bench/stampede/internal/py"
)

// Python str semantics that Go's strings package does not share.

func pyStrip(s, chars string, whitespace, left, right bool) string {
	cut := func(r rune) bool { return strings.ContainsRune(chars, r) }
	if whitespace {
		cut = py.IsSpace
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	return s
}

func isCased(r rune) bool { return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) }

// pyTitle is str.title(): a cased character after an uncased one starts
// a word and is title-cased; other cased characters are lowered.
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		if prevCased {
			b.WriteRune(unicode.ToLower(r))
		} else {
			b.WriteRune(unicode.ToTitle(r))
		}
		prevCased = isCased(r)
	}
	return b.String()
}

// pyCapitalize is str.capitalize(): the first character title-cased,
// the rest lowered.
func pyCapitalize(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i == 0 {
			b.WriteRune(unicode.ToTitle(r))
		} else {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// pySplitWhitespace is str.split() / str.rsplit() without a separator:
// runs of whitespace separate, empty fields are dropped, at most limit
// splits (limit < 0: no limit).
func pySplitWhitespace(s string, limit int, fromRight bool) []string {
	if limit < 0 {
		return strings.FieldsFunc(s, py.IsSpace)
	}
	fields := []string{}
	if fromRight {
		rest := strings.TrimRightFunc(s, py.IsSpace)
		for rest != "" {
			if len(fields) == limit {
				fields = append(fields, rest)
				break
			}
			i := strings.LastIndexFunc(rest, py.IsSpace)
			fields = append(fields, rest[i+1:])
			if i < 0 {
				break
			}
			rest = strings.TrimRightFunc(rest[:i], py.IsSpace)
		}
		for i, j := 0, len(fields)-1; i < j; i, j = i+1, j-1 {
			fields[i], fields[j] = fields[j], fields[i]
		}
		return fields
	}
	rest := strings.TrimLeftFunc(s, py.IsSpace)
	for rest != "" {
		if len(fields) == limit {
			fields = append(fields, rest)
			break
		}
		i := strings.IndexFunc(rest, py.IsSpace)
		if i < 0 {
			fields = append(fields, rest)
			break
		}
		fields = append(fields, rest[:i])
		rest = strings.TrimLeftFunc(rest[i:], py.IsSpace)
	}
	return fields
}

func pySplit(s, sep string, limit int, fromRight bool) []string {
	if !fromRight || limit < 0 {
		return strings.SplitN(s, sep, limit+boolInt(limit >= 0))
	}
	var rev []string
	for len(rev) < limit {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		rev = append(rev, s[i+len(sep):])
		s = s[:i]
	}
	out := []string{s}
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i])
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func isLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// pySplitlines is str.splitlines(): every Unicode line boundary, "\r\n"
// counted once, no empty last field.
func pySplitlines(s string, keepEnds bool) []string {
	var lines []string
	start := 0
	runes := []rune(s)
	for i := 0; i < len(runes); i++ {
		if !isLineBreak(runes[i]) {
			continue
		}
		end := i + 1
		if runes[i] == '\r' && i+1 < len(runes) && runes[i+1] == '\n' {
			end++
		}
		if keepEnds {
			lines = append(lines, string(runes[start:end]))
		} else {
			lines = append(lines, string(runes[start:i]))
		}
		start = end
		i = end - 1
	}
	if start < len(runes) {
		lines = append(lines, string(runes[start:]))
	}
	return lines
}

func pyIsClass(s, name string) bool {
	if s == "" {
		return false
	}
	cased := false
	for _, r := range s {
		switch name {
		case "isdigit":
			if !unicode.IsDigit(r) {
				return false
			}
		case "isspace":
			if !py.IsSpace(r) {
				return false
			}
		case "isalpha":
			if !unicode.IsLetter(r) {
				return false
			}
		case "isalnum":
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				return false
			}
		case "islower":
			if unicode.IsUpper(r) || unicode.IsTitle(r) {
				return false
			}
			cased = cased || unicode.IsLower(r)
		case "isupper":
			if unicode.IsLower(r) || unicode.IsTitle(r) {
				return false
			}
			cased = cased || unicode.IsUpper(r)
		}
	}
	if name == "islower" || name == "isupper" {
		return cased
	}
	return true
}

// pyFormat is str.format with plain, numbered and named fields ({},
// {0}, {name}, {{ and }}); format specs and conversions are not
// supported and say so.
func pyFormat(f string, args []any, kw []kwarg) (string, error) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c == '}' {
			if i+1 < len(f) && f[i+1] == '}' {
				i++
			}
			b.WriteByte('}')
			continue
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(f) && f[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		end := strings.IndexByte(f[i:], '}')
		if end < 0 {
			return "", errors.New("single '{' encountered in format string")
		}
		field := f[i+1 : i+end]
		i += end
		if strings.ContainsAny(field, ":!") {
			return "", fmt.Errorf("format field {%s}: conversions and format specs are not supported", field)
		}
		var v any
		switch n, err := strconv.Atoi(field); {
		case field == "":
			if auto >= len(args) {
				return "", fmt.Errorf("replacement index %d out of range for positional args tuple", auto)
			}
			v = args[auto]
			auto++
		case err == nil:
			if n >= len(args) {
				return "", fmt.Errorf("replacement index %d out of range for positional args tuple", n)
			}
			v = args[n]
		default:
			found := false
			for _, k := range kw {
				if k.name == field {
					v, found = k.val, true
				}
			}
			if !found {
				return "", fmt.Errorf("format field '%s' not given", field)
			}
		}
		b.WriteString(pyStr(v))
	}
	return b.String(), nil
}

func isMappingLike(v any) bool {
	switch v.(type) {
	case *dict, []any, undefined:
		return true
	}
	return false
}

// percentFormat is the "%" operator on a string with %s, %d, %r, %i and
// %% conversions.
func percentFormat(f string, arg any) (any, error) {
	args := []any{arg}
	if t, ok := arg.(tuple); ok {
		args = t
	}
	var b strings.Builder
	next := 0
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		if i+1 >= len(f) {
			return nil, errors.New("incomplete format")
		}
		i++
		verb := f[i]
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if next >= len(args) {
			return nil, errors.New("not enough arguments for format string")
		}
		v := args[next]
		next++
		switch verb {
		case 's':
			b.WriteString(pyStr(v))
		case 'r':
			b.WriteString(pyRepr(v))
		case 'd', 'i':
			n, ok := number(v)
			if !ok {
				return nil, fmt.Errorf("%%%c format: a real number is required, not %s", verb, typeName(v))
			}
			b.WriteString(strconv.FormatInt(int64(n), 10))
		default:
			return nil, fmt.Errorf("unsupported format character '%c'", verb)
		}
	}
	// Python takes any argument with __getitem__ (dict, list, Undefined)
	// as a mapping for %(name)s fields and does not complain when none
	// uses it.
	if next < len(args) && !isMappingLike(arg) {
		return nil, errors.New("not all arguments converted during string formatting")
	}
	return b.String(), nil
}
