package chattemplate

// A compiled template is a tree of nodes (statements) and exprs
// (expressions). The tree is never modified after parsing, so one
// template can render on many goroutines at once; everything a render
// changes lives in its state.

type node interface {
	render(s *state) error
}

type expr interface {
	eval(s *state) (any, error)
}

type textNode struct{ text string }

type outputNode struct {
	x   expr
	off int
}

type ifNode struct {
	conds  []expr
	bodies [][]node
	orElse []node
}

type forNode struct {
	target target
	iter   expr
	filter expr // for x in y if filter
	body   []node
	orElse []node
	off    int
}

// target is the left side of a set or for: a name, a tuple of names, or
// (only in set) a namespace attribute names[0].attr.
type target struct {
	names []string
	tuple bool
	attr  string
}

type setNode struct {
	target target
	value  expr
	off    int
}

// setBlockNode is {% set name | filters %}body{% endset %}; filtered is
// the filter chain applied to the rendered body (a bare blockRef when
// there are no filters).
type setBlockNode struct {
	target   target
	filtered expr
	body     []node
	off      int
}

// blockRef stands for the rendered body of the enclosing set or filter
// block inside its filter chain.
type blockRef struct{}

type filterBlockNode struct {
	filtered expr
	body     []node
	off      int
}

type macroNode struct{ m *macro }

// macro is both the parsed {% macro %} (closure nil) and the value bound
// to its name during a render (closure set to the defining scope).
type macro struct {
	name     string
	params   []string
	defaults []expr // nil where a parameter has no default
	body     []node
	closure  *scope
	caller   *macro
}

type callBlockNode struct {
	call   *callExpr
	caller *macro
	off    int
}

// scopeNode is {% with %} (names bound in a new scope) or {% generation
// %} (no names). Both render their body in a scope of its own, so a set
// inside does not leak out.
type scopeNode struct {
	names  []string
	values []expr
	body   []node
}

type loopControlNode struct {
	isBreak bool
	off     int
}

type constExpr struct{ v any }

type nameExpr struct {
	name string
	off  int
}

type tupleExpr struct {
	items []expr
	off   int
}

type listExpr struct{ items []expr }

type dictExpr struct {
	keys, vals []expr
	off        int
}

type attrExpr struct {
	obj  expr
	name string
	off  int
}

type itemExpr struct {
	obj, key expr
	off      int
}

type sliceExpr struct {
	obj               expr
	start, stop, step expr
	off               int
}

type kwExpr struct {
	name string
	val  expr
}

type callExpr struct {
	fn     expr
	args   []expr
	kwargs []kwExpr
	off    int
}

type filterExpr struct {
	subject expr
	name    string
	fn      filterFunc
	args    []expr
	kwargs  []kwExpr
	off     int
}

type testExpr struct {
	subject expr
	name    string
	fn      testFunc
	args    []expr
	off     int
}

type unaryExpr struct {
	op  string // "not", "-", "+"
	x   expr
	off int
}

type binaryExpr struct {
	op          string
	left, right expr
	off         int
}

// logicExpr is "and"/"or" with Python's semantics: the result is the
// operand that decided, not a bool.
type logicExpr struct {
	or          bool
	left, right expr
}

type compareExpr struct {
	first expr
	ops   []string // "==", "!=", "<", "<=", ">", ">=", "in", "notin"
	rest  []expr
	off   int
}

// ternaryExpr is "then if cond else orElse"; orElse may be nil.
type ternaryExpr struct {
	then, cond, orElse expr
	off                int
}
