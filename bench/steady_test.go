package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// --steady-state prints its block after Python's; the outcome carries the
// steady state either way (for the sidecar).
func TestSteadyStateBlock(t *testing.T) {
	base := append(startMock(t, mock.Config{TTFT: 5 * time.Millisecond, ITL: 2 * time.Millisecond}),
		"--random-output-len", "8", "--num-prompts", "64", "--max-concurrency", "4")
	for _, flag := range []bool{false, true} {
		args := base
		if flag {
			args = append(args, "--steady-state")
		}
		cfg, err := cli.Parse(args, backend.Choices())
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		o, err := RunOnce(context.Background(), cfg, &out, &errOut)
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut.String())
		}
		st := o.SteadyState
		if st == nil {
			t.Fatalf("no steady state: %v", o.SteadyStateErr)
		}
		if st.TargetInFlight != 4 || st.Requests < 2 || st.Requests >= 64 || st.StartS >= st.EndS {
			t.Errorf("steady state %+v", st)
		}
		s := out.String()
		block := strings.Index(s, "================== Steady State ==================")
		if !flag {
			if block >= 0 {
				t.Errorf("block printed without --steady-state")
			}
			continue
		}
		python := strings.Index(s, "Serving Benchmark Result")
		if block < 0 || block < python {
			t.Fatalf("steady-state block missing or before Python's:\n%s", s)
		}
		for _, row := range []string{"Target in-flight requests:               4 (--max-concurrency)", "Requests inside the window:", "Mean TTFT (ms):"} {
			if !strings.Contains(s[block:], row) {
				t.Errorf("block lacks %q:\n%s", row, s[block:])
			}
		}
	}
}
