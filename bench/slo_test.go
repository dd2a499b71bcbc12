package bench

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/search"
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
	var res *search.SLOResult
	for attempt := 1; ; attempt++ {
		out.Reset()
		errOut.Reset()
		var err error
		res, err = search.SearchSLO(context.Background(), search.SLOOptions{Run: RunOnce, Args: args, Over: search.SLOOverConcurrency, Attainment: 0.99, Start: 8}, &out, &errOut)
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
	if n := strings.Count(errOut.String(), plan.TemperatureWarning); n != 1 {
		t.Errorf("the temperature warning printed %d times in one search, want once", n)
	}
	if n := strings.Count(out.String(), "probe "); n != len(res.Probes) || n < 3 {
		t.Errorf("%d probe lines for %d probes:\n%s", n, len(res.Probes), out.String())
	}
	if !strings.Contains(out.String(), "Highest max-concurrency meeting the SLOs:  32") && res.Answer.Load == 32 {
		t.Errorf("answer not printed:\n%s", out.String())
	}
}
