package py

import (
	"math"
	"testing"
)

// Expected strings are python3's repr() / float() results.

func TestFloatRepr(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{1, "1.0"},
		{10, "10.0"},
		{0.5, "0.5"},
		{1e-4, "0.0001"},
		{1e-5, "1e-05"},
		{1.5e-5, "1.5e-05"},
		{1e16, "1e+16"},
		{1e15, "1000000000000000.0"},
		{9999999999999998, "9999999999999998.0"},
		{123456789012345678, "1.2345678901234568e+17"},
		{1.2345e-7, "1.2345e-07"},
		{0.1, "0.1"},
		{1.0 / 3, "0.3333333333333333"},
		{2.675, "2.675"},
		{1e300, "1e+300"},
		{-1e-300, "-1e-300"},
		{5e-324, "5e-324"},
		{52.34171, "52.34171"},
		{1e22, "1e+22"},
		{12345.678, "12345.678"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
		{math.NaN(), "nan"},
	}
	for _, tt := range tests {
		if got := FloatRepr(tt.in); got != tt.want {
			t.Errorf("FloatRepr(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseFloat(t *testing.T) {
	tests := []struct {
		in   string
		want float64 // NaN means "want NaN"
		ok   bool
	}{
		{"5", 5, true},
		{"  5 ", 5, true},
		{"\t-2.5\n", -2.5, true},
		{"1_000", 1000, true},
		{"1__0", 0, false},
		{"_1", 0, false},
		{"1_", 0, false},
		{"inf", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true},
		{"nan", math.NaN(), true},
		{"+nan", math.NaN(), true},
		{"1e400", math.Inf(1), true},
		{"-1e400", math.Inf(-1), true},
		{"1e-400", 0, true},
		{".5", 0.5, true},
		{"5.", 5, true},
		{"0x10", 0, false},
		{"1e", 0, false},
		{"e5", 0, false},
		{"++1", 0, false},
		{"", 0, false},
		{"1.5e+3_0", 1.5e30, true},
		{"1_0.2_5e1_0", 102500000000, true},
		{"\x1c7\x1f", 0, false},
		{"infinit", 0, false},
		{"1,5", 0, false},
		{"1.2.3", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseFloat(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("ParseFloat(%q) error = %v, want ok=%v", tt.in, err, tt.ok)
			continue
		}
		if !tt.ok {
			continue
		}
		if math.IsNaN(tt.want) {
			if !math.IsNaN(got) {
				t.Errorf("ParseFloat(%q) = %v, want NaN", tt.in, got)
			}
		} else if got != tt.want {
			t.Errorf("ParseFloat(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzFloatRoundTrip(f *testing.F) {
	for _, seed := range []float64{0, 1, 0.1, 1e-5, 1e16, 123.456, 5e-324, math.MaxFloat64} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		s := FloatRepr(v)
		back, err := ParseFloat(s)
		if err != nil {
			t.Fatalf("ParseFloat(FloatRepr(%v) = %q): %v", v, s, err)
		}
		if back != v && !(math.IsNaN(v) && math.IsNaN(back)) {
			t.Fatalf("round trip %v → %q → %v", v, s, back)
		}
	})
}
