package datasets

import (
	"testing"

	"github.com/stampede-bench/stampede/datasets/hfhub"
	"github.com/stampede-bench/stampede/internal/py"
)

// rowFields keeps the first error and reads nothing after it, so a class
// fails at the first wrong column, as its Python does.
func TestRowFieldsFirstError(t *testing.T) {
	row := &hfhub.Object{Keys: []string{"n", "s"}, Fields: map[string]any{"n": int64(1), "s": "x"}}
	f := rowFields{row: row}
	if s, v := f.str("s"), f.get("n"); s != "x" || v != int64(1) || f.err != nil {
		t.Fatalf("got %q, %v, %v", s, v, f.err)
	}
	if s := f.str("n"); s != "" || f.err == nil || f.err.Error() != `column "n" holds int, want a str` {
		t.Fatalf("str of an int: %q, %v", s, f.err)
	}
	if pe, ok := f.err.(*py.Error); !ok || pe.Type != "TypeError" {
		t.Fatalf("str of an int: %#v, want a TypeError", f.err)
	}
	first := f.err
	if v, s := f.get("missing"), f.str("s"); v != nil || s != "" || f.err != first {
		t.Fatalf("after an error: %v, %q, %v", v, s, f.err)
	}
	g := rowFields{row: row}
	if g.get("missing"); g.err == nil || g.err.Error() != "'missing'" {
		t.Fatalf("missing column: %v", g.err)
	}
	if pe, ok := g.err.(*py.Error); !ok || pe.Type != "KeyError" {
		t.Fatalf("missing column: %#v, want a KeyError", g.err)
	}
}
