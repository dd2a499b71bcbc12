package pyout

import (
	"math"
	"testing"
)

func TestPyPercentileWord(t *testing.T) {
	tests := []struct {
		p    float64
		want string
	}{
		{99, "99"}, {99.9, "99.9"}, {12.5, "12.5"}, {50, "50"}, {0, "0"},
		{math.Copysign(0, -1), "0"}, {100, "100"}, {1e-05, "1e-05"}, {0.1, "0.1"},
	}
	for _, tt := range tests {
		if got := PercentileWord(tt.p); got != tt.want {
			t.Errorf("PercentileWord(%v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}
