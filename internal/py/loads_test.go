package py

import (
	"bytes"
	"testing"
)

// Each case is what CPython prints for repr(json.loads(src)) and
// str(json.loads(src)).
func TestLoadsReprAndStr(t *testing.T) {
	tests := []struct{ src, repr, str string }{
		{`null`, `None`, `None`},
		{`true`, `True`, `True`},
		{` false `, `False`, `False`},
		{`12345678901234567890123`, `12345678901234567890123`, `12345678901234567890123`},
		{`-0`, `0`, `0`},
		{`1e5`, `100000.0`, `100000.0`},
		{`1.5E-7`, `1.5e-07`, `1.5e-07`},
		{`-0.0`, `-0.0`, `-0.0`},
		{`1e400`, `inf`, `inf`},
		{`NaN`, `nan`, `nan`},
		{`-Infinity`, `-inf`, `-inf`},
		{`"it's"`, `"it's"`, `it's`},
		{`"a\u00e9\n"`, `'aé\n'`, "aé\n"},
		{`[1, "x", [], {}]`, `[1, 'x', [], {}]`, `[1, 'x', [], {}]`},
		// A repeated key keeps its first place and takes the last value.
		{`{"b": 1, "a": [0.5], "b": {"c": null}}`, `{'b': {'c': None}, 'a': [0.5]}`, `{'b': {'c': None}, 'a': [0.5]}`},
	}
	for _, tt := range tests {
		n, err := Loads(tt.src)
		if err != nil {
			t.Errorf("Loads(%s): %v", tt.src, err)
			continue
		}
		if got := n.Repr(); got != tt.repr {
			t.Errorf("repr(json.loads(%s)) = %s, want %s", tt.src, got, tt.repr)
		}
		if got := n.PyStr(); got != tt.str {
			t.Errorf("str(json.loads(%s)) = %q, want %q", tt.src, got, tt.str)
		}
	}
	for _, bad := range []string{``, `{`, `[1,]`, `{'a': 1}`, `01`, `"\x01"`, `1 2`, `nul`} {
		if _, err := Loads(bad); err == nil {
			t.Errorf("Loads(%q) accepted what json.loads rejects", bad)
		}
	}
}

// FuzzLoads: whatever Loads accepts, it reads back the same from its own
// json.dumps form, and never panics on what it rejects.
func FuzzLoads(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5, "x"], "a": null}`, `NaN`, `"\ud83d\ude00"`, `[[[]]]`, `1e-400`, `{"k": {"k": true}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Loads(s)
		if err != nil {
			return
		}
		var once bytes.Buffer
		n.EncodePy(&once)
		m, err := Loads(once.String())
		if err != nil {
			t.Fatalf("Loads(%q) accepted, its dumps %q rejected: %v", s, once.String(), err)
		}
		var twice bytes.Buffer
		m.EncodePy(&twice)
		if once.String() != twice.String() || n.Repr() != m.Repr() {
			t.Fatalf("%q: dumps %q then %q; repr %q then %q", s, once.String(), twice.String(), n.Repr(), m.Repr())
		}
	})
}
