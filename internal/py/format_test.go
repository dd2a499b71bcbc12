package py

import (
	"math"
	"testing"
)

// Expected strings are python3's output for the same format calls.

func TestFixed(t *testing.T) {
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
		if got := Fixed(tt.in, 2); got != tt.want {
			t.Errorf("Fixed(%v, 2) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAlign(t *testing.T) {
	tests := []struct{ got, want string }{
		// "{:-^50}".format(...), "{:<5}".format(...)
		{FormatCenter("Time to First Token", '-', 50), "---------------Time to First Token----------------"},
		{FormatCenter(" Serving Benchmark Result ", '=', 50), "============ Serving Benchmark Result ============"},
		{FormatCenter("x", '-', 2), "x-"},
		{FormatCenter("ab", '-', 5), "-ab--"},
		{FormatCenter("too long", '-', 4), "too long"},
		{Left("abc", 5), "abc  "},
		{Left("123456789012", 10), "123456789012"},
		{Left("é", 3), "é  "},
		// str.center: the odd pad goes left only when the width is odd too.
		{Center("x", 2), "x "},
		{Center("ab", 5), "  ab "},
		{Center("abc", 6), " abc  "},
		{Center("é", 4), " é  "},
		{Center("é", 3), " é "},
		{Center("long", 2), "long"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
