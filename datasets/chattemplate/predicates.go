package chattemplate

import "fmt"

// testFunc is a jinja2 test, the name after "is".
type testFunc func(v any, args []any) (bool, error)

var tests map[string]testFunc

func init() {
	eq := compareTest("==")
	tests = map[string]testFunc{
		"defined":   typeTest(func(v any) bool { _, u := v.(undefined); return !u }),
		"undefined": typeTest(func(v any) bool { _, u := v.(undefined); return u }),
		"none":      typeTest(func(v any) bool { return v == nil }),
		"boolean":   typeTest(func(v any) bool { _, ok := v.(bool); return ok }),
		"true":      typeTest(func(v any) bool { b, ok := v.(bool); return ok && b }),
		"false":     typeTest(func(v any) bool { b, ok := v.(bool); return ok && !b }),
		"integer":   typeTest(func(v any) bool { _, ok := v.(int64); return ok }),
		"float":     typeTest(func(v any) bool { _, ok := v.(float64); return ok }),
		"number":    typeTest(func(v any) bool { _, ok := number(v); return ok }),
		"string":    typeTest(func(v any) bool { _, ok := v.(string); return ok }),
		"mapping":   typeTest(func(v any) bool { _, ok := v.(*dict); return ok }),
		// Undefined is callable too: it has a __call__ that fails.
		"callable": typeTest(func(v any) bool {
			switch v.(type) {
			case *function, *macro, undefined:
				return true
			}
			return false
		}),
		// Undefined counts as iterable and as a sequence in jinja2: it
		// has __iter__, __len__ and __getitem__.
		"iterable": typeTest(func(v any) bool {
			switch v.(type) {
			case undefined, string, []any, tuple, *dict, *iterator:
				return true
			}
			return false
		}),
		"sequence": typeTest(func(v any) bool {
			switch v.(type) {
			case undefined, string, []any, tuple, *dict:
				return true
			}
			return false
		}),
		"lower": typeTest(func(v any) bool { return pyIsClass(pyStr(v), "islower") }),
		"upper": typeTest(func(v any) bool { return pyIsClass(pyStr(v), "isupper") }),
		"odd":   remainderTest(1),
		"even":  remainderTest(0),
		"divisibleby": func(v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, fmt.Errorf("divisibleby takes 1 argument (%d given)", len(args))
			}
			r, err := arith("%", v, args[0])
			if err != nil {
				return false, err
			}
			return pyEqual(r, int64(0)), nil
		},
		"sameas": func(v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, fmt.Errorf("sameas takes 1 argument (%d given)", len(args))
			}
			return sameAs(v, args[0]), nil
		},
		"in": func(v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, fmt.Errorf("in takes 1 argument (%d given)", len(args))
			}
			return contains(args[0], v)
		},
		"==":          eq,
		"eq":          eq,
		"equalto":     eq,
		"!=":          compareTest("!="),
		"ne":          compareTest("!="),
		"<":           compareTest("<"),
		"lt":          compareTest("<"),
		"lessthan":    compareTest("<"),
		"<=":          compareTest("<="),
		"le":          compareTest("<="),
		">":           compareTest(">"),
		"gt":          compareTest(">"),
		"greaterthan": compareTest(">"),
		">=":          compareTest(">="),
		"ge":          compareTest(">="),
	}
}

func typeTest(f func(any) bool) testFunc {
	return func(v any, args []any) (bool, error) {
		if len(args) > 0 {
			return false, fmt.Errorf("takes no arguments (%d given)", len(args))
		}
		return f(v), nil
	}
}

// remainderTest is jinja2's odd and even: value % 2 == want, with
// Python's % (so floats are odd or even only when whole).
func remainderTest(want int64) testFunc {
	return func(v any, args []any) (bool, error) {
		if len(args) > 0 {
			return false, fmt.Errorf("takes no arguments (%d given)", len(args))
		}
		r, err := arith("%", v, int64(2))
		if err != nil {
			return false, err
		}
		return pyEqual(r, want), nil
	}
}

func compareTest(op string) testFunc {
	return func(v any, args []any) (bool, error) {
		if len(args) != 1 {
			return false, fmt.Errorf("takes 1 argument (%d given)", len(args))
		}
		return compare(op, v, args[0])
	}
}

// sameAs is Python's "is": identity for containers, equality of value and
// type for the immutable scalars CPython interns (None, bools, small
// ints, strings as templates use them).
func sameAs(a, b any) bool {
	switch x := a.(type) {
	case nil, bool, int64, float64, string:
		return typeName(a) == typeName(b) && a == b
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && len(x) > 0 && &x[0] == &y[0]
	case tuple:
		y, ok := b.(tuple)
		return ok && len(x) == len(y) && len(x) > 0 && &x[0] == &y[0]
	case undefined:
		return false
	}
	return a == b
}
