package bench

import (
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/metrics"
)

// Reasoning and tool calls, stampede's own account (--reasoning-metrics
// and the sidecar's "reasoning"): when the answer began after the model's
// reasoning, how much it reasoned, and when it called tools. Python's block
// is unchanged: its TTFT is the first chunk, reasoning or not.

// reasoning prints the --reasoning-metrics block (when asked) and puts
// the account in the sidecar.
func (r *run) reasoning(results []metrics.RequestResult) error {
	st := metrics.ComputeReasoning(results, r.cfg.SelectedPercentiles)
	r.sidecar.Reasoning = report.NewSidecarReasoning(results, st, r.cfg.SaveDetailed)
	if !r.cfg.ReasoningMetrics {
		return nil
	}
	return report.WriteReasoning(r.stdout, st)
}
