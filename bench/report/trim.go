package report

import (
	"io"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// Steady-state trimming is the --warmup-time / --cooldown-time extension
// of the multi-process fork of `vllm bench serve` (spec §i). The fork's
// README documents its output: the usual result block, unchanged, and
// after it a second block computed from the token events inside the
// window (see metrics.ComputeTrimmed). stampede prints that block to the
// character; the result JSON is unchanged, as the fork discards the
// trimmed figures after printing them.

// TrimmedTitle is the fork's header. It is longer than the 50-column block,
// so Python's centring leaves it without fill.
const TrimmedTitle = "Serving Benchmark Result after warmup before cooldown"

// WriteTrimmed prints the fork's steady-state block: the plotting tip its
// metric code prints when some request had a token in the window, the
// window's settings, the counted tokens, its duration, generated tokens
// and output throughput (generation runs), the ITL section when "itl" is
// among --percentile-metrics, and the closing rule. The warm-up and
// cool-down values are printed with "{:<10}", so as Python's str(float).
func WriteTrimmed(w io.Writer, t *metrics.Trimmed, pooling bool, p *pyout.RunSettings) error {
	c := pyout.NewConsole(w)
	if t.Requests > 0 {
		c.Line("tip: install termplotlib and gnuplot to plot the metrics")
	}
	c.Header(TrimmedTitle, '=')
	c.Row("Warm-up Time:", py.FloatRepr(t.WarmupS))
	c.Row("Cool-down Time:", py.FloatRepr(t.CooldownS))
	c.Row("Total counted tokens at filtering:", t.Tokens)
	c.Figure(pyout.Duration, t.DurationS)
	if !pooling {
		c.Figure(pyout.TotalOutputTokens, t.Tokens)
		c.Figure(pyout.OutputThroughput, t.OutputThroughput)
		if p.Selected(pyout.ITL.Key) {
			c.Section(pyout.ITL.With(&t.ITL))
		}
	}
	c.Rule()
	return c.Flush()
}
