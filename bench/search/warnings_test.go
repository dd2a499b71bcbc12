package search

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/plan"
)

// A warning written again is dropped; other lines, and other warnings,
// pass.
func TestOnceWarnings(t *testing.T) {
	var b bytes.Buffer
	w := newOnceWarnings(&b)
	for range 3 {
		io.WriteString(w, "WARNING: a\n")
		io.WriteString(w, "Starting main benchmark run...\n")
	}
	io.WriteString(w, "WARNING: b\n")
	want := "WARNING: a\nStarting main benchmark run...\nStarting main benchmark run...\nStarting main benchmark run...\nWARNING: b\n"
	if b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}

// The search prints the serve flags' parse warnings once, and a warning
// every probe's run prints once.
func TestSLOWarnsOnce(t *testing.T) {
	probes := 0
	run := func(_ context.Context, _ *plan.Plan, _, stderr io.Writer) (*outcome.Outcome, error) {
		probes++
		io.WriteString(stderr, "WARNING: the same for every probe\n")
		return nil, nil // as if cut short: the search stops
	}
	var errOut bytes.Buffer
	s := &sloSearch{o: SLOOptions{Over: SLOOverConcurrency, Run: run, Args: []string{"--model", "m", "--goodput", "ttft:100"}},
		base: &plan.Plan{}, stdout: io.Discard}
	s.stderr = newOnceWarnings(&errOut)
	for load := 1.0; load <= 3; load++ {
		if _, _, err := s.run(context.Background(), load); err != nil {
			t.Fatal(err)
		}
	}
	if probes != 3 || strings.Count(errOut.String(), "WARNING: the same for every probe") != 1 {
		t.Errorf("%d probes wrote:\n%s", probes, errOut.String())
	}

	errOut.Reset()
	_, err := SearchSLO(context.Background(), SLOOptions{Run: run, Over: SLOOverConcurrency, Attainment: 0.99,
		Args: []string{"--model", "m", "--goodput", "ttft:100", "--percentile-metrics", "ttft,e2e"}}, io.Discard, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(errOut.String(), `WARNING: --percentile-metrics: unknown metric "e2e"`); n != 1 {
		t.Errorf("the parse warning printed %d times:\n%s", n, errOut.String())
	}
}
