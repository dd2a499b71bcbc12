package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// Expected strings are python3's output for the same format calls.

func TestPyFixed2(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{2.675, "2.67"}, // the binary value is 2.67499999...
		{0.125, "0.12"}, // exact tie: half to even
		{0.375, "0.38"},
		{1.005, "1.00"},
		{0.005, "0.01"},
		{0.015, "0.01"},
		{0.025, "0.03"},
		{12345.675, "12345.67"},
		{math.Copysign(0, -1), "-0.00"},
		{-0.001, "-0.00"},
		{1e20, "100000000000000000000.00"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
		{math.NaN(), "nan"},
	}
	for _, tt := range tests {
		if got := pyFixed2(tt.in); got != tt.want {
			t.Errorf("pyFixed2(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPyAlign(t *testing.T) {
	tests := []struct{ got, want string }{
		{pyCenter("Time to First Token", '-', 50), "---------------Time to First Token----------------"},
		{pyCenter(" Serving Benchmark Result ", '=', 50), "============ Serving Benchmark Result ============"},
		{pyCenter("x", '-', 2), "x-"},
		{pyCenter("too long", '-', 4), "too long"},
		{pyLeft("abc", 5), "abc  "},
		{pyLeft("123456789012", 10), "123456789012"},
		{pyLeft("é", 3), "é  "},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestPyPercentileWord(t *testing.T) {
	tests := []struct {
		p    float64
		want string
	}{
		{99, "99"}, {99.9, "99.9"}, {12.5, "12.5"}, {50, "50"}, {0, "0"},
		{math.Copysign(0, -1), "0"}, {100, "100"}, {1e-05, "1e-05"}, {0.1, "0.1"},
	}
	for _, tt := range tests {
		if got := pyPercentileWord(tt.p); got != tt.want {
			t.Errorf("pyPercentileWord(%v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}

func TestPyJSON(t *testing.T) {
	d := newPyDict()
	d.set("a", "q\"\\ \n\r\t\b\f\x00\x1f\x7f é € 😀")
	d.set("b", []float64{1, 1e-05, math.Inf(1), math.Inf(-1), math.NaN()})
	d.set("c", [][]float64{{0.1}, {}})
	inner := newPyDict()
	inner.set("x", 1)
	d.set("d", inner)
	d.set("e", nil)
	d.set("f", []string{"ok", "bad \xff"})
	d.set("g", true)
	d.set("h", int64(-7))
	d.set("a", "replaced in place")
	got, err := pyJSON(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a": "replaced in place", "b": [1.0, 1e-05, Infinity, -Infinity, NaN], "c": [[0.1], []], ` +
		`"d": {"x": 1}, "e": null, "f": ["ok", "bad \ufffd"], "g": true, "h": -7}`
	if string(got) != want {
		t.Errorf("pyJSON =\n%s\nwant\n%s", got, want)
	}

	s := newPyDict()
	s.set("a", "q\"\\ \n\r\t\b\f\x00\x1f\x7f é € 😀")
	got, _ = pyJSON(s)
	// python3: json.dumps({'a': 'q"\\ \n\r\t\b\f\x00\x1f\x7f é € 😀'})
	if want := `{"a": "q\"\\ \n\r\t\b\f\u0000\u001f\u007f \u00e9 \u20ac \ud83d\ude00"}`; string(got) != want {
		t.Errorf("string escaping =\n%s\nwant\n%s", got, want)
	}

	if _, err := pyJSON(map[string]int{}); err == nil {
		t.Error("unsupported type accepted")
	}
}

func TestPyDictOrder(t *testing.T) {
	a := newPyDict()
	a.set("x", 1)
	a.set("y", 2)
	a.set("z", 3)
	b := newPyDict()
	b.set("w", 0)
	b.set("y", 20)
	a.update(b) // {**a, **b}: y keeps its place, w goes last
	a.del("x")
	a.del("missing")
	got, _ := pyJSON(a)
	if want := `{"y": 20, "z": 3, "w": 0}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func FuzzPyJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"\\\n\x00\x7f", "é€😀", "bad \xff\xfe", "\u2028\ufeff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b bytes.Buffer
		appendPyJSONString(&b, s)
		out := b.Bytes()
		for _, c := range out {
			if c < ' ' || c > '~' {
				t.Fatalf("non-printable-ASCII byte %#x in %q", c, out)
			}
		}
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("encoding of %q is not JSON: %q: %v", s, out, err)
		}
		// Each invalid byte becomes one U+FFFD, as ranging over s yields.
		var want strings.Builder
		for _, r := range s {
			want.WriteRune(r)
		}
		if back != want.String() {
			t.Fatalf("round trip %q → %q → %q", s, out, back)
		}
	})
}

func BenchmarkPyJSONDetailedResult(b *testing.B) {
	// 1,000 requests × 100 gaps: the per-request lists dominate a detailed result.
	itls := make([][]float64, 1000)
	for i := range itls {
		itls[i] = make([]float64, 100)
		for j := range itls[i] {
			itls[i][j] = float64(20_000_000+(i*31+j*17)%5_000_000) / 1e9
		}
	}
	d := newPyDict()
	d.set("itls", itls)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pyJSON(d); err != nil {
			b.Fatal(err)
		}
	}
}
