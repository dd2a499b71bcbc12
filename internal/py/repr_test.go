package py

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestRepr(t *testing.T) {
	inner := NewDict[any, any](1)
	inner.Set("k", Tuple{"é\x00"})
	d := NewDict[any, any](0)
	d.Set("a", []any{1, 2.5, nil, true, Tuple{int64(1)}, Tuple{"x", "y"}})
	d.Set(int64(3), inner)
	d.Set(1e-05, []any{})
	d.Set("q'", math.Inf(1))
	d.Set("t", Tuple{})
	// python3: repr({"a": [1, 2.5, None, True, (1,), ("x", "y")], 3: {"k": ("é\x00",)},
	//                1e-05: [], "q'": float("inf"), "t": ()})
	want := `{'a': [1, 2.5, None, True, (1,), ('x', 'y')], 3: {'k': ('é\x00',)}, 1e-05: [], "q'": inf, 't': ()}`
	if got := Repr(d); got != want {
		t.Errorf("Repr =\n%s\nwant\n%s", got, want)
	}
	if got, want := Repr([]string{"a", "b'"}), `['a', "b'"]`; got != want {
		t.Errorf("Repr([]string) = %s, want %s", got, want)
	}
}

type object struct{ name string }

func TestReprOther(t *testing.T) {
	other := func(b *strings.Builder, v any) {
		fmt.Fprintf(b, "<%s>", v.(object).name)
	}
	var b strings.Builder
	AppendRepr(&b, []any{object{"a"}, Tuple{object{"b"}}}, other)
	if want := "[<a>, (<b>,)]"; b.String() != want {
		t.Errorf("got %s, want %s", b.String(), want)
	}
}

func TestTruthy(t *testing.T) {
	empty := NewObject()
	full := NewObject()
	full.Set("x", nil)
	for _, v := range []any{nil, false, 0, int64(0), 0.0, "", []any{}, []string{}, Tuple{}, empty} {
		if Truthy(v) {
			t.Errorf("Truthy(%#v) = true", v)
		}
	}
	for _, v := range []any{true, 1, int64(-1), math.NaN(), "0", []any{nil}, []string{""}, Tuple{nil}, full, object{}} {
		if !Truthy(v) {
			t.Errorf("Truthy(%#v) = false", v)
		}
	}
}
