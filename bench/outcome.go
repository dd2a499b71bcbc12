package bench

import (
	"math"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/metrics"
)

// Outcome is what one run measured, for the commands built from runs
// (--num-runs, sweep, slo): the computed summary and the data under it.
type Outcome struct {
	Summary *metrics.Summary
	Data    *metrics.RunData
	Params  *pyout.ReportParams
	// Options are the settings Summary was computed with.
	Options metrics.ComputeOptions
	// ResultPath is the result JSON written, "" when none was.
	ResultPath string
	// Cancelled is set when an interrupt cut the run short.
	Cancelled bool
	// SteadyState is the run's steady-state window and metrics, for the
	// sidecar's "steady_state" and the --steady-state block; nil with
	// SteadyStateErr saying why when the run has none.
	SteadyState    *metrics.SteadyState
	SteadyStateErr error
}

// PointMetrics are the headline figures of one run: the columns of a
// sweep's table and the figures --num-runs summarises. Latencies are in
// milliseconds, computed with Python's formulas whatever
// --metric-percentiles selected.
type PointMetrics struct {
	Completed         int     `json:"completed"`
	Failed            int     `json:"failed"`
	RequestThroughput float64 `json:"request_throughput"`
	OutputThroughput  float64 `json:"output_throughput"`
	TTFTP50           float64 `json:"p50_ttft_ms"`
	TTFTP99           float64 `json:"p99_ttft_ms"`
	TPOTP50           float64 `json:"p50_tpot_ms"`
	TPOTP99           float64 `json:"p99_tpot_ms"`
	ITLP50            float64 `json:"p50_itl_ms"`
	ITLP99            float64 `json:"p99_itl_ms"`
	E2ELP50           float64 `json:"p50_e2el_ms"`
	E2ELP99           float64 `json:"p99_e2el_ms"`
	// RequestGoodput is null without --goodput.
	RequestGoodput *float64 `json:"request_goodput"`
	// Attainment is the share of all requests (failures included) that
	// met every --goodput SLO; null without --goodput.
	Attainment *float64 `json:"slo_attainment"`
}

// pointFigure names one PointMetrics figure for tables and summaries.
type pointFigure struct {
	name, key string // for people; as in PointMetrics' JSON
	get       func(*PointMetrics) float64
}

// pointFigures are the figures in table order; goodput and attainment
// are NaN without --goodput.
var pointFigures = []pointFigure{
	{"req/s", "request_throughput", func(m *PointMetrics) float64 { return m.RequestThroughput }},
	{"out tok/s", "output_throughput", func(m *PointMetrics) float64 { return m.OutputThroughput }},
	{"TTFT p50", "p50_ttft_ms", func(m *PointMetrics) float64 { return m.TTFTP50 }},
	{"TTFT p99", "p99_ttft_ms", func(m *PointMetrics) float64 { return m.TTFTP99 }},
	{"TPOT p50", "p50_tpot_ms", func(m *PointMetrics) float64 { return m.TPOTP50 }},
	{"TPOT p99", "p99_tpot_ms", func(m *PointMetrics) float64 { return m.TPOTP99 }},
	{"ITL p50", "p50_itl_ms", func(m *PointMetrics) float64 { return m.ITLP50 }},
	{"ITL p99", "p99_itl_ms", func(m *PointMetrics) float64 { return m.ITLP99 }},
	{"E2EL p50", "p50_e2el_ms", func(m *PointMetrics) float64 { return m.E2ELP50 }},
	{"E2EL p99", "p99_e2el_ms", func(m *PointMetrics) float64 { return m.E2ELP99 }},
	{"goodput", "request_goodput", func(m *PointMetrics) float64 { return orNaN(m.RequestGoodput) }},
	{"failed", "failed", func(m *PointMetrics) float64 { return float64(m.Failed) }},
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// Point reduces the outcome to its headline figures: the summary again
// with the 50th and 99th percentiles of every latency.
func (o *Outcome) Point() (PointMetrics, error) {
	opts := o.Options
	opts.Percentiles = []float64{50, 99}
	s, err := metrics.Compute(o.Data, opts)
	if err != nil {
		return PointMetrics{}, err
	}
	pm := PointMetrics{
		Completed: s.Completed, Failed: s.Failed,
		RequestThroughput: s.RequestThroughput, OutputThroughput: s.OutputThroughput,
	}
	for _, f := range []struct {
		st       *metrics.Stats
		p50, p99 *float64
	}{
		{&s.TTFT, &pm.TTFTP50, &pm.TTFTP99}, {&s.TPOT, &pm.TPOTP50, &pm.TPOTP99},
		{&s.ITL, &pm.ITLP50, &pm.ITLP99}, {&s.E2EL, &pm.E2ELP50, &pm.E2ELP99},
	} {
		if len(f.st.Percentiles) == 2 {
			*f.p50, *f.p99 = f.st.Percentiles[0].ValueMs, f.st.Percentiles[1].ValueMs
		}
	}
	if len(opts.Goodput) > 0 {
		g := s.RequestGoodput
		pm.RequestGoodput = &g
		att := 0.0
		if total := s.Completed + s.Failed; total > 0 {
			att = math.Round(s.RequestGoodput*s.DurationS) / float64(total)
		}
		pm.Attainment = &att
	}
	return pm, nil
}
