package chattemplate

import (
	"errors"
	"fmt"
)

// maxRange is the sandbox's MAX_RANGE: ImmutableSandboxedEnvironment
// refuses range() calls that would produce more items.
const maxRange = 100000

// globals are the names every template sees besides its render
// variables: jinja2's default globals (range, dict, namespace) and the
// two functions transformers adds (raise_exception, strftime_now).
var globals map[string]any

func init() {
	globals = map[string]any{
		"range":           &function{name: "range", call: callRange},
		"dict":            &function{name: "dict", call: callDict},
		"namespace":       &function{name: "namespace", call: callNamespace},
		"raise_exception": &function{name: "raise_exception", call: callRaise},
		// The clock is read in callExpr, which knows the render's clock.
		"strftime_now": &function{name: "strftime_now", call: func([]any, []kwarg) (any, error) {
			return nil, errors.New("strftime_now() missing required argument 'format'")
		}},
	}
}

// RaisedError is the error a template raises through raise_exception(),
// carrying the template's own message.
type RaisedError struct{ Message string }

func (e *RaisedError) Error() string { return "raise_exception: " + e.Message }

func callRaise(args []any, kw []kwarg) (any, error) {
	a, err := bind("raise_exception", args, kw, []string{"message"}, required)
	if err != nil {
		return nil, err
	}
	return nil, &RaisedError{Message: pyStr(a[0])}
}

func callRange(args []any, kw []kwarg) (any, error) {
	if len(kw) > 0 {
		return nil, errors.New("range() takes no keyword arguments")
	}
	if len(args) == 0 || len(args) > 3 {
		return nil, fmt.Errorf("range expected 1 to 3 arguments, got %d", len(args))
	}
	ints := make([]int64, len(args))
	for i, a := range args {
		n, ok := intValue(a)
		if !ok {
			return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a))
		}
		ints[i] = n
	}
	start, stop, step := int64(0), ints[0], int64(1)
	if len(ints) > 1 {
		start, stop = ints[0], ints[1]
	}
	if len(ints) > 2 {
		step = ints[2]
	}
	if step == 0 {
		return nil, errors.New("range() arg 3 must not be zero")
	}
	var n int64
	switch {
	case step > 0 && stop > start:
		n = (stop - start + step - 1) / step
	case step < 0 && stop < start:
		n = (start - stop - step - 1) / -step
	}
	if n > maxRange {
		return nil, fmt.Errorf("range too big: the sandbox blocks ranges larger than %d", maxRange)
	}
	out := make([]any, n)
	for i := range out {
		out[i] = start + int64(i)*step
	}
	return out, nil
}

// mappingArgs builds a dict from dict(mapping_or_pairs, **kwargs)
// arguments, as dict() and namespace() take them.
func mappingArgs(fname string, args []any, kw []kwarg) (*dict, error) {
	if len(args) > 1 {
		return nil, fmt.Errorf("%s expected at most 1 argument, got %d", fname, len(args))
	}
	d := newDict(len(kw))
	if len(args) == 1 {
		switch src := args[0].(type) {
		case *dict:
			d.Update(src)
		default:
			pairs, err := iterate(src)
			if err != nil {
				return nil, err
			}
			for _, p := range pairs {
				kv, err := iterate(p)
				if err != nil || len(kv) != 2 || !hashable(kv[0]) {
					return nil, fmt.Errorf("%s: sequence elements must be (key, value) pairs", fname)
				}
				d.Set(dictKey(kv[0]), kv[1])
			}
		}
	}
	for _, k := range kw {
		d.Set(k.name, k.val)
	}
	return d, nil
}

func callDict(args []any, kw []kwarg) (any, error) {
	return mappingArgs("dict", args, kw)
}

func callNamespace(args []any, kw []kwarg) (any, error) {
	d, err := mappingArgs("namespace", args, kw)
	if err != nil {
		return nil, err
	}
	return &namespace{attrs: d}, nil
}
