package chattemplate

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Bounds that keep a hostile or buggy template from running away. Real
// chat templates stay far below them.
const (
	maxCallDepth  = 200      // nested macro calls
	maxIterations = 1 << 20  // loop iterations per render
	maxOutput     = 64 << 20 // bytes of one rendered string
)

// state is everything one render changes.
type state struct {
	out        *strings.Builder
	scope      *scope
	now        func() time.Time
	callDepth  int
	iterations int
	block      string // body of the enclosing set/filter block
}

// scope is one level of jinja2's variable frames: the render context,
// then one per for-loop iteration, macro call and with block. set writes
// to the innermost scope, which is why a set inside a loop is gone after
// the iteration (templates use namespace() to carry state out).
type scope struct {
	vars   map[string]any
	parent *scope
}

func (sc *scope) lookup(name string) (any, bool) {
	for ; sc != nil; sc = sc.parent {
		if v, ok := sc.vars[name]; ok {
			return v, true
		}
	}
	v, ok := globals[name]
	return v, ok
}

func (s *state) push() *scope {
	sc := &scope{vars: make(map[string]any, 4), parent: s.scope}
	s.scope = sc
	return sc
}

// at attaches a template position to err unless it already has one.
func at(off int, err error) error {
	if err == nil {
		return nil
	}
	var te *Error
	if errors.As(err, &te) || err == errBreak || err == errContinue {
		return err
	}
	return &Error{off: off, Msg: err.Error(), cause: err}
}

var (
	errBreak    = errors.New("'break' outside a loop")
	errContinue = errors.New("'continue' outside a loop")
)

// undefinedError is what using an Undefined for anything but printing,
// truth testing, iteration or len() raises.
func undefinedError(u undefined) error { return errors.New(u.hint) }

func renderNodes(s *state, nodes []node) error {
	for _, n := range nodes {
		if err := n.render(s); err != nil {
			return err
		}
	}
	return nil
}

func (n *textNode) render(s *state) error {
	s.out.WriteString(n.text)
	return nil
}

func (n *outputNode) render(s *state) error {
	v, err := n.x.eval(s)
	if err != nil {
		return err
	}
	if str, ok := v.(string); ok {
		s.out.WriteString(str)
	} else {
		s.out.WriteString(pyStr(v))
	}
	if s.out.Len() > maxOutput {
		return &Error{off: n.off, Msg: fmt.Sprintf("rendered output exceeds %d bytes", maxOutput)}
	}
	return nil
}

func (n *ifNode) render(s *state) error {
	for i, c := range n.conds {
		v, err := c.eval(s)
		if err != nil {
			return err
		}
		if truthy(v) {
			return renderNodes(s, n.bodies[i])
		}
	}
	return renderNodes(s, n.orElse)
}

func (n *forNode) render(s *state) error {
	iv, err := n.iter.eval(s)
	if err != nil {
		return err
	}
	items, err := iterate(iv)
	if err != nil {
		return at(n.off, err)
	}
	parent := s.scope
	defer func() { s.scope = parent }()
	if n.filter != nil {
		kept := make([]any, 0, len(items))
		for _, it := range items {
			sc := s.push()
			if err := bindTarget(sc, n.target, it); err != nil {
				return at(n.off, err)
			}
			ok, err := n.filter.eval(s)
			s.scope = parent
			if err != nil {
				return err
			}
			if truthy(ok) {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	if len(items) == 0 {
		return renderNodes(s, n.orElse)
	}
	loop := &loopInfo{items: items}
	// One scope serves every iteration, emptied in between: what an
	// iteration sets is gone by the next one, as in jinja2.
	sc := s.push()
	for i, it := range items {
		if s.iterations++; s.iterations > maxIterations {
			return &Error{off: n.off, Msg: fmt.Sprintf("template exceeded %d loop iterations", maxIterations)}
		}
		clear(sc.vars)
		s.scope = sc
		loop.index = i
		sc.vars["loop"] = loop
		if err := bindTarget(sc, n.target, it); err != nil {
			return at(n.off, err)
		}
		err := renderNodes(s, n.body)
		if err == errBreak {
			break
		}
		if err != nil && err != errContinue {
			return err
		}
	}
	return nil
}

// bindTarget assigns v to a name, or unpacks it over a tuple of names.
func bindTarget(sc *scope, t target, v any) error {
	if !t.tuple {
		sc.vars[t.names[0]] = v
		return nil
	}
	items, err := iterate(v)
	if err != nil {
		return fmt.Errorf("cannot unpack non-iterable %s object", typeName(v))
	}
	if len(items) != len(t.names) {
		if len(items) > len(t.names) {
			return fmt.Errorf("too many values to unpack (expected %d)", len(t.names))
		}
		return fmt.Errorf("not enough values to unpack (expected %d, got %d)", len(t.names), len(items))
	}
	for i, name := range t.names {
		sc.vars[name] = items[i]
	}
	return nil
}

func (s *state) assign(t target, v any, off int) error {
	if t.attr == "" {
		return at(off, bindTarget(s.scope, t, v))
	}
	obj, _ := s.scope.lookup(t.names[0])
	ns, ok := obj.(*namespace)
	if !ok {
		return &Error{off: off, Msg: fmt.Sprintf("cannot assign attribute on non-namespace object '%s'", t.names[0])}
	}
	ns.attrs.Set(t.attr, v)
	return nil
}

func (n *setNode) render(s *state) error {
	v, err := n.value.eval(s)
	if err != nil {
		return err
	}
	return s.assign(n.target, v, n.off)
}

// capture renders body into a fresh buffer and returns the text.
func (s *state) capture(body []node) (string, error) {
	saved := s.out
	var b strings.Builder
	s.out = &b
	err := renderNodes(s, body)
	s.out = saved
	return b.String(), err
}

// applyToBlock evaluates a filter chain over the rendered text of a block.
func (s *state) applyToBlock(text string, filtered expr) (any, error) {
	saved := s.block
	s.block = text
	defer func() { s.block = saved }()
	return filtered.eval(s)
}

func (n *setBlockNode) render(s *state) error {
	text, err := s.capture(n.body)
	if err != nil {
		return err
	}
	v, err := s.applyToBlock(text, n.filtered)
	if err != nil {
		return err
	}
	return s.assign(n.target, v, n.off)
}

func (blockRef) eval(s *state) (any, error) { return s.block, nil }

func (n *filterBlockNode) render(s *state) error {
	text, err := s.capture(n.body)
	if err != nil {
		return err
	}
	v, err := s.applyToBlock(text, n.filtered)
	if err != nil {
		return err
	}
	s.out.WriteString(pyStr(v))
	return nil
}

func (n *macroNode) render(s *state) error {
	m := *n.m
	m.closure = s.scope
	s.scope.vars[m.name] = &m
	return nil
}

func (n *callBlockNode) render(s *state) error {
	fn, err := n.call.fn.eval(s)
	if err != nil {
		return err
	}
	m, ok := fn.(*macro)
	if !ok {
		return &Error{off: n.off, Msg: fmt.Sprintf("'%s' object is not a macro, cannot be used with call", typeName(fn))}
	}
	args, kws, err := s.evalArgs(n.call.args, n.call.kwargs)
	if err != nil {
		return err
	}
	caller := *n.caller
	caller.closure = s.scope
	withCaller := *m
	withCaller.caller = &caller
	v, err := s.callMacro(&withCaller, args, kws, n.off)
	if err != nil {
		return err
	}
	s.out.WriteString(v)
	return nil
}

func (s *state) callMacro(m *macro, args []any, kws []kwarg, off int) (string, error) {
	if len(args) > len(m.params) {
		return "", &Error{off: off, Msg: fmt.Sprintf("macro '%s' takes not more than %d argument(s)", m.name, len(m.params))}
	}
	if s.callDepth++; s.callDepth > maxCallDepth {
		return "", &Error{off: off, Msg: fmt.Sprintf("macro calls nested deeper than %d", maxCallDepth)}
	}
	saved := s.scope
	s.scope = m.closure
	sc := s.push()
	defer func() {
		s.scope = saved
		s.callDepth--
	}()
	for i, name := range m.params {
		switch {
		case i < len(args):
			sc.vars[name] = args[i]
		case m.defaults[i] != nil:
			v, err := m.defaults[i].eval(s)
			if err != nil {
				return "", err
			}
			sc.vars[name] = v
		default:
			sc.vars[name] = undefined{hint: fmt.Sprintf("parameter '%s' was not provided", name)}
		}
	}
	for _, kw := range kws {
		found := false
		for _, name := range m.params {
			if name == kw.name {
				sc.vars[name] = kw.val
				found = true
			}
		}
		if !found {
			return "", &Error{off: off, Msg: fmt.Sprintf("macro '%s' takes no keyword argument '%s'", m.name, kw.name)}
		}
	}
	if m.caller != nil {
		sc.vars["caller"] = m.caller
	}
	out, err := s.capture(m.body)
	if err == errBreak || err == errContinue {
		return "", &Error{off: off, Msg: err.Error()}
	}
	return out, err
}

func (n *scopeNode) render(s *state) error {
	values := make([]any, len(n.values))
	for i, x := range n.values {
		v, err := x.eval(s)
		if err != nil {
			return err
		}
		values[i] = v
	}
	parent := s.scope
	sc := s.push()
	for i, name := range n.names {
		sc.vars[name] = values[i]
	}
	err := renderNodes(s, n.body)
	s.scope = parent
	return err
}

// render signals the enclosing for loop through errBreak or errContinue,
// which forNode.render consumes.
func (n *loopControlNode) render(s *state) error {
	signal := errContinue
	if n.isBreak {
		signal = errBreak
	}
	if _, ok := s.scope.lookup("loop"); !ok {
		return &Error{off: n.off, Msg: signal.Error()}
	}
	return signal
}

func (x *constExpr) eval(*state) (any, error) { return x.v, nil }

func (x *nameExpr) eval(s *state) (any, error) {
	if v, ok := s.scope.lookup(x.name); ok {
		return v, nil
	}
	return undefined{hint: fmt.Sprintf("'%s' is undefined", x.name)}, nil
}

func (s *state) evalList(xs []expr) ([]any, error) {
	out := make([]any, len(xs))
	for i, x := range xs {
		v, err := x.eval(s)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (x *tupleExpr) eval(s *state) (any, error) {
	items, err := s.evalList(x.items)
	return tuple(items), err
}

func (x *listExpr) eval(s *state) (any, error) {
	items, err := s.evalList(x.items)
	if items == nil && err == nil {
		items = []any{}
	}
	return items, err
}

func (x *dictExpr) eval(s *state) (any, error) {
	d := newDict(len(x.keys))
	for i := range x.keys {
		k, err := x.keys[i].eval(s)
		if err != nil {
			return nil, err
		}
		if !hashable(k) {
			return nil, &Error{off: x.off, Msg: fmt.Sprintf("unhashable type: '%s'", typeName(k))}
		}
		v, err := x.vals[i].eval(s)
		if err != nil {
			return nil, err
		}
		d.Set(dictKey(k), v)
	}
	return d, nil
}

func (x *attrExpr) eval(s *state) (any, error) {
	obj, err := x.obj.eval(s)
	if err != nil {
		return nil, err
	}
	v, err := getAttr(obj, x.name)
	return v, at(x.off, err)
}

func (x *itemExpr) eval(s *state) (any, error) {
	obj, err := x.obj.eval(s)
	if err != nil {
		return nil, err
	}
	key, err := x.key.eval(s)
	if err != nil {
		return nil, err
	}
	v, err := getItem(obj, key)
	return v, at(x.off, err)
}

func (x *sliceExpr) eval(s *state) (any, error) {
	obj, err := x.obj.eval(s)
	if err != nil {
		return nil, err
	}
	var bounds [3]any
	for i, part := range []expr{x.start, x.stop, x.step} {
		if part == nil {
			continue
		}
		if bounds[i], err = part.eval(s); err != nil {
			return nil, err
		}
	}
	v, err := slice(obj, bounds[0], bounds[1], bounds[2])
	return v, at(x.off, err)
}

func (s *state) evalArgs(args []expr, kws []kwExpr) ([]any, []kwarg, error) {
	vals, err := s.evalList(args)
	if err != nil {
		return nil, nil, err
	}
	var kwVals []kwarg
	if len(kws) > 0 {
		kwVals = make([]kwarg, len(kws))
		for i, kw := range kws {
			v, err := kw.val.eval(s)
			if err != nil {
				return nil, nil, err
			}
			kwVals[i] = kwarg{name: kw.name, val: v}
		}
	}
	return vals, kwVals, nil
}

func (x *callExpr) eval(s *state) (any, error) {
	fn, err := x.fn.eval(s)
	if err != nil {
		return nil, err
	}
	args, kws, err := s.evalArgs(x.args, x.kwargs)
	if err != nil {
		return nil, err
	}
	switch fn := fn.(type) {
	case *function:
		if fn.name == "strftime_now" && len(args) > 0 {
			// The clock belongs to the render, so tests can fix it.
			format, ok := args[0].(string)
			if !ok {
				return nil, &Error{off: x.off, Msg: "strftime_now() argument must be str, not " + typeName(args[0])}
			}
			return strftime(s.now(), format), nil
		}
		v, err := fn.call(args, kws)
		return v, at(x.off, err)
	case *macro:
		return s.callMacro(fn, args, kws, x.off)
	case undefined:
		return nil, at(x.off, undefinedError(fn))
	}
	return nil, &Error{off: x.off, Msg: fmt.Sprintf("'%s' object is not callable", typeName(fn))}
}

func (x *filterExpr) eval(s *state) (any, error) {
	v, err := x.subject.eval(s)
	if err != nil {
		return nil, err
	}
	args, kws, err := s.evalArgs(x.args, x.kwargs)
	if err != nil {
		return nil, err
	}
	out, err := x.fn(s, v, args, kws)
	if err != nil {
		return nil, at(x.off, fmt.Errorf("filter %s: %w", x.name, err))
	}
	return out, nil
}

func (x *testExpr) eval(s *state) (any, error) {
	v, err := x.subject.eval(s)
	if err != nil {
		return nil, err
	}
	args, err := s.evalList(x.args)
	if err != nil {
		return nil, err
	}
	ok, err := x.fn(v, args)
	if err != nil {
		return nil, at(x.off, fmt.Errorf("test %s: %w", x.name, err))
	}
	return ok, nil
}

func (x *unaryExpr) eval(s *state) (any, error) {
	v, err := x.x.eval(s)
	if err != nil {
		return nil, err
	}
	switch x.op {
	case "not":
		return !truthy(v), nil
	case "-":
		switch n := v.(type) {
		case bool, int64:
			i, _ := intValue(n)
			return -i, nil
		case float64:
			return -n, nil
		case undefined:
			return nil, at(x.off, undefinedError(n))
		}
		return nil, &Error{off: x.off, Msg: fmt.Sprintf("bad operand type for unary -: '%s'", typeName(v))}
	}
	switch n := v.(type) {
	case bool:
		i, _ := intValue(n)
		return i, nil
	case int64, float64:
		return n, nil
	case undefined:
		return nil, at(x.off, undefinedError(n))
	}
	return nil, &Error{off: x.off, Msg: fmt.Sprintf("bad operand type for unary +: '%s'", typeName(v))}
}

func (x *binaryExpr) eval(s *state) (any, error) {
	l, err := x.left.eval(s)
	if err != nil {
		return nil, err
	}
	r, err := x.right.eval(s)
	if err != nil {
		return nil, err
	}
	if x.op == "~" {
		return pyStr(l) + pyStr(r), nil
	}
	v, err := arith(x.op, l, r)
	return v, at(x.off, err)
}

func (x *logicExpr) eval(s *state) (any, error) {
	l, err := x.left.eval(s)
	if err != nil {
		return nil, err
	}
	if truthy(l) == x.or {
		return l, nil
	}
	return x.right.eval(s)
}

func (x *compareExpr) eval(s *state) (any, error) {
	l, err := x.first.eval(s)
	if err != nil {
		return nil, err
	}
	for i, op := range x.ops {
		r, err := x.rest[i].eval(s)
		if err != nil {
			return nil, err
		}
		ok, err := compare(op, l, r)
		if err != nil {
			return nil, at(x.off, err)
		}
		if !ok {
			return false, nil
		}
		l = r
	}
	return true, nil
}

func compare(op string, l, r any) (bool, error) {
	switch op {
	case "==":
		return pyEqual(l, r), nil
	case "!=":
		return !pyEqual(l, r), nil
	case "in":
		return contains(r, l)
	case "notin":
		ok, err := contains(r, l)
		return !ok, err
	}
	for _, v := range [2]any{l, r} {
		if u, ok := v.(undefined); ok {
			return false, undefinedError(u)
		}
	}
	c, err := pyCompare(l, r)
	if err != nil {
		return false, errors.New(strings.Replace(err.Error(), "'<'", "'"+op+"'", 1))
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	}
	return c >= 0, nil
}

func (x *ternaryExpr) eval(s *state) (any, error) {
	c, err := x.cond.eval(s)
	if err != nil {
		return nil, err
	}
	if truthy(c) {
		return x.then.eval(s)
	}
	if x.orElse == nil {
		return undefined{hint: "the inline if-expression evaluated to false and no else section was defined"}, nil
	}
	return x.orElse.eval(s)
}

// arith is Python's + - * / // % ** on template values.
func arith(op string, l, r any) (any, error) {
	if f, ok := l.(string); ok && op == "%" {
		return percentFormat(f, r)
	}
	for _, v := range [2]any{l, r} {
		if u, ok := v.(undefined); ok {
			return nil, undefinedError(u)
		}
	}
	li, lInt := intValue(l)
	ri, rInt := intValue(r)
	lf, lNum := number(l)
	rf, rNum := number(r)
	if lNum && rNum {
		if lInt && rInt {
			return intArith(op, li, ri)
		}
		return floatArith(op, lf, rf)
	}
	switch op {
	case "+":
		switch a := l.(type) {
		case string:
			if b, ok := r.(string); ok {
				if len(a)+len(b) > maxOutput {
					return nil, fmt.Errorf("string longer than %d bytes", maxOutput)
				}
				return a + b, nil
			}
			return nil, fmt.Errorf("can only concatenate str (not \"%s\") to str", typeName(r))
		case []any:
			if b, ok := r.([]any); ok {
				return append(append(make([]any, 0, len(a)+len(b)), a...), b...), nil
			}
			return nil, fmt.Errorf("can only concatenate list (not \"%s\") to list", typeName(r))
		case tuple:
			if b, ok := r.(tuple); ok {
				return append(append(make(tuple, 0, len(a)+len(b)), a...), b...), nil
			}
		}
	case "*":
		if rInt {
			return repeat(l, ri)
		}
		if lInt {
			return repeat(r, li)
		}
	}
	return nil, fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(l), typeName(r))
}

// floatDivmod is CPython's float divmod, which derives the quotient from
// fmod so that a == div*b + mod holds as closely as floats allow (2.5 //
// 0.1 is 24.0, where math.Floor(2.5/0.1) would give 25).
func floatDivmod(a, b float64) (div, mod float64) {
	mod = math.Mod(a, b)
	div = (a - mod) / b
	if mod != 0 {
		if (b < 0) != (mod < 0) {
			mod += b
			div--
		}
	} else {
		mod = math.Copysign(0, b)
	}
	if div == 0 {
		return math.Copysign(0, a/b), mod
	}
	floor := math.Floor(div)
	if div-floor > 0.5 {
		floor++
	}
	return floor, mod
}

func repeat(v any, n int64) (any, error) {
	n = max(n, 0)
	switch v := v.(type) {
	case string:
		if int64(len(v))*n > maxOutput {
			return nil, fmt.Errorf("string longer than %d bytes", maxOutput)
		}
		return strings.Repeat(v, int(n)), nil
	case []any:
		return repeatItems(v, n)
	case tuple:
		out, err := repeatItems(v, n)
		return tuple(out), err
	}
	return nil, fmt.Errorf("can't multiply sequence by non-int of type '%s'", typeName(v))
}

// ringArith is + - * on either number type; ok is false for the other
// operators, whose meaning differs between int and float.
func ringArith[T int64 | float64](op string, a, b T) (v any, ok bool) {
	switch op {
	case "+":
		return a + b, true
	case "-":
		return a - b, true
	case "*":
		return a * b, true
	}
	return nil, false
}

func repeatItems(items []any, n int64) ([]any, error) {
	if int64(len(items))*n > maxIterations {
		return nil, fmt.Errorf("sequence longer than %d items", maxIterations)
	}
	out := make([]any, 0, len(items)*int(n))
	for range n {
		out = append(out, items...)
	}
	return out, nil
}

func intArith(op string, a, b int64) (any, error) {
	if v, ok := ringArith(op, a, b); ok {
		return v, nil
	}
	switch op {
	case "/":
		if b == 0 {
			return nil, errors.New("division by zero")
		}
		return float64(a) / float64(b), nil
	case "//":
		if b == 0 {
			return nil, errors.New("integer division or modulo by zero")
		}
		q := a / b
		if (a%b != 0) && ((a < 0) != (b < 0)) {
			q--
		}
		return q, nil
	case "%":
		if b == 0 {
			return nil, errors.New("integer division or modulo by zero")
		}
		m := a % b
		if m != 0 && ((m < 0) != (b < 0)) {
			m += b
		}
		return m, nil
	case "**":
		if b < 0 {
			return floatArith(op, float64(a), float64(b))
		}
		r := int64(1)
		for range min(b, 64) {
			r *= a
		}
		return r, nil
	}
	return nil, fmt.Errorf("unknown operator %s", op)
}

func floatArith(op string, a, b float64) (any, error) {
	if v, ok := ringArith(op, a, b); ok {
		return v, nil
	}
	switch op {
	case "/":
		if b == 0 {
			return nil, errors.New("float division by zero")
		}
		return a / b, nil
	case "//", "%":
		if b == 0 {
			if op == "//" {
				return nil, errors.New("float floor division by zero")
			}
			return nil, errors.New("float modulo")
		}
		div, mod := floatDivmod(a, b)
		if op == "//" {
			return div, nil
		}
		return mod, nil
	case "**":
		if a == 0 && b < 0 {
			return nil, errors.New("0.0 cannot be raised to a negative power")
		}
		return math.Pow(a, b), nil
	}
	return nil, fmt.Errorf("unknown operator %s", op)
}
