package pyout

import "github.com/stampede-bench/stampede/metrics"

// ReportParams is what the console block and the result JSON know of a run
// besides its metrics.Summary: the run's settings, known before it starts,
// and the results measured beside the requests' metrics. The two are
// embedded, so a partial result's JSON (which carries them) keeps one flat
// object.
type ReportParams struct {
	RunSettings
	RunResults
}

// RunSettings are the settings Python reads from its argparse namespace
// when it prints and saves a run, and the optional side reports. Zero
// values mean "not given" where Python's default is None.
type RunSettings struct {
	// Backend is --backend (also the JSON's legacy endpoint_type).
	Backend string
	// Label is --label; nil when not given (JSON null).
	Label *string
	// ModelID is --model, or the first model's root from /v1/models.
	ModelID string
	// TokenizerID is the tokenizer's name; "" with --skip-tokenizer-init.
	// Rows that need a tokenizer are printed only when it is set.
	TokenizerID string
	NumPrompts  int
	// RequestRate is --request-rate; +Inf sends everything at once.
	RequestRate float64
	Burstiness  float64
	// MaxConcurrency is --max-concurrency; 0 when not given.
	MaxConcurrency int
	// RampUpStrategy is "linear" or "exponential", "" without ramp-up.
	RampUpStrategy string
	RampUpStartRPS int
	RampUpEndRPS   int

	// Metadata holds the raw --metadata KEY=VALUE items.
	Metadata []string
	// PercentileMetrics are the names in --percentile-metrics (or the
	// default, "ttft,tpot,itl" for generation, "e2el" for pooling), split
	// on "," and not trimmed; unknown names (" tpot" included) are
	// ignored, as in Python.
	PercentileMetrics []string
	// Goodput reports whether --goodput was given (the SLOs themselves go
	// to metrics.Compute).
	Goodput bool

	// SelfTimed replays a trace's own timestamps (timed_trace).
	SelfTimed bool
	// ProbeRequestRate is --probe-request-rate; 0 sends no probes.
	ProbeRequestRate float64

	// Workers is the number of worker processes of the multi-process
	// client (--max-connections-per-worker); 0 hides the row.
	Workers int

	SaveResult     bool
	SaveDetailed   bool
	AppendResult   bool
	PlotTimeline   bool
	ResultDir      string
	ResultFilename string
}

// RunResults are what a run measured beside the requests' metrics: the
// ramp-up's steps, the side probes, and the server's speculative-decoding
// and diffusion counters (nil when the server gave none).
type RunResults struct {
	RPSChangeEvents []RPSChange

	Probe      *metrics.ProbeStats
	SpecDecode *metrics.SpecDecodeStats
	Diffusion  *metrics.DiffusionStats
}

// RPSChange is one ramp-up step: the integer rate reached and the local
// ISO-8601 time (datetime.now().isoformat()) it was reached.
type RPSChange struct {
	RPS       int
	Timestamp string
}

// HasTokenizer reports whether the run has a tokenizer: the rows and
// sections that need one are printed only then.
func (p *RunSettings) HasTokenizer() bool { return p.TokenizerID != "" }

// Selected reports whether metric is among --percentile-metrics.
func (p *RunSettings) Selected(metric string) bool {
	for _, m := range p.PercentileMetrics {
		if m == metric {
			return true
		}
	}
	return false
}
