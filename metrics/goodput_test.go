package metrics

import (
	"maps"
	"testing"
)

func TestParseGoodput(t *testing.T) {
	const formatErr = "Invalid format found for service level objectives. " +
		`Specify service level objectives for goodput as "KEY:VALUE" ` +
		"pairs, where the key is a metric name, and the value is a " +
		"number in milliseconds."
	tests := []struct {
		pairs   []string
		want    map[string]float64
		wantErr string
	}{
		{pairs: []string{"ttft:100", "tpot:25.5", "e2el:1_000"},
			want: map[string]float64{"ttft": 100, "tpot": 25.5, "e2el": 1000}},
		{pairs: []string{"ttft:100", "ttft:50"}, want: map[string]float64{"ttft": 50}},
		{pairs: []string{"ttft: 7 "}, want: map[string]float64{"ttft": 7}},
		{pairs: nil, want: map[string]float64{}},
		{pairs: []string{"ttft"}, wantErr: formatErr},
		{pairs: []string{"ttft:1:2"}, wantErr: formatErr},
		{pairs: []string{"ttft:fast"}, wantErr: formatErr},
		// Every pair is parsed before any name is checked.
		{pairs: []string{"ttfx:5", "tpot"}, wantErr: formatErr},
		{pairs: []string{"ttfx:5"}, wantErr: "Invalid metric name found, ttfx: 5.0. " +
			"The service level objective name should be one of ['ttft', 'tpot', 'e2el']. "},
		{pairs: []string{"ttft:-1", "bad:1"}, wantErr: "Invalid value found, ttft: -1.0. " +
			"The service level objective value should be non-negative."},
		{pairs: []string{"e2el:1e-05", "x:-2"}, wantErr: "Invalid metric name found, x: -2.0. " +
			"The service level objective name should be one of ['ttft', 'tpot', 'e2el']. "},
	}
	for _, tt := range tests {
		got, err := ParseGoodput(tt.pairs)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseGoodput(%q) error = %v, want %q", tt.pairs, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tt.want) {
			t.Errorf("ParseGoodput(%q) = %v, %v; want %v", tt.pairs, got, err, tt.want)
		}
	}
}

func TestParsePercentiles(t *testing.T) {
	got, err := ParsePercentiles("50, 90,99.9,12.5,100,0")
	want := []float64{50, 90, 99.9, 12.5, 100, 0}
	if err != nil || len(got) != len(want) {
		t.Fatalf("ParsePercentiles = %v, %v; want %v", got, err, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("percentile %d = %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "99,", "x", "101", "-0.5", "nan"} {
		if _, err := ParsePercentiles(bad); err == nil {
			t.Errorf("ParsePercentiles(%q) accepted", bad)
		}
	}
}

func TestGoodCountUsesAllTPOTs(t *testing.T) {
	// A single-token request has TPOT 0 for goodput and always meets a TPOT SLO.
	g := newGoodput(map[string]float64{"tpot": 10})
	for _, tpot := range []float64{0, 0.011, 0.010} {
		g.add(1, tpot, 1)
	}
	if got := g.count(); got != 2 {
		t.Errorf("good = %d, want 2 (0 s and 0.010 s meet 10 ms; 0.011 s does not)", got)
	}
}
