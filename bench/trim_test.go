package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/pyout/pyouttest"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/metrics"
)

func TestWriteSteadyState(t *testing.T) {
	tests := []struct {
		name             string
		warmup, cooldown float64
		stdout, stderr   string
	}{
		{name: "off"},
		{name: "printed", warmup: 0.3, stdout: report.TrimmedTitle + "\n"},
		{name: "window too long", warmup: 3, cooldown: 3,
			stderr: "WARNING: no steady-state result for --warmup-time 3.0 --cooldown-time 3.0: metrics: steady-state window is empty"},
		{name: "nothing counted", warmup: 0.56, cooldown: 0.78, stdout: report.TrimmedTitle + "\n", stderr: pyout.AllFailedWarning},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cfg := &plan.Plan{SelectedPercentiles: []float64{99}}
			cfg.WarmupTime, cfg.CooldownTime = tc.warmup, tc.cooldown
			r := &run{cfg: cfg, stdout: &stdout, stderr: &stderr}
			s := &metrics.Summary{}
			if err := r.writeTrimmed(s, pyouttest.GoldenRun(), &pyout.ReportParams{}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stdout.String(), tc.stdout) || (tc.stdout == "") != (stdout.Len() == 0) {
				t.Errorf("stdout %q, want it to hold %q", stdout.String(), tc.stdout)
			}
			if !strings.HasPrefix(stderr.String(), tc.stderr) || (tc.stderr == "") != (stderr.Len() == 0) {
				t.Errorf("stderr %q, want it to start with %q", stderr.String(), tc.stderr)
			}
		})
	}
}
