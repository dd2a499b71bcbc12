package bench

import (
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/metrics"
)

// Reasoning and tool calls, stampede's own account (--reasoning-metrics
// and the sidecar's "reasoning"): when the answer began after the model's
// reasoning, how much it reasoned, and when it called tools. Python's block
// is unchanged: its TTFT is the first chunk, reasoning or not.

// reasoning prints the --reasoning-metrics block (when asked) and returns
// the sidecar's account.
func (r *run) reasoning(results *metrics.Log) (*report.SidecarReasoning, error) {
	st := metrics.ComputeReasoning(results, r.cfg.SelectedPercentiles)
	account := report.NewSidecarReasoning(results, st, r.cfg.SaveDetailed)
	if !r.cfg.ReasoningMetrics {
		return account, nil
	}
	return account, report.WriteReasoning(r.stdout, st)
}
