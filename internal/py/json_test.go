package py

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// Expected strings are python3's json.dumps output for the same values.

func TestDumps(t *testing.T) {
	d := NewObject()
	d.Set("a", "q\"\\ \n\r\t\b\f\x00\x1f\x7f é € 😀")
	d.Set("b", []float64{1, 1e-05, math.Inf(1), math.Inf(-1), math.NaN()})
	d.Set("c", [][]float64{{0.1}, {}})
	inner := NewObject()
	inner.Set("x", 1)
	d.Set("d", inner)
	d.Set("e", nil)
	d.Set("f", []string{"ok", "bad \xff"})
	d.Set("g", true)
	d.Set("h", int64(-7))
	d.Set("i", []int{1, -2})
	d.Set("j", []*Object{inner, NewObject()})
	d.Set("k", RawJSON(`{"r": 1.0}`))
	d.Set("a", "replaced in place")
	got, err := Dumps(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a": "replaced in place", "b": [1.0, 1e-05, Infinity, -Infinity, NaN], "c": [[0.1], []], ` +
		`"d": {"x": 1}, "e": null, "f": ["ok", "bad \ufffd"], "g": true, "h": -7, "i": [1, -2], ` +
		`"j": [{"x": 1}, {}], "k": {"r": 1.0}}`
	if string(got) != want {
		t.Errorf("Dumps =\n%s\nwant\n%s", got, want)
	}

	s := NewObject()
	s.Set("a", "q\"\\ \n\r\t\b\f\x00\x1f\x7f é € 😀")
	got, _ = Dumps(s)
	// json.dumps({'a': 'q"\\ \n\r\t\b\f\x00\x1f\x7f é € 😀'})
	if want := `{"a": "q\"\\ \n\r\t\b\f\u0000\u001f\u007f \u00e9 \u20ac \ud83d\ude00"}`; string(got) != want {
		t.Errorf("string escaping =\n%s\nwant\n%s", got, want)
	}

	if _, err := Dumps(map[string]int{}); err == nil {
		t.Error("unsupported type accepted")
	}
}

func TestDumpsOptions(t *testing.T) {
	d := NewDict[any, any](0)
	d.Set("b", "é\x7f😀")
	d.Set(int64(2), []any{})
	d.Set(1.5, NewObject())
	d.Set(nil, []any{int64(1), "x"})
	d.Set(true, false)
	tests := []struct {
		name string
		o    JSONOptions
		want string
	}{
		// json.dumps(d, ensure_ascii=False)
		{"ascii off", JSONOptions{ItemSep: ", ", KeySep: ": "},
			`{"b": "é` + "\x7f" + `😀", "2": [], "1.5": {}, "null": [1, "x"], "true": false}`},
		// json.dumps(d, indent="\t", ensure_ascii=False)
		{"tab indent", JSONOptions{Pretty: true, Indent: "\t", ItemSep: ",", KeySep: ": "},
			"{\n\t\"b\": \"é\x7f😀\",\n\t\"2\": [],\n\t\"1.5\": {},\n\t\"null\": [\n\t\t1,\n\t\t\"x\"\n\t],\n\t\"true\": false\n}"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := AppendJSON(&b, d, &tt.o); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if b.String() != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, b.String(), tt.want)
		}
	}

	// json.dumps(s, indent=2, sort_keys=True, separators=(",", ":"))
	s := NewObject()
	s.Set("b", "é\x7f😀")
	s.Set("c", []any{})
	s.Set("a", NewObject())
	s.Set("d", []any{int64(1), "x"})
	o := JSONOptions{EnsureASCII: true, Pretty: true, Indent: "  ", ItemSep: ",", KeySep: ":", SortKeys: true}
	var b bytes.Buffer
	if err := AppendJSON(&b, s, &o); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\":{},\n  \"b\":\"\\u00e9\\u007f\\ud83d\\ude00\",\n  \"c\":[],\n  \"d\":[\n    1,\n    \"x\"\n  ]\n}"
	if b.String() != want {
		t.Errorf("sorted:\n got %q\nwant %q", b.String(), want)
	}
}

type pair [2]any

func TestDumpsHooks(t *testing.T) {
	o := DefaultJSON
	o.Default = func(v any) (any, error) {
		if p, ok := v.(pair); ok {
			return []any{p[0], p[1]}, nil
		}
		return nil, fmt.Errorf("object of type %T is not JSON serializable", v)
	}
	o.TypeName = func(any) string { return "tuple" }
	o.Float = func(dst []byte, f float64) []byte {
		if math.IsInf(f, 0) {
			return append(dst, `"inf"`...)
		}
		return AppendJSONFloat(dst, f)
	}
	var b bytes.Buffer
	if err := AppendJSON(&b, []any{pair{1.5, math.Inf(-1)}}, &o); err != nil {
		t.Fatal(err)
	}
	if want := `[[1.5, "inf"]]`; b.String() != want {
		t.Errorf("got %s, want %s", b.String(), want)
	}

	d := NewDict[any, any](1)
	d.Set(pair{1, 2}, 0)
	b.Reset()
	err := AppendJSON(&b, d, &o)
	if err == nil || err.Error() != "keys must be str, int, float, bool or None, not tuple" {
		t.Errorf("tuple key: %v", err)
	}
	wantErr := errors.New("no")
	o.Default = func(any) (any, error) { return nil, wantErr }
	if err := AppendJSON(&b, struct{}{}, &o); err != wantErr {
		t.Errorf("Default's error: %v", err)
	}
}

func TestDumpsMaxDepth(t *testing.T) {
	var v any = "leaf"
	for range 5 {
		v = []any{v}
	}
	o := DefaultJSON
	o.MaxDepth = 5
	var b bytes.Buffer
	if err := AppendJSON(&b, v, &o); err != nil {
		t.Errorf("5 levels: %v", err)
	}
	o.MaxDepth = 4
	b.Reset()
	if err := AppendJSON(&b, v, &o); err == nil || !strings.Contains(err.Error(), "deeper than 4") {
		t.Errorf("5 levels with MaxDepth 4: %v", err)
	}
}

func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"\\\n\x00\x7f", "é€😀", "bad \xff\xfe", "\u2028\ufeff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Each invalid byte becomes one U+FFFD, as ranging over s yields.
		var want strings.Builder
		for _, r := range s {
			want.WriteRune(r)
		}
		for _, ascii := range []bool{true, false} {
			var b bytes.Buffer
			AppendJSONString(&b, s, ascii)
			out := b.Bytes()
			for _, c := range out {
				if c < ' ' || ascii && c > '~' {
					t.Fatalf("ensure_ascii=%v: byte %#x in %q", ascii, c, out)
				}
			}
			var back string
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatalf("encoding of %q is not JSON: %q: %v", s, out, err)
			}
			if back != want.String() {
				t.Fatalf("round trip %q → %q → %q", s, out, back)
			}
		}
	})
}

func BenchmarkDumpsDetailedResult(b *testing.B) {
	// 1,000 requests × 100 gaps: the per-request lists dominate a detailed result.
	itls := make([][]float64, 1000)
	for i := range itls {
		itls[i] = make([]float64, 100)
		for j := range itls[i] {
			itls[i][j] = float64(20_000_000+(i*31+j*17)%5_000_000) / 1e9
		}
	}
	d := NewObject()
	d.Set("itls", itls)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Dumps(d); err != nil {
			b.Fatal(err)
		}
	}
}
