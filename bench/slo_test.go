package bench

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/report"
)

// The mock holds 32 streams at once and a 16-token request 170 ms, so
// past 32 concurrent requests some wait a whole request for a slot and
// miss a 100 ms TTFT: the capacity under ttft:100 is 32.
func TestSLOFindsMockCapacity(t *testing.T) {
	// 25 ms per token holds a slot for 395 ms, so a request that waits for
	// one has a TTFT of 415 ms or more; a stall of the loaded machine would
	// have to add 180 ms to an unqueued request's 20 ms to cross the SLO.
	capacity := knownCapacity
	capacity.ITL = 25 * time.Millisecond
	// A stall longer than that (a machine shared with other work) fails
	// a load below capacity and ends the search low; a search that is
	// wrong is wrong every time, so a low answer is searched again, up to
	// three times in all.
	args := append(startMock(t, capacity), "--random-output-len", "16", "--num-prompts", "100", "--goodput", "ttft:200")
	var out, errOut bytes.Buffer
	var res *SLOResult
	for attempt := 1; ; attempt++ {
		out.Reset()
		errOut.Reset()
		var err error
		res, err = SearchSLO(context.Background(), SLOOptions{Args: args, Over: SLOOverConcurrency, Attainment: 0.99, Start: 8}, &out, &errOut)
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut.String())
		}
		if res.Answer != nil && math.Abs(res.Answer.Load-32)/32 <= 0.05 {
			break
		}
		if res.Answer != nil && res.Answer.Load < 32 && attempt < 3 {
			t.Logf("attempt %d: answer %v below capacity (a stall?):\n%s", attempt, res.Answer.Load, out.String())
			continue
		}
		t.Fatalf("answer %+v, want 32 within 5%%\n%s", res.Answer, out.String())
	}
	if res.Answer.Attainment < 0.99 || res.FailedAt <= res.Answer.Load {
		t.Errorf("answer %+v failed at %v", res.Answer, res.FailedAt)
	}
	if (res.FailedAt-res.Answer.Load)/res.FailedAt > 0.05 && res.FailedAt-res.Answer.Load > 1 {
		t.Errorf("bracket [%v, %v] not narrowed", res.Answer.Load, res.FailedAt)
	}
	if n := strings.Count(out.String(), "probe "); n != len(res.Probes) || n < 3 {
		t.Errorf("%d probe lines for %d probes:\n%s", n, len(res.Probes), out.String())
	}
	if !strings.Contains(out.String(), "Highest max-concurrency meeting the SLOs:  32") && res.Answer.Load == 32 {
		t.Errorf("answer not printed:\n%s", out.String())
	}
}

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
	var usage *cli.UsageError
	if !errors.As(err, &usage) || !strings.Contains(usage.Msg, "--goodput") {
		t.Errorf("err = %v", err)
	}
	_, err = SearchSLO(context.Background(), SLOOptions{Over: "num-prompts", Attainment: 0.99}, &bytes.Buffer{}, &bytes.Buffer{})
	if !errors.As(err, &usage) || !strings.Contains(usage.Msg, "--slo-over") {
		t.Errorf("err = %v", err)
	}
}
