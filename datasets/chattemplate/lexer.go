package chattemplate

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stampede-bench/stampede/internal/py"
)

// The lexer follows jinja2's as Hugging Face configures it:
// trim_blocks=True (the first newline after a block or comment tag is
// dropped), lstrip_blocks=True (spaces and tabs before a block or comment
// tag that starts a line are dropped), keep_trailing_newline=False (one
// trailing newline of the source is dropped), "\r\n" and "\r" read as
// "\n". A "-" inside a delimiter strips all whitespace on that side; a
// "+" after "{%" or "{#" turns lstrip_blocks off for that tag and a "+"
// before "%}" or "#}" turns trim_blocks off.

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokText
	tokVarBegin
	tokVarEnd
	tokBlockBegin
	tokBlockEnd
	tokName
	tokString
	tokInt
	tokFloat
	tokOp
)

func (k tokenKind) String() string {
	switch k {
	case tokEOF:
		return "end of template"
	case tokText:
		return "template data"
	case tokVarBegin:
		return "'{{'"
	case tokVarEnd:
		return "end of print statement"
	case tokBlockBegin:
		return "'{%'"
	case tokBlockEnd:
		return "end of statement block"
	case tokName:
		return "name"
	case tokString:
		return "string"
	case tokInt:
		return "integer"
	case tokFloat:
		return "float"
	}
	return "operator"
}

type token struct {
	kind tokenKind
	val  string // text, name, operator, or decoded string literal
	i    int64
	f    float64
	off  int // byte offset in the normalized source
}

func (t token) describe() string {
	switch t.kind {
	case tokName, tokOp:
		return "'" + t.val + "'"
	case tokString:
		return "string " + strconv.Quote(t.val)
	}
	return t.kind.String()
}

// operators, longest first so that "**" wins over "*".
var operators = []string{
	"//", "**", "==", "!=", ">=", "<=",
	"+", "-", "*", "/", "%", "~", "[", "]", "(", ")", "{", "}",
	"<", ">", "=", ".", ":", "|", ",", ";",
}

// normalizeSource applies jinja2's newline handling: every line break
// becomes "\n" and a single trailing newline is removed.
func normalizeSource(src string) string {
	if strings.IndexByte(src, '\r') >= 0 {
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
	}
	return strings.TrimSuffix(src, "\n")
}

type lexer struct {
	src  string
	pos  int
	toks []token
	// lineStarting is jinja2's flag: the previous match ended with a
	// newline, so text before the next tag starts a line.
	lineStarting bool
}

func lex(src string) ([]token, error) {
	lx := &lexer{src: src, lineStarting: true}
	for lx.pos < len(src) {
		if err := lx.next(); err != nil {
			return nil, err
		}
	}
	lx.toks = append(lx.toks, token{kind: tokEOF, off: len(src)})
	return lx.toks, nil
}

// next consumes template data up to and including the next tag.
func (lx *lexer) next() error {
	start := lx.pos
	open := indexTagOpen(lx.src, start)
	if open < 0 {
		lx.emitText(lx.src[start:], start)
		lx.pos = len(lx.src)
		return nil
	}
	kind := lx.src[open+1]
	sign := byte(0)
	if open+2 < len(lx.src) && (lx.src[open+2] == '-' || lx.src[open+2] == '+') {
		sign = lx.src[open+2]
	}
	text := lx.stripBeforeTag(lx.src[start:open], sign, kind != '{')
	lx.emitText(text, start)
	body := open + 2
	if sign != 0 {
		body++
	}
	switch kind {
	case '#':
		return lx.comment(open, body)
	case '%':
		if end, ok := lx.rawBegin(body); ok {
			return lx.raw(open, end)
		}
		lx.toks = append(lx.toks, token{kind: tokBlockBegin, off: open})
		return lx.tag(body, '%')
	default:
		lx.toks = append(lx.toks, token{kind: tokVarBegin, off: open})
		return lx.tag(body, '}')
	}
}

func indexTagOpen(s string, from int) int {
	for i := from; ; {
		j := strings.IndexByte(s[i:], '{')
		if j < 0 || i+j+1 >= len(s) {
			return -1
		}
		i += j
		switch s[i+1] {
		case '{', '%', '#':
			return i
		}
		i++
	}
}

// stripBeforeTag applies "-" and lstrip_blocks to the data before a tag.
func (lx *lexer) stripBeforeTag(text string, sign byte, lstrip bool) string {
	if sign == '-' {
		return strings.TrimRightFunc(text, py.IsSpace)
	}
	if sign == '+' || !lstrip {
		return text
	}
	lpos := strings.LastIndexByte(text, '\n') + 1
	if (lpos > 0 || lx.lineStarting) && lpos < len(text) && strings.TrimLeftFunc(text[lpos:], py.IsSpace) == "" {
		return text[:lpos]
	}
	return text
}

func (lx *lexer) emitText(text string, off int) {
	if text != "" {
		lx.toks = append(lx.toks, token{kind: tokText, val: text, off: off})
	}
}

// afterClose moves past a tag whose closing delimiter ends just before p,
// consuming the whitespace its sign governs: all of it after "-", none
// after "+", otherwise the one newline trim_blocks drops (trim).
func (lx *lexer) afterClose(p int, sign byte, trim bool) {
	switch {
	case sign == '-':
		for p < len(lx.src) {
			r, n := utf8.DecodeRuneInString(lx.src[p:])
			if !py.IsSpace(r) {
				break
			}
			p += n
		}
	case sign != '+' && trim && p < len(lx.src) && lx.src[p] == '\n':
		p++
	}
	lx.lineStarting = p > 0 && lx.src[p-1] == '\n'
	lx.pos = p
}

func (lx *lexer) comment(open, body int) error {
	end := strings.Index(lx.src[body:], "#}")
	if end < 0 {
		return &Error{off: open, Msg: "missing end of comment tag"}
	}
	end += body
	sign := byte(0)
	if end > body && (lx.src[end-1] == '-' || lx.src[end-1] == '+') {
		sign = lx.src[end-1]
	}
	lx.afterClose(end+2, sign, true)
	return nil
}

// rawBegin matches the rest of `{% raw %}` starting at p.
func (lx *lexer) rawBegin(p int) (end int, ok bool) {
	p = skipSpace(lx.src, p)
	if !strings.HasPrefix(lx.src[p:], "raw") {
		return 0, false
	}
	p = skipSpace(lx.src, p+3)
	switch {
	case strings.HasPrefix(lx.src[p:], "-%}"):
		end = skipSpace(lx.src, p+3)
	case strings.HasPrefix(lx.src[p:], "%}"):
		end = p + 2
	default:
		return 0, false
	}
	return end, true
}

// raw emits everything up to `{% endraw %}` as data.
func (lx *lexer) raw(open, p int) error {
	for search := p; ; {
		j := strings.Index(lx.src[search:], "{%")
		if j < 0 {
			return &Error{off: open, Msg: "missing end of raw directive"}
		}
		j += search
		q := j + 2
		sign := byte(0)
		if q < len(lx.src) && (lx.src[q] == '-' || lx.src[q] == '+') {
			sign = lx.src[q]
			q++
		}
		q = skipSpace(lx.src, q)
		if !strings.HasPrefix(lx.src[q:], "endraw") {
			search = j + 2
			continue
		}
		q = skipSpace(lx.src, q+6)
		closeSign := byte(0)
		if q < len(lx.src) && (lx.src[q] == '-' || lx.src[q] == '+') {
			closeSign = lx.src[q]
			q++
		}
		if !strings.HasPrefix(lx.src[q:], "%}") {
			search = j + 2
			continue
		}
		lx.lineStarting = false
		lx.emitText(lx.stripBeforeTag(lx.src[p:j], sign, true), p)
		lx.afterClose(q+2, closeSign, true)
		return nil
	}
}

func skipSpace(s string, p int) int {
	for p < len(s) {
		r, n := utf8.DecodeRuneInString(s[p:])
		if !py.IsSpace(r) {
			break
		}
		p += n
	}
	return p
}

// tag lexes the expression tokens of a {{ }} (closer '}') or {% %}
// (closer '%') tag. Inside brackets the closing delimiter is an operator,
// as in jinja2.
func (lx *lexer) tag(p int, closer byte) error {
	depth := 0
	endKind := tokVarEnd
	if closer == '%' {
		endKind = tokBlockEnd
	}
	for {
		p = skipSpace(lx.src, p)
		if p >= len(lx.src) {
			return &Error{off: p, Msg: "unexpected end of template, expected end of tag"}
		}
		rest := lx.src[p:]
		if depth == 0 {
			sign := byte(0)
			r := rest
			if r[0] == '-' || (r[0] == '+' && closer == '%') {
				sign, r = r[0], r[1:]
			}
			if len(r) >= 2 && r[0] == closer && r[1] == '}' {
				lx.toks = append(lx.toks, token{kind: endKind, off: p})
				end := p + 2
				if sign != 0 {
					end++
				}
				lx.afterClose(end, sign, closer == '%')
				return nil
			}
		}
		c := rest[0]
		var n int
		var err error
		switch {
		case c == '\'' || c == '"':
			n, err = lx.stringLit(p)
		case c >= '0' && c <= '9':
			n, err = lx.numberLit(p)
		case c == '_' || c >= 0x80 || unicode.IsLetter(rune(c)):
			n = lx.name(p)
		default:
			n, err = lx.operator(p, &depth)
		}
		if err != nil {
			return err
		}
		p += n
	}
}

func (lx *lexer) name(p int) int {
	n := 0
	for p+n < len(lx.src) {
		r, w := utf8.DecodeRuneInString(lx.src[p+n:])
		if r != '_' && !unicode.IsLetter(r) && !(n > 0 && unicode.IsDigit(r)) {
			break
		}
		n += w
	}
	if n == 0 {
		_, n = utf8.DecodeRuneInString(lx.src[p:])
		lx.toks = append(lx.toks, token{kind: tokOp, val: lx.src[p : p+n], off: p})
		return n
	}
	lx.toks = append(lx.toks, token{kind: tokName, val: lx.src[p : p+n], off: p})
	return n
}

func (lx *lexer) operator(p int, depth *int) (int, error) {
	rest := lx.src[p:]
	for _, op := range operators {
		if strings.HasPrefix(rest, op) {
			switch op {
			case "(", "[", "{":
				*depth++
			case ")", "]", "}":
				if *depth == 0 {
					return 0, &Error{off: p, Msg: "unexpected '" + op + "'"}
				}
				*depth--
			}
			lx.toks = append(lx.toks, token{kind: tokOp, val: op, off: p})
			return len(op), nil
		}
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return 0, &Error{off: p, Msg: "unexpected char " + strconv.QuoteRune(r)}
}

// numberLit lexes jinja2's integer (decimal with "_" separators, 0b, 0o,
// 0x) and float literals. A number directly after "." is an attribute
// index (foo.0.1), never a float.
func (lx *lexer) numberLit(p int) (int, error) {
	s := lx.src[p:]
	afterDot := len(lx.toks) > 0 && lx.toks[len(lx.toks)-1].kind == tokOp && lx.toks[len(lx.toks)-1].val == "."
	if len(s) > 2 && s[0] == '0' && strings.ContainsRune("bBoOxX", rune(s[1])) {
		base := 16
		switch s[1] {
		case 'b', 'B':
			base = 2
		case 'o', 'O':
			base = 8
		}
		n := 2
		for n < len(s) && (s[n] == '_' || isDigitIn(s[n], base)) {
			n++
		}
		v, err := strconv.ParseInt(strings.ReplaceAll(s[2:n], "_", ""), base, 64)
		if err != nil {
			return 0, &Error{off: p, Msg: "malformed integer literal " + strconv.Quote(s[:n])}
		}
		lx.toks = append(lx.toks, token{kind: tokInt, i: v, off: p})
		return n, nil
	}
	n := digitsRun(s, 0)
	isFloat := false
	if !afterDot {
		if n < len(s) && s[n] == '.' && n+1 < len(s) && s[n+1] >= '0' && s[n+1] <= '9' {
			isFloat = true
			n = digitsRun(s, n+1)
		}
		if n < len(s) && (s[n] == 'e' || s[n] == 'E') {
			m := n + 1
			if m < len(s) && (s[m] == '+' || s[m] == '-') {
				m++
			}
			if m < len(s) && s[m] >= '0' && s[m] <= '9' {
				isFloat = true
				n = digitsRun(s, m)
			}
		}
	}
	lit := strings.ReplaceAll(s[:n], "_", "")
	if isFloat {
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil && !isRangeErr(err) {
			return 0, &Error{off: p, Msg: "malformed float literal " + strconv.Quote(s[:n])}
		}
		lx.toks = append(lx.toks, token{kind: tokFloat, f: f, off: p})
		return n, nil
	}
	v, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		return 0, &Error{off: p, Msg: "integer literal " + strconv.Quote(s[:n]) + " does not fit in 64 bits"}
	}
	lx.toks = append(lx.toks, token{kind: tokInt, i: v, off: p})
	return n, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func digitsRun(s string, n int) int {
	for n < len(s) && (s[n] >= '0' && s[n] <= '9' || s[n] == '_' && n+1 < len(s) && s[n+1] >= '0' && s[n+1] <= '9') {
		n++
	}
	return n
}

func isDigitIn(c byte, base int) bool {
	switch base {
	case 2:
		return c == '0' || c == '1'
	case 8:
		return c >= '0' && c <= '7'
	}
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// stringLit lexes a quoted literal and decodes its escapes as Python's
// "unicode-escape" codec does, which is what jinja2 applies.
func (lx *lexer) stringLit(p int) (int, error) {
	s := lx.src[p:]
	quote := s[0]
	var b strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		switch c {
		case quote:
			lx.toks = append(lx.toks, token{kind: tokString, val: b.String(), off: p})
			return i + 1, nil
		case '\\':
			n, err := unescape(&b, s[i:])
			if err != nil {
				return 0, &Error{off: p + i, Msg: err.Error()}
			}
			i += n
		default:
			b.WriteByte(c)
			i++
		}
	}
	return 0, &Error{off: p, Msg: "unterminated string literal"}
}

type lexError string

func (e lexError) Error() string { return string(e) }

// simpleEscapes are the single-character escapes of Python string
// literals; a backslash before a newline joins the lines.
var simpleEscapes = map[byte]string{
	'\n': "", '\\': "\\", '\'': "'", '"': "\"", 'a': "\a", 'b': "\b",
	'f': "\f", 'n': "\n", 'r': "\r", 't': "\t", 'v': "\v",
}

// unescape decodes the escape sequence at the start of s (s[0] is the
// backslash) into b and returns how many bytes it used.
func unescape(b *strings.Builder, s string) (int, error) {
	if len(s) < 2 {
		b.WriteByte('\\')
		return 1, nil
	}
	if r, ok := simpleEscapes[s[1]]; ok {
		b.WriteString(r)
		return 2, nil
	}
	switch s[1] {
	case 'x', 'u', 'U':
		width := 2
		switch s[1] {
		case 'u':
			width = 4
		case 'U':
			width = 8
		}
		if len(s) < 2+width {
			return 0, lexError("truncated \\" + string(s[1]) + " escape in string literal")
		}
		v, err := strconv.ParseUint(s[2:2+width], 16, 32)
		if err != nil || v > unicode.MaxRune {
			return 0, lexError("malformed \\" + s[1:2+width] + " escape in string literal")
		}
		b.WriteRune(rune(v))
		return 2 + width, nil
	case '0', '1', '2', '3', '4', '5', '6', '7':
		n := 1
		for n < 3 && 1+n < len(s) && s[1+n] >= '0' && s[1+n] <= '7' {
			n++
		}
		v, _ := strconv.ParseUint(s[1:1+n], 8, 32)
		b.WriteRune(rune(v))
		return 1 + n, nil
	}
	b.WriteByte('\\')
	return 1, nil
}
