package search

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/plan"
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

// A concurrency search never probes past --num-prompts, where every
// request is in flight at once, and says why its answer is the cap when
// every probe passed (the mock's 200 prompts were probed up to 524,288).
func TestSLOCapsConcurrencyAtNumPrompts(t *testing.T) {
	s := fakeSearch(SLOOptions{Over: SLOOverConcurrency, Start: 8, Attainment: 0.99, Tolerance: 0.05, Max: 1 << 22},
		math.Inf(1), math.Inf(1))
	s.base = &plan.Plan{}
	s.base.NumPrompts = 200
	if err := s.search(context.Background()); err != nil {
		t.Fatal(err)
	}
	var loads []float64
	for _, p := range s.res.Probes {
		loads = append(loads, p.Load)
	}
	if !slices.Equal(loads, []float64{8, 16, 32, 64, 128, 200}) {
		t.Fatalf("probed %v; want doubling from 8, capped at the 200 prompts", loads)
	}
	if s.res.Answer == nil || s.res.Answer.Load != 200 || s.res.Stop != StopNumPrompts || s.res.Cap != 200 {
		t.Errorf("answer %+v, stop %q, cap %v; want 200, stopped by num_prompts", s.res.Answer, s.res.Stop, s.res.Cap)
	}
	s.writeAnswer()
	out := s.stdout.(*bytes.Buffer).String()
	if !strings.Contains(out, "Every probe met the SLOs: at max-concurrency 200 = --num-prompts") {
		t.Errorf("the answer does not say every probe passed up to the cap:\n%s", out)
	}
}

// A load is written as the flag takes it: an integer concurrency has no
// exponent, which --max-concurrency refused ("1.048576e+06").
func TestSLOLoadTextParses(t *testing.T) {
	for _, c := range []struct {
		load float64
		want string
	}{{1 << 20, "1048576"}, {524288, "524288"}, {0.5, "0.5"}, {1e7, "10000000"}, {2.5e-3, "0.0025"}} {
		if got := loadText(c.load); got != c.want {
			t.Errorf("loadText(%v) = %q, want %q", c.load, got, c.want)
		}
	}
	if _, err := cli.Parse([]string{"--model", "m", "--max-concurrency", loadText(1 << 20)}, backend.Choices()); err != nil {
		t.Errorf("a doubled concurrency does not parse: %v", err)
	}
}

// A rate search stops when more rate no longer reaches the server
// (throughput and latency flat: every request already in flight) and
// explains that every probe passed; before, it doubled to --slo-max.
func TestSLOStopsWhenTheLoadStopsGrowing(t *testing.T) {
	s := fakeSearch(SLOOptions{Over: SLOOverRate, Start: 8, Attainment: 0.99, Tolerance: 0.05, Max: 1 << 20}, math.Inf(1), 50)
	measure := s.measure
	s.measure = func(ctx context.Context, load float64) (*report.PointMetrics, string, error) {
		m, file, err := measure(ctx, load)
		m.E2ELP50 = 100 // latency holds: the offered load stopped growing
		return m, file, err
	}
	if err := s.search(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(s.res.Probes); n != 5 || s.res.Stop != StopLoadFlat || s.res.Saturated || s.res.Answer.Load != 128 {
		t.Fatalf("%d probes, stop %q, saturated %v, answer %+v; want 8…128, stopped as the load stopped growing",
			n, s.res.Stop, s.res.Saturated, s.res.Answer)
	}
	s.writeAnswer()
	if out := s.stdout.(*bytes.Buffer).String(); !strings.Contains(out, "Every probe met the SLOs: past request-rate=128") {
		t.Errorf("no explanation:\n%s", out)
	}
}
