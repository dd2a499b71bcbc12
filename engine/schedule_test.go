package engine

import (
	"math"
	"testing"
	"time"
)

func TestArrivalGapsMatchGamma(t *testing.T) {
	const n, rate = 200000, 50.0
	for _, b := range []float64{0.25, 1, 4} {
		s, err := ArrivalSchedule(n, rate, b, nil, NewGapSource(7))
		if err != nil {
			t.Fatal(err)
		}
		if last := s.OffsetsSec[n-1]; math.Abs(last-n/rate) > 1e-9 {
			t.Errorf("b=%v: last offset %v; want exactly n/rate = %v", b, last, n/rate)
		}
		var sum, sumSq float64
		prev := 0.0
		for _, o := range s.OffsetsSec {
			g := o - prev
			prev = o
			sum += g
			sumSq += g * g
		}
		mean := sum / n
		cv := math.Sqrt(sumSq/n-mean*mean) / mean
		if math.Abs(mean-1/rate) > 1e-9 {
			t.Errorf("b=%v: mean gap %v; want %v", b, mean, 1/rate)
		}
		if want := 1 / math.Sqrt(b); math.Abs(cv-want) > 0.02*want {
			t.Errorf("b=%v: gap CV %.4f; want 1/√b = %.4f", b, cv, want)
		}
	}
}

func TestGammaDrawsBeforeRescaling(t *testing.T) {
	g := NewGapSource(1)
	const n = 100000
	for _, c := range []struct{ shape, scale float64 }{{0.5, 2}, {1, 0.1}, {9, 1.0 / 3}} {
		var sum, sumSq float64
		for range n {
			x := g.Gamma(c.shape, c.scale)
			sum += x
			sumSq += x * x
		}
		mean, variance := sum/n, sumSq/n-(sum/n)*(sum/n)
		if want := c.shape * c.scale; math.Abs(mean-want) > 0.02*want {
			t.Errorf("Gamma(%v, %v) mean %v; want %v", c.shape, c.scale, mean, want)
		}
		if want := c.shape * c.scale * c.scale; math.Abs(variance-want) > 0.05*want {
			t.Errorf("Gamma(%v, %v) variance %v; want %v", c.shape, c.scale, variance, want)
		}
	}
}

func TestArrivalScheduleDeterministic(t *testing.T) {
	a, _ := ArrivalSchedule(100, 10, 1, nil, NewGapSource(42))
	b, _ := ArrivalSchedule(100, 10, 1, nil, NewGapSource(42))
	c, _ := ArrivalSchedule(100, 10, 1, nil, NewGapSource(43))
	for i := range a.OffsetsSec {
		if a.OffsetsSec[i] != b.OffsetsSec[i] {
			t.Fatalf("same seed, offset %d differs: %v vs %v", i, a.OffsetsSec[i], b.OffsetsSec[i])
		}
	}
	if a.OffsetsSec[0] == c.OffsetsSec[0] {
		t.Error("different seeds gave the same first offset")
	}
	if a.OffsetsSec[0] <= 0 {
		t.Errorf("first offset %v; Python's first request waits one gap", a.OffsetsSec[0])
	}
}

func TestArrivalScheduleSpecialRates(t *testing.T) {
	s, _ := ArrivalSchedule(5, math.Inf(1), 1, nil, NewGapSource(1))
	for i, o := range s.OffsetsSec {
		if o != 0 {
			t.Errorf("infinite rate: offset %d = %v; want 0", i, o)
		}
	}
	s, _ = ArrivalSchedule(4, 2, math.Inf(1), nil, NewGapSource(1))
	for i, o := range s.OffsetsSec {
		if want := float64(i+1) / 2; math.Abs(o-want) > 1e-12 {
			t.Errorf("infinite burstiness: offset %d = %v; want %v", i, o, want)
		}
	}
}

func TestRampUp(t *testing.T) {
	cases := []struct {
		ramp  RampUp
		n     int
		rates []float64
	}{
		{RampUp{"linear", 1, 5}, 5, []float64{1, 2, 3, 4, 5}},
		{RampUp{"exponential", 1, 16}, 5, []float64{1, 2, 4, 8, 16}},
		{RampUp{"linear", 3, 9}, 1, []float64{3}},
	}
	for _, c := range cases {
		s, err := ArrivalSchedule(c.n, 0, math.Inf(1), &c.ramp, NewGapSource(1))
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for i, want := range c.rates {
			sum += 1 / want
			if math.Abs(s.Rates[i]-want) > 1e-9 {
				t.Errorf("%s %d→%d: rate %d = %v; want %v", c.ramp.Strategy, c.ramp.StartRPS, c.ramp.EndRPS, i, s.Rates[i], want)
			}
			// Ramp-up offsets are not rescaled.
			if math.Abs(s.OffsetsSec[i]-sum) > 1e-9 {
				t.Errorf("%s: offset %d = %v; want %v", c.ramp.Strategy, i, s.OffsetsSec[i], sum)
			}
		}
	}
}

func TestRampUpEvents(t *testing.T) {
	at := time.Unix(1, 0)
	last := 1
	events := []RampUpEvent{{RPS: 1, At: at}}
	for _, r := range []float64{1.5, 2.2, 4.9, 4.95, 7} {
		events = rampUpEvents(events, &last, r, at)
	}
	var got []int
	for _, e := range events {
		got = append(got, e.RPS)
	}
	want := []int{1, 2, 3, 4, 5, 6, 7}
	if len(got) != len(want) {
		t.Fatalf("events %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v; want %v", got, want)
		}
	}
}
