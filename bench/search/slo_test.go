package search

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/internal/py"
)

// fakeServer answers probes from a formula: every request meets the SLOs
// up to limit, half of them above; throughput grows with the load up to
// capacity, and latency beyond it.
func fakeSearch(o SLOOptions, limit, capacity float64) *sloSearch {
	s := &sloSearch{o: o, stdout: &bytes.Buffer{}, res: &SLOResult{}}
	s.measure = func(_ context.Context, load float64) (*report.PointMetrics, string, error) {
		att := 1.0
		if load > limit {
			att = 0.5
		}
		m := &report.PointMetrics{RequestThroughput: math.Min(load, capacity), E2ELP50: 100 * math.Max(1, load/capacity), Attainment: &att}
		return m, "", nil
	}
	return s
}

func TestSLOSearchBracketsAndBisects(t *testing.T) {
	for _, c := range []struct {
		over         string
		start, limit float64
	}{
		{SLOOverRate, 1, 137.5},
		{SLOOverRate, 1000, 3.3}, // the first probe fails: halve down
		{SLOOverConcurrency, 1, 45},
		{SLOOverConcurrency, 64, 7},
	} {
		s := fakeSearch(SLOOptions{Over: c.over, Start: c.start, Attainment: 0.99, Tolerance: 0.05}, c.limit, math.Inf(1))
		if err := s.search(context.Background()); err != nil {
			t.Fatal(err)
		}
		a := s.res.Answer
		if a == nil || a.Load > c.limit || (c.limit-a.Load)/c.limit > 0.05+1e-9 && c.limit-a.Load >= 1 {
			t.Errorf("%s from %v, limit %v: answer %+v", c.over, c.start, c.limit, a)
		}
		for i := 1; i < len(s.res.Probes); i++ {
			if s.res.Probes[i].Load == s.res.Probes[i-1].Load {
				t.Errorf("%s: probed %v twice", c.over, s.res.Probes[i].Load)
			}
		}
	}
}

func TestSLOSearchStopsOnSaturation(t *testing.T) {
	s := fakeSearch(SLOOptions{Over: SLOOverRate, Start: 10, Attainment: 0.99, Tolerance: 0.05}, math.Inf(1), 50)
	if err := s.search(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !s.res.Saturated || s.res.Answer == nil || s.res.Answer.Load != 160 {
		t.Errorf("saturated %v answer %+v, want saturation seen at 160 (throughput 50 at 80 and 160)", s.res.Saturated, s.res.Answer)
	}
}

func TestSLONothingPasses(t *testing.T) {
	s := fakeSearch(SLOOptions{Over: SLOOverConcurrency, Start: 4, Attainment: 0.99, Tolerance: 0.05}, 0, 10)
	if err := s.search(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.res.Answer != nil || len(s.res.Probes) != 3 {
		t.Errorf("answer %+v after %d probes, want none after 4, 2, 1", s.res.Answer, len(s.res.Probes))
	}
}

func TestSLONeedsGoodput(t *testing.T) {
	_, err := SearchSLO(context.Background(), SLOOptions{Args: []string{"--model", "m"}, Over: SLOOverConcurrency, Attainment: 0.99}, &bytes.Buffer{}, &bytes.Buffer{})
	var usage *py.UsageError
	if !errors.As(err, &usage) || !strings.Contains(usage.Msg, "--goodput") {
		t.Errorf("err = %v", err)
	}
	_, err = SearchSLO(context.Background(), SLOOptions{Over: "num-prompts", Attainment: 0.99}, &bytes.Buffer{}, &bytes.Buffer{})
	if !errors.As(err, &usage) || !strings.Contains(usage.Msg, "--slo-over") {
		t.Errorf("err = %v", err)
	}
}
