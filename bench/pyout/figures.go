package pyout

import (
	"strconv"
	"strings"
)

// Figure is one figure of Python's result: the console block's label, the
// result JSON's key, its unit, how the block prints it and which way is
// better. The console block, the result JSON and stampede's HTML report
// all name a figure through this table, so a label or a key is written
// once.
type Figure struct {
	// Name is the console label without its colon ("Successful
	// requests"); "" for a figure only the result JSON holds.
	Name string
	// Key is the result JSON key ("completed"); "" for a figure only the
	// console block prints.
	Key string
	// Unit is the value's unit ("s", "req/s", "tok/s", "ms", "%"); "" for
	// counts and ratios.
	Unit string
	// Count figures print as "{:<10}" of an integer, the others as
	// "{:<10.2f}".
	Count bool
	// Better says which way a change of the figure is an improvement.
	Better Direction
}

// Direction is which way a figure improves, for readers that compare runs.
type Direction int8

const (
	// Neutral figures describe the run's setting or shape, not its quality.
	Neutral Direction = iota
	HigherIsBetter
	LowerIsBetter
)

// Label is the figure's console label: its name and a colon.
func (f Figure) Label() string { return f.Name + ":" }

// The result block's figures, in the order the block prints them.
var (
	WorkerProcesses       = Figure{Name: "Number of worker processes", Count: true}
	Completed             = Figure{Name: "Successful requests", Key: "completed", Count: true, Better: HigherIsBetter}
	Failed                = Figure{Name: "Failed requests", Key: "failed", Count: true, Better: LowerIsBetter}
	MaxConcurrency        = Figure{Name: "Maximum request concurrency", Key: "max_concurrency", Count: true}
	RequestRateConfigured = Figure{Name: "Request rate configured (RPS)", Key: "request_rate", Unit: "req/s"}
	Duration              = Figure{Name: "Benchmark duration (s)", Key: "duration", Unit: "s"}
	TotalInputTokens      = Figure{Name: "Total input tokens", Key: "total_input_tokens", Count: true}
	TotalOutputTokens     = Figure{Name: "Total generated tokens", Key: "total_output_tokens", Count: true}
	RequestThroughput     = Figure{Name: "Request throughput (req/s)", Key: "request_throughput", Unit: "req/s", Better: HigherIsBetter}
	InputThroughput       = Figure{Name: "Input throughput (inputs/s)", Key: "input_sequence_throughput", Unit: "inputs/s", Better: HigherIsBetter}
	RequestGoodput        = Figure{Name: "Request goodput (req/s)", Key: "request_goodput", Unit: "req/s", Better: HigherIsBetter}
	OutputThroughput      = Figure{Name: "Output token throughput (tok/s)", Key: "output_throughput", Unit: "tok/s", Better: HigherIsBetter}
	PeakOutputThroughput  = Figure{Name: "Peak output token throughput (tok/s)", Key: "max_output_tokens_per_s", Unit: "tok/s", Better: HigherIsBetter}
	// PeakConcurrentRequests is an integer that Python prints with two
	// decimals.
	PeakConcurrentRequests = Figure{Name: "Peak concurrent requests", Key: "max_concurrent_requests"}
	RTFx                   = Figure{Name: "RTFx (Inverse Real-Time Factor)", Key: "rtfx", Better: HigherIsBetter}
	TotalTokenThroughput   = Figure{Name: "Total token throughput (tok/s)", Key: "total_token_throughput", Unit: "tok/s", Better: HigherIsBetter}

	// TotalInputSequences is a pooling run's count of inputs, which only
	// the result JSON holds.
	TotalInputSequences = Figure{Key: "total_input_sequences", Count: true}
)

// The probe block's figures.
var (
	ProbeCompleted  = Figure{Name: "Probe requests completed", Key: "probe_completed", Count: true, Better: HigherIsBetter}
	ProbeFailed     = Figure{Name: "Probe requests failed", Key: "probe_failed", Count: true, Better: LowerIsBetter}
	ProbeMedianE2EL = Figure{Name: "Median probe E2EL (ms)", Key: "probe_median_e2el_ms", Unit: "ms", Better: LowerIsBetter}
	ProbeP99E2EL    = Figure{Name: "P99 probe E2EL (ms)", Key: "probe_p99_e2el_ms", Unit: "ms", Better: LowerIsBetter}
	ProbeMaxE2EL    = Figure{Name: "Max probe E2EL (ms)", Key: "probe_max_e2el_ms", Unit: "ms", Better: LowerIsBetter}
)

// The speculative-decoding block's figures. The per-position rates are
// one row per position in the block and one list in the JSON.
var (
	SpecAcceptanceRate   = Figure{Name: "Acceptance rate (%)", Key: "spec_decode_acceptance_rate", Unit: "%", Better: HigherIsBetter}
	SpecAcceptanceLength = Figure{Name: "Acceptance length", Key: "spec_decode_acceptance_length", Better: HigherIsBetter}
	SpecDrafts           = Figure{Name: "Drafts", Key: "spec_decode_num_drafts", Count: true}
	SpecDraftTokens      = Figure{Name: "Draft tokens", Key: "spec_decode_draft_tokens", Count: true}
	SpecAcceptedTokens   = Figure{Name: "Accepted tokens", Key: "spec_decode_accepted_tokens", Count: true, Better: HigherIsBetter}
	// SpecPerPositionAcceptance heads the per-position rows; its key holds
	// the rates as fractions.
	SpecPerPositionAcceptance = Figure{Name: "Per-position acceptance (%)", Key: "spec_decode_per_position_acceptance_rates", Unit: "%"}
)

// SpecPosition is the row of one draft position's acceptance rate.
func SpecPosition(i int) Figure {
	return Figure{Name: "  Position " + strconv.Itoa(i), Unit: "%", Better: HigherIsBetter}
}

// The diffusion-decoding block's figures.
var (
	DiffusionCommittedThroughput = Figure{Name: "Committed throughput (tok/s)", Key: "diffusion_committed_throughput", Unit: "tok/s", Better: HigherIsBetter}
	DiffusionStepsPerCanvas      = Figure{Name: "Denoising steps per canvas", Key: "diffusion_steps_per_canvas", Better: LowerIsBetter}
	DiffusionCommittedPerStep    = Figure{Name: "Committed per denoising step", Key: "diffusion_committed_per_step", Better: HigherIsBetter}
	DiffusionCommittedTokens     = Figure{Name: "Committed tokens", Key: "diffusion_committed_tokens", Count: true}
	DiffusionDenoisingSteps      = Figure{Name: "Denoising steps", Key: "diffusion_denoising_steps", Count: true}
	DiffusionCanvasPositions     = Figure{Name: "Canvas positions evaluated", Key: "diffusion_canvas_positions", Count: true}
)

// The latency distributions Python reports, one section each, in its
// order; Sections picks those a run prints and fills in their Stats.
var (
	TTFT            = Section{Key: "ttft", Name: "TTFT", Header: "Time to First Token"}
	TPOT            = Section{Key: "tpot", Name: "TPOT", Header: "Time per Output Token (excl. 1st token)"}
	ITL             = Section{Key: "itl", Name: "ITL", Header: "Inter-token Latency"}
	E2EL            = Section{Key: "e2el", Name: "E2EL", Header: "End-to-end Latency"}
	ClientQueueTime = Section{Key: "client_queue_time", Name: "Client Queue Time", Header: "Client-side Queueing"}
	E2ELInclQueue   = Section{Key: "e2el_including_client_queue", Name: "E2EL incl. Client Queue",
		Header: "Queue-inclusive End-to-end Latency"}
)

// Statistic is one statistic of a latency section, as its rows and keys
// name it: "Mean" and "mean", "P99" and "p99".
type Statistic struct {
	Name, Key string
}

// The statistics every section reports; Std is only in the result JSON.
var (
	StatMean   = Statistic{"Mean", "mean"}
	StatMedian = Statistic{"Median", "median"}
	StatStd    = Statistic{"Std", "std"}
)

// StatPercentile is the p-th percentile: "P99" and "p99", "P99.9" and
// "p99.9".
func StatPercentile(p float64) Statistic {
	w := PercentileWord(p)
	return Statistic{"P" + w, "p" + w}
}

// Figure is the section's row of statistic st: "Mean TTFT (ms)" and
// "mean_ttft_ms".
func (sec Section) Figure(st Statistic) Figure {
	return Figure{Name: st.Name + " " + sec.Name + " (ms)", Key: st.Key + "_" + sec.Key + "_ms", Unit: "ms", Better: LowerIsBetter}
}

// PercentileOfKey reads a result JSON key as one of the section's
// percentiles: "p99.9_ttft_ms" is TTFT's 99.9th. It accepts only keys
// that StatPercentile would write, so "probe_p99_e2el_ms" is not E2EL's.
func (sec Section) PercentileOfKey(key string) (p float64, ok bool) {
	word, found := strings.CutPrefix(key, "p")
	if !found {
		return 0, false
	}
	word, found = strings.CutSuffix(word, "_"+sec.Key+"_ms")
	if !found {
		return 0, false
	}
	p, err := strconv.ParseFloat(word, 64)
	if err != nil || PercentileWord(p) != word {
		return 0, false
	}
	return p, true
}
