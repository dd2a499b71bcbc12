package metrics

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// lanes builds a closed-loop run: lane j starts at j·stagger and sends
// perLane requests back to back, each lasting dur with TTFT ttft.
func lanes(n int, stagger, dur, ttft int64, perLane int) *RunData {
	var rs []RequestResult
	for j := 0; j < n; j++ {
		for k := 0; k < perLane; k++ {
			start := int64(j)*stagger + int64(k)*dur
			rs = append(rs, RequestResult{
				Index: len(rs), Success: true, PromptLen: 10, OutputTokens: 5,
				StartNs: start, ArrivalNs: start, TTFTNs: ttft, LatencyNs: dur,
				ITLNs: []int64{(dur - ttft) / 4, (dur - ttft) / 4, (dur - ttft) / 4, (dur - ttft) / 4},
			})
		}
	}
	return &RunData{Log: LogOf(rs...)}
}

// Four lanes of 100 ms requests starting 10 ms apart: all four are in
// flight from 30 ms (the last lane's start) to 500 ms (the first lane's
// end); the hand-offs between a lane's requests do not end the window.
func TestSteadyStateConcurrencyWindow(t *testing.T) {
	d := lanes(4, 10*ms, 100*ms, 20*ms, 5)
	s, err := ComputeSteadyState(d, ComputeOptions{Percentiles: []float64{99}}, SteadyTarget{MaxConcurrency: 4, RequestRate: math.Inf(1)})
	if err != nil {
		t.Fatal(err)
	}
	if s.Basis != "max_concurrency" || s.TargetInFlight != 4 || s.StartS != 0.03 || s.EndS != 0.5 {
		t.Fatalf("window %+v, want [0.03, 0.5] at 4 in flight", s)
	}
	// Lane 0: starts 100..400; lane 1: 110..310; lane 2: 120..320; lane 3: 30..330.
	if s.Requests != 14 || s.Completed != 14 {
		t.Errorf("requests inside = %d, want 14", s.Requests)
	}
	// Finished inside (30, 500] ms: lane 0 five, lanes 1-3 four each.
	if want := 17 / 0.47; math.Abs(s.RequestThroughput-want) > 1e-9 {
		t.Errorf("request throughput %v, want %v", s.RequestThroughput, want)
	}
	if s.TTFT.Median != 20 || s.E2EL.Percentiles["p99"] != 100 || s.ITL.Mean != 20 {
		t.Errorf("latencies %+v %+v %+v", s.TTFT, s.E2EL, s.ITL)
	}
}

// With a rate, the target is the run's own in-flight level.
func TestSteadyStateRateLevel(t *testing.T) {
	d := lanes(3, 30*ms, 100*ms, 20*ms, 6)
	s, err := ComputeSteadyState(d, ComputeOptions{}, SteadyTarget{RequestRate: 30})
	if err != nil {
		t.Fatal(err)
	}
	if s.Basis != "in_flight_level" || s.TargetInFlight != 3 || s.StartS != 0.06 || s.EndS != 0.6 {
		t.Errorf("window %+v, want [0.06, 0.6] at 3 in flight", s)
	}
	if s.RequestGoodput != nil {
		t.Errorf("goodput without --goodput")
	}
}

func TestSteadyStateNone(t *testing.T) {
	d := lanes(4, 0, 100*ms, 20*ms, 1)
	if _, err := ComputeSteadyState(d, ComputeOptions{}, SteadyTarget{RequestRate: math.Inf(1)}); !errors.Is(err, ErrNoSteadyState) {
		t.Errorf("burst without a cap: err = %v", err)
	}
	// Four requests under a cap of 8: the target is the 4 there are.
	s, err := ComputeSteadyState(d, ComputeOptions{}, SteadyTarget{MaxConcurrency: 8, RequestRate: math.Inf(1)})
	if err != nil || s.TargetInFlight != 4 || s.Requests != 4 {
		t.Errorf("cap above the request count: %+v, %v", s, err)
	}
	short := lanes(1, 0, 100*ms, 20*ms, 1)
	if _, err := ComputeSteadyState(short, ComputeOptions{}, SteadyTarget{MaxConcurrency: 1}); !errors.Is(err, ErrNoSteadyState) {
		t.Errorf("one request: err = %v", err)
	}
}

// A lower fraction opens the window earlier and closes it later: at half
// of four lanes, from the second lane's start (10 ms) until the third
// lane's end (520 ms).
func TestSteadyStateFraction(t *testing.T) {
	d := lanes(4, 10*ms, 100*ms, 20*ms, 5)
	s, err := ComputeSteadyState(d, ComputeOptions{}, SteadyTarget{MaxConcurrency: 4, RequestRate: math.Inf(1), Fraction: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if s.Threshold != 2 || s.StartS != 0.01 || s.EndS != 0.52 {
		t.Errorf("window %+v, want [0.01, 0.52] at 2 in flight", s)
	}
}

// The window is flagged when shorter than the minimum: the given one, else
// max(10 s, a tenth of the run); a window that long goes unflagged.
func TestSteadyStateMinWindow(t *testing.T) {
	d := lanes(4, 10*ms, 100*ms, 20*ms, 5)
	for _, tt := range []struct {
		minS, wantMin float64
		warned        bool
	}{
		{0, 10, true},      // the default: a 0.5 s window in a short run
		{0.2, 0.2, false},  // given, and the window is longer
		{0.75, 0.75, true}, // given, and the window is shorter
	} {
		s, err := ComputeSteadyState(d, ComputeOptions{}, SteadyTarget{MaxConcurrency: 4, RequestRate: math.Inf(1), Fraction: 0.5, MinWindowS: tt.minS})
		if err != nil {
			t.Fatal(err)
		}
		if s.MinWindowS != tt.wantMin || (s.Warning != "") != tt.warned {
			t.Errorf("min %v: min_window_s %v warning %q, want %v warned %v", tt.minS, s.MinWindowS, s.Warning, tt.wantMin, tt.warned)
		}
		if tt.warned && !strings.Contains(s.Warning, "--steady-state-min-window") {
			t.Errorf("warning %q does not name the flag", s.Warning)
		}
	}
	long := SteadyTarget{MaxConcurrency: 4, RequestRate: math.Inf(1)}
	if got := long.minWindowS(300e9); got != 30 {
		t.Errorf("min window of a 300 s run %v, want 30", got)
	}
}
