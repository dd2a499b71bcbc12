package chattemplate

import (
	"fmt"
)

// The grammar is jinja2's, from loosest to tightest binding:
//
//	expr     = or ["if" or ["else" expr]]
//	or       = and {"or" and}
//	and      = not {"and" not}
//	not      = "not" not | compare
//	compare  = math1 {("=="|"!="|"<"|"<="|">"|">="|"in"|"not" "in") math1}
//	math1    = concat {("+"|"-") concat}
//	concat   = math2 {"~" math2}
//	math2    = pow {("*"|"/"|"//"|"%") pow}
//	pow      = unary {"**" unary}
//	unary    = ("-"|"+") unary | primary postfix {"|" filter | "is" test | call}
//
// so filters and tests bind tighter than any operator: `messages|length
// - 1` subtracts from the length and `not x is defined` negates the test.

// maxNesting bounds expression and statement nesting so that hostile
// input cannot exhaust the stack.
const maxNesting = 200

type parser struct {
	toks  []token
	i     int
	depth int
}

func parse(toks []token) ([]node, error) {
	p := &parser{toks: toks}
	body, end, err := p.body()
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, p.errAt(p.cur(), "encountered unknown tag '%s'", end)
	}
	return body, nil
}

func (p *parser) cur() token  { return p.toks[p.i] }
func (p *parser) peek() token { return p.toks[min(p.i+1, len(p.toks)-1)] }

func (p *parser) advance() token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *parser) errAt(t token, format string, args ...any) error {
	return &Error{off: t.off, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) isOp(op string) bool {
	t := p.cur()
	return t.kind == tokOp && t.val == op
}

func (p *parser) isName(name string) bool {
	t := p.cur()
	return t.kind == tokName && t.val == name
}

func (p *parser) expectOp(op string) error {
	if !p.isOp(op) {
		return p.errAt(p.cur(), "expected '%s', got %s", op, p.cur().describe())
	}
	p.advance()
	return nil
}

func (p *parser) expectKind(k tokenKind) (token, error) {
	if p.cur().kind != k {
		return token{}, p.errAt(p.cur(), "expected %s, got %s", k, p.cur().describe())
	}
	return p.advance(), nil
}

func (p *parser) expectName() (string, error) {
	t, err := p.expectKind(tokName)
	return t.val, err
}

// body parses statements up to a block tag it does not know, which is
// returned (with the parser positioned on that tag's name) so the caller
// can check it is the end tag it wants. At the end of input end is "".
func (p *parser) body() (nodes []node, end string, err error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxNesting {
		return nil, "", p.errAt(p.cur(), "statements nested deeper than %d", maxNesting)
	}
	for {
		t := p.cur()
		switch t.kind {
		case tokEOF:
			return nodes, "", nil
		case tokText:
			p.advance()
			nodes = append(nodes, &textNode{text: t.val})
		case tokVarBegin:
			p.advance()
			x, err := p.tuple(true, false)
			if err != nil {
				return nil, "", err
			}
			if _, err := p.expectKind(tokVarEnd); err != nil {
				return nil, "", err
			}
			nodes = append(nodes, &outputNode{x: x, off: t.off})
		case tokBlockBegin:
			p.advance()
			name := p.cur()
			if name.kind != tokName {
				return nil, "", p.errAt(name, "tag name expected")
			}
			st, known, err := p.statement(name)
			if err != nil {
				return nil, "", err
			}
			if !known {
				return nodes, name.val, nil
			}
			if st != nil {
				nodes = append(nodes, st)
			}
		default:
			return nil, "", p.errAt(t, "unexpected %s", t.describe())
		}
	}
}

// bodyUntil parses a body that must close with one of ends.
func (p *parser) bodyUntil(opener token, ends ...string) ([]node, string, error) {
	nodes, end, err := p.body()
	if err != nil {
		return nil, "", err
	}
	for _, e := range ends {
		if end == e {
			p.advance()
			return nodes, end, nil
		}
	}
	if end == "" {
		return nil, "", p.errAt(opener, "unexpected end of template: the '%s' tag is never closed (expected '%s')", opener.val, ends[len(ends)-1])
	}
	return nil, "", p.errAt(p.cur(), "encountered unknown tag '%s' (expected '%s')", end, ends[len(ends)-1])
}

func (p *parser) endBlock() error {
	_, err := p.expectKind(tokBlockEnd)
	return err
}

// statement parses the tag whose name is at the cursor. known is false
// for names that end an enclosing block (endfor, else, ...).
func (p *parser) statement(name token) (st node, known bool, err error) {
	switch name.val {
	case "if":
		p.advance()
		st, err = p.ifStatement(name)
	case "for":
		p.advance()
		st, err = p.forStatement(name)
	case "set":
		p.advance()
		st, err = p.setStatement(name)
	case "macro":
		p.advance()
		st, err = p.macroStatement(name)
	case "call":
		p.advance()
		st, err = p.callStatement(name)
	case "filter":
		p.advance()
		st, err = p.filterStatement(name)
	case "with":
		p.advance()
		st, err = p.withStatement(name)
	case "generation":
		// transformers' AssistantTracker marks assistant text with
		// {% generation %}; it renders the body as a call block does, in
		// a scope of its own.
		p.advance()
		if err = p.endBlock(); err != nil {
			return nil, true, err
		}
		var body []node
		body, _, err = p.bodyUntil(name, "endgeneration")
		if err == nil {
			err = p.endBlock()
		}
		st = &scopeNode{body: body}
	case "break", "continue":
		p.advance()
		st = &loopControlNode{isBreak: name.val == "break", off: name.off}
		err = p.endBlock()
	case "include", "extends", "import", "from", "block", "do", "autoescape", "trans":
		return nil, true, p.errAt(name, "the '%s' tag is not supported in chat templates", name.val)
	default:
		return nil, false, nil
	}
	return st, true, err
}

func (p *parser) ifStatement(opener token) (node, error) {
	n := &ifNode{}
	for {
		cond, err := p.tuple(false, false)
		if err != nil {
			return nil, err
		}
		if err := p.endBlock(); err != nil {
			return nil, err
		}
		body, end, err := p.bodyUntil(opener, "elif", "else", "endif")
		if err != nil {
			return nil, err
		}
		n.conds = append(n.conds, cond)
		n.bodies = append(n.bodies, body)
		switch end {
		case "elif":
			continue
		case "else":
			if err := p.endBlock(); err != nil {
				return nil, err
			}
			if n.orElse, _, err = p.bodyUntil(opener, "endif"); err != nil {
				return nil, err
			}
		}
		return n, p.endBlock()
	}
}

func (p *parser) forStatement(opener token) (node, error) {
	n := &forNode{off: opener.off}
	var err error
	if n.target, err = p.assignTarget(false); err != nil {
		return nil, err
	}
	if !p.isName("in") {
		return nil, p.errAt(p.cur(), "expected 'in' in for statement, got %s", p.cur().describe())
	}
	p.advance()
	if n.iter, err = p.tuple(false, true); err != nil {
		return nil, err
	}
	if p.isName("if") {
		p.advance()
		if n.filter, err = p.expr(true); err != nil {
			return nil, err
		}
	}
	if p.isName("recursive") {
		return nil, p.errAt(p.cur(), "recursive for loops are not supported in chat templates")
	}
	if err := p.endBlock(); err != nil {
		return nil, err
	}
	body, end, err := p.bodyUntil(opener, "else", "endfor")
	if err != nil {
		return nil, err
	}
	n.body = body
	if end == "else" {
		if err := p.endBlock(); err != nil {
			return nil, err
		}
		if n.orElse, _, err = p.bodyUntil(opener, "endfor"); err != nil {
			return nil, err
		}
	}
	return n, p.endBlock()
}

// assignTarget parses a name, a namespace attribute (ns.attr, only when
// attr is allowed) or a comma separated tuple of names.
func (p *parser) assignTarget(attr bool) (target, error) {
	first, err := p.expectName()
	if err != nil {
		return target{}, err
	}
	if attr && p.isOp(".") {
		p.advance()
		a, err := p.expectName()
		if err != nil {
			return target{}, err
		}
		return target{names: []string{first}, attr: a}, nil
	}
	t := target{names: []string{first}}
	for p.isOp(",") {
		p.advance()
		t.tuple = true
		if p.cur().kind != tokName || p.isName("in") {
			break
		}
		name, _ := p.expectName()
		t.names = append(t.names, name)
	}
	return t, nil
}

func (p *parser) setStatement(opener token) (node, error) {
	tgt, err := p.assignTarget(true)
	if err != nil {
		return nil, err
	}
	if p.isOp("=") {
		p.advance()
		value, err := p.tuple(true, false)
		if err != nil {
			return nil, err
		}
		return &setNode{target: tgt, value: value, off: opener.off}, p.endBlock()
	}
	// Block set: {% set name | filters %}...{% endset %}
	n := &setBlockNode{target: tgt, off: opener.off}
	var subject expr = &blockRef{}
	for p.isOp("|") {
		if subject, err = p.filter(subject); err != nil {
			return nil, err
		}
	}
	n.filtered = subject
	if err := p.endBlock(); err != nil {
		return nil, err
	}
	if n.body, _, err = p.bodyUntil(opener, "endset"); err != nil {
		return nil, err
	}
	return n, p.endBlock()
}

func (p *parser) macroStatement(opener token) (node, error) {
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	m := &macro{name: name}
	if err := p.params(m); err != nil {
		return nil, err
	}
	if err := p.endBlock(); err != nil {
		return nil, err
	}
	if m.body, _, err = p.bodyUntil(opener, "endmacro"); err != nil {
		return nil, err
	}
	return &macroNode{m: m}, p.endBlock()
}

// params parses a macro's "(a, b=default)" signature.
func (p *parser) params(m *macro) error {
	if err := p.expectOp("("); err != nil {
		return err
	}
	for !p.isOp(")") {
		if len(m.params) > 0 {
			if err := p.expectOp(","); err != nil {
				return err
			}
			if p.isOp(")") {
				break
			}
		}
		name, err := p.expectName()
		if err != nil {
			return err
		}
		var def expr
		if p.isOp("=") {
			p.advance()
			if def, err = p.expr(true); err != nil {
				return err
			}
		} else if len(m.defaults) > 0 && m.defaults[len(m.defaults)-1] != nil {
			return p.errAt(p.cur(), "non-default argument '%s' follows default argument", name)
		}
		m.params = append(m.params, name)
		m.defaults = append(m.defaults, def)
	}
	p.advance()
	return nil
}

func (p *parser) callStatement(opener token) (node, error) {
	n := &callBlockNode{caller: &macro{name: "caller"}, off: opener.off}
	if p.isOp("(") {
		if err := p.params(n.caller); err != nil {
			return nil, err
		}
	}
	x, err := p.expr(true)
	if err != nil {
		return nil, err
	}
	call, ok := x.(*callExpr)
	if !ok {
		return nil, p.errAt(opener, "expected a macro call after 'call'")
	}
	n.call = call
	if err := p.endBlock(); err != nil {
		return nil, err
	}
	if n.caller.body, _, err = p.bodyUntil(opener, "endcall"); err != nil {
		return nil, err
	}
	return n, p.endBlock()
}

func (p *parser) filterStatement(opener token) (node, error) {
	var subject expr = &blockRef{}
	var err error
	if subject, err = p.filterChain(subject); err != nil {
		return nil, err
	}
	if err := p.endBlock(); err != nil {
		return nil, err
	}
	body, _, err := p.bodyUntil(opener, "endfilter")
	if err != nil {
		return nil, err
	}
	return &filterBlockNode{filtered: subject, body: body, off: opener.off}, p.endBlock()
}

// filterChain parses "name(args) | name ..." as in {% filter %}, whose
// first filter has no leading "|".
func (p *parser) filterChain(subject expr) (expr, error) {
	for first := true; first || p.isOp("|"); first = false {
		if !first {
			p.advance()
		}
		f, err := p.filterCall(subject)
		if err != nil {
			return nil, err
		}
		subject = f
	}
	return subject, nil
}

func (p *parser) withStatement(opener token) (node, error) {
	n := &scopeNode{}
	for !p.cur().isBlockEnd() {
		if len(n.names) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		name, err := p.expectName()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		v, err := p.expr(true)
		if err != nil {
			return nil, err
		}
		n.names = append(n.names, name)
		n.values = append(n.values, v)
	}
	if err := p.endBlock(); err != nil {
		return nil, err
	}
	var err error
	if n.body, _, err = p.bodyUntil(opener, "endwith"); err != nil {
		return nil, err
	}
	return n, p.endBlock()
}

func (t token) isBlockEnd() bool { return t.kind == tokBlockEnd || t.kind == tokEOF }

// tuple parses an expression, or a tuple when commas follow it without
// parentheses ({{ a, b }}, {% set a, b = 1, 2 %}, for ... in a, b).
func (p *parser) tuple(condExpr, forIter bool) (expr, error) {
	start := p.cur()
	first, err := p.expr(condExpr)
	if err != nil {
		return nil, err
	}
	if !p.isOp(",") {
		return first, nil
	}
	items := []expr{first}
	for p.isOp(",") {
		p.advance()
		if p.tupleEnds(forIter) {
			break
		}
		x, err := p.expr(condExpr)
		if err != nil {
			return nil, err
		}
		items = append(items, x)
	}
	return &tupleExpr{items: items, off: start.off}, nil
}

func (p *parser) tupleEnds(forIter bool) bool {
	t := p.cur()
	switch t.kind {
	case tokVarEnd, tokBlockEnd, tokEOF:
		return true
	case tokOp:
		return t.val == ")" || t.val == "]" || t.val == "}"
	case tokName:
		return forIter && (t.val == "if" || t.val == "recursive")
	}
	return false
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxNesting {
		return p.errAt(p.cur(), "expression nested deeper than %d", maxNesting)
	}
	return nil
}

// expr parses a full expression; without condExpr the trailing
// "a if c else b" form is not taken (the iterable of a for loop, whose
// "if" filters items).
func (p *parser) expr(condExpr bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	x, err := p.or()
	if err != nil || !condExpr {
		return x, err
	}
	for p.isName("if") {
		t := p.advance()
		cond, err := p.or()
		if err != nil {
			return nil, err
		}
		c := &ternaryExpr{then: x, cond: cond, off: t.off}
		if p.isName("else") {
			p.advance()
			if c.orElse, err = p.expr(true); err != nil {
				return nil, err
			}
		}
		x = c
	}
	return x, nil
}

func (p *parser) or() (expr, error) {
	x, err := p.and()
	for err == nil && p.isName("or") {
		p.advance()
		var y expr
		if y, err = p.and(); err == nil {
			x = &logicExpr{or: true, left: x, right: y}
		}
	}
	return x, err
}

func (p *parser) and() (expr, error) {
	x, err := p.not()
	for err == nil && p.isName("and") {
		p.advance()
		var y expr
		if y, err = p.not(); err == nil {
			x = &logicExpr{left: x, right: y}
		}
	}
	return x, err
}

func (p *parser) not() (expr, error) {
	if p.isName("not") {
		t := p.advance()
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{op: "not", x: x, off: t.off}, nil
	}
	return p.compare()
}

var compareOps = map[string]bool{"==": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true}

func (p *parser) compare() (expr, error) {
	first, err := p.math1()
	if err != nil {
		return nil, err
	}
	c := &compareExpr{first: first, off: p.cur().off}
	for {
		t := p.cur()
		var op string
		switch {
		case t.kind == tokOp && compareOps[t.val]:
			op = t.val
			p.advance()
		case p.isName("in"):
			op = "in"
			p.advance()
		case p.isName("not") && p.peek().kind == tokName && p.peek().val == "in":
			op = "notin"
			p.advance()
			p.advance()
		default:
			if len(c.ops) == 0 {
				return first, nil
			}
			return c, nil
		}
		y, err := p.math1()
		if err != nil {
			return nil, err
		}
		c.ops = append(c.ops, op)
		c.rest = append(c.rest, y)
	}
}

func (p *parser) binaryLevel(ops []string, next func() (expr, error)) (expr, error) {
	x, err := next()
	if err != nil {
		return nil, err
	}
	for {
		t := p.cur()
		matched := false
		if t.kind == tokOp {
			for _, op := range ops {
				if t.val == op {
					matched = true
				}
			}
		}
		if !matched {
			return x, nil
		}
		p.advance()
		y, err := next()
		if err != nil {
			return nil, err
		}
		x = &binaryExpr{op: t.val, left: x, right: y, off: t.off}
	}
}

func (p *parser) math1() (expr, error) {
	return p.binaryLevel([]string{"+", "-"}, p.concat)
}

func (p *parser) concat() (expr, error) {
	return p.binaryLevel([]string{"~"}, p.math2)
}

func (p *parser) math2() (expr, error) {
	return p.binaryLevel([]string{"*", "/", "//", "%"}, p.pow)
}

func (p *parser) pow() (expr, error) {
	return p.binaryLevel([]string{"**"}, func() (expr, error) { return p.unary(true) })
}

func (p *parser) unary(withFilter bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	t := p.cur()
	var x expr
	var err error
	if p.isOp("-") || p.isOp("+") {
		p.advance()
		inner, err := p.unary(false)
		if err != nil {
			return nil, err
		}
		x = &unaryExpr{op: t.val, x: inner, off: t.off}
	} else if x, err = p.primary(); err != nil {
		return nil, err
	}
	if x, err = p.postfix(x); err != nil {
		return nil, err
	}
	if !withFilter {
		return x, nil
	}
	for {
		switch {
		case p.isOp("|"):
			x, err = p.filter(x)
		case p.isName("is"):
			x, err = p.test(x)
		case p.isOp("("):
			x, err = p.call(x)
		default:
			return x, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) primary() (expr, error) {
	t := p.cur()
	switch t.kind {
	case tokName:
		p.advance()
		switch t.val {
		case "true", "True":
			return &constExpr{v: true}, nil
		case "false", "False":
			return &constExpr{v: false}, nil
		case "none", "None":
			return &constExpr{v: nil}, nil
		}
		return &nameExpr{name: t.val, off: t.off}, nil
	case tokString:
		// Adjacent literals concatenate, as in Python.
		s := ""
		for p.cur().kind == tokString {
			s += p.advance().val
		}
		return &constExpr{v: s}, nil
	case tokInt:
		p.advance()
		return &constExpr{v: t.i}, nil
	case tokFloat:
		p.advance()
		return &constExpr{v: t.f}, nil
	case tokOp:
		switch t.val {
		case "(":
			p.advance()
			if p.isOp(")") {
				p.advance()
				return &tupleExpr{off: t.off}, nil
			}
			x, err := p.tuple(true, false)
			if err != nil {
				return nil, err
			}
			return x, p.expectOp(")")
		case "[":
			p.advance()
			items, err := p.list("]")
			if err != nil {
				return nil, err
			}
			return &listExpr{items: items}, nil
		case "{":
			return p.dictLiteral()
		}
	}
	return nil, p.errAt(t, "unexpected %s", t.describe())
}

// list parses comma separated expressions up to the closing bracket,
// allowing a trailing comma.
func (p *parser) list(closer string) ([]expr, error) {
	var items []expr
	for !p.isOp(closer) {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp(closer) {
				break
			}
		}
		x, err := p.expr(true)
		if err != nil {
			return nil, err
		}
		items = append(items, x)
	}
	p.advance()
	return items, nil
}

func (p *parser) dictLiteral() (expr, error) {
	d := &dictExpr{off: p.advance().off}
	for !p.isOp("}") {
		if len(d.keys) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp("}") {
				break
			}
		}
		k, err := p.expr(true)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(":"); err != nil {
			return nil, err
		}
		v, err := p.expr(true)
		if err != nil {
			return nil, err
		}
		d.keys = append(d.keys, k)
		d.vals = append(d.vals, v)
	}
	p.advance()
	return d, nil
}

func (p *parser) postfix(x expr) (expr, error) {
	for {
		t := p.cur()
		switch {
		case p.isOp("."):
			p.advance()
			a := p.cur()
			switch a.kind {
			case tokName:
				p.advance()
				x = &attrExpr{obj: x, name: a.val, off: a.off}
			case tokInt:
				p.advance()
				x = &itemExpr{obj: x, key: &constExpr{v: a.i}, off: a.off}
			default:
				return nil, p.errAt(a, "expected attribute name after '.', got %s", a.describe())
			}
		case p.isOp("["):
			p.advance()
			var err error
			if x, err = p.subscript(x, t); err != nil {
				return nil, err
			}
		case p.isOp("("):
			var err error
			if x, err = p.call(x); err != nil {
				return nil, err
			}
		default:
			return x, nil
		}
	}
}

// subscript parses the inside of [...]: an index, or a slice
// start:stop:step with any part omitted.
func (p *parser) subscript(obj expr, open token) (expr, error) {
	var parts [3]expr
	isSlice := false
	for k := 0; k < 3; k++ {
		if !p.isOp(":") && !p.isOp("]") {
			x, err := p.expr(true)
			if err != nil {
				return nil, err
			}
			if k == 0 && p.isOp(",") {
				// x[a, b] indexes by the tuple (a, b).
				items := []expr{x}
				for p.isOp(",") {
					p.advance()
					if p.isOp("]") {
						break
					}
					if x, err = p.expr(true); err != nil {
						return nil, err
					}
					items = append(items, x)
				}
				x = &tupleExpr{items: items, off: open.off}
			}
			parts[k] = x
		}
		if !p.isOp(":") || k == 2 {
			break
		}
		isSlice = true
		p.advance()
	}
	if err := p.expectOp("]"); err != nil {
		return nil, err
	}
	if !isSlice {
		if parts[0] == nil {
			return nil, p.errAt(open, "expected an index inside '[]'")
		}
		return &itemExpr{obj: obj, key: parts[0], off: open.off}, nil
	}
	return &sliceExpr{obj: obj, start: parts[0], stop: parts[1], step: parts[2], off: open.off}, nil
}

func (p *parser) args() ([]expr, []kwExpr, error) {
	if err := p.expectOp("("); err != nil {
		return nil, nil, err
	}
	var args []expr
	var kws []kwExpr
	for !p.isOp(")") {
		if len(args)+len(kws) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, nil, err
			}
			if p.isOp(")") {
				break
			}
		}
		if p.isOp("*") || p.isOp("**") {
			return nil, nil, p.errAt(p.cur(), "*args and **kwargs in calls are not supported in chat templates")
		}
		if p.cur().kind == tokName && p.peek().kind == tokOp && p.peek().val == "=" {
			name := p.advance().val
			p.advance()
			v, err := p.expr(true)
			if err != nil {
				return nil, nil, err
			}
			kws = append(kws, kwExpr{name: name, val: v})
			continue
		}
		if len(kws) > 0 {
			return nil, nil, p.errAt(p.cur(), "positional argument follows keyword argument")
		}
		v, err := p.expr(true)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, v)
	}
	p.advance()
	return args, kws, nil
}

func (p *parser) call(fn expr) (expr, error) {
	off := p.cur().off
	args, kws, err := p.args()
	if err != nil {
		return nil, err
	}
	return &callExpr{fn: fn, args: args, kwargs: kws, off: off}, nil
}

func (p *parser) filter(subject expr) (expr, error) {
	p.advance() // "|"
	return p.filterCall(subject)
}

func (p *parser) filterCall(subject expr) (expr, error) {
	t := p.cur()
	name, err := p.dottedName()
	if err != nil {
		return nil, err
	}
	fn, ok := filters[name]
	if !ok {
		return nil, p.errAt(t, "no filter named '%s'", name)
	}
	f := &filterExpr{subject: subject, name: name, fn: fn, off: t.off}
	if p.isOp("(") {
		if f.args, f.kwargs, err = p.args(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (p *parser) dottedName() (string, error) {
	name, err := p.expectName()
	for err == nil && p.isOp(".") {
		p.advance()
		var part string
		part, err = p.expectName()
		name += "." + part
	}
	return name, err
}

func (p *parser) test(subject expr) (expr, error) {
	is := p.advance()
	negated := false
	if p.isName("not") {
		p.advance()
		negated = true
	}
	t := p.cur()
	name, err := p.dottedName()
	if err != nil {
		return nil, err
	}
	fn, ok := tests[name]
	if !ok {
		return nil, p.errAt(t, "no test named '%s'", name)
	}
	x := &testExpr{subject: subject, name: name, fn: fn, off: is.off}
	next := p.cur()
	switch {
	case p.isOp("("):
		if x.args, _, err = p.args(); err != nil {
			return nil, err
		}
	case (next.kind == tokName || next.kind == tokString || next.kind == tokInt || next.kind == tokFloat ||
		next.kind == tokOp && (next.val == "(" || next.val == "[" || next.val == "{")) &&
		!p.isName("else") && !p.isName("or") && !p.isName("and"):
		if p.isName("is") {
			return nil, p.errAt(next, "you cannot chain multiple tests with is")
		}
		arg, err := p.primary()
		if err != nil {
			return nil, err
		}
		if arg, err = p.postfix(arg); err != nil {
			return nil, err
		}
		x.args = []expr{arg}
	}
	if negated {
		return &unaryExpr{op: "not", x: x, off: is.off}, nil
	}
	return x, nil
}
