package pyout

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// Console block geometry: rows are "{:<40} {:<10}", headers are centred in
// 50 characters, and the closing rule is 50 "=".
const (
	LabelWidth = 40
	ValueWidth = 10
	BlockWidth = 50
)

// Section is one percentile section of a block: its header, then mean,
// median and the selected percentiles of Stats.
type Section struct {
	Key    string // percentile-metrics name and JSON key infix; "" in stampede's blocks
	Name   string // in row labels
	Header string
	Stats  *metrics.Stats
}

// Sections returns the metric sections the report prints, in Python's
// order, each only when selected in --percentile-metrics and its data
// exist: TTFT, TPOT and ITL need a generation run with a tokenizer, the
// queue sections need --max-concurrency (and, for the second, a finite
// request rate).
func Sections(s *metrics.Summary, p *RunSettings) []Section {
	var all []Section
	if !s.Pooling && p.HasTokenizer() {
		all = append(all,
			Section{"ttft", "TTFT", "Time to First Token", &s.TTFT},
			Section{"tpot", "TPOT", "Time per Output Token (excl. 1st token)", &s.TPOT},
			Section{"itl", "ITL", "Inter-token Latency", &s.ITL})
	}
	all = append(all, Section{"e2el", "E2EL", "End-to-end Latency", &s.E2EL})
	if s.ClientQueueTime != nil {
		all = append(all, Section{"client_queue_time", "Client Queue Time", "Client-side Queueing", s.ClientQueueTime})
	}
	if s.E2ELInclQueue != nil {
		all = append(all, Section{"e2el_including_client_queue", "E2EL incl. Client Queue",
			"Queue-inclusive End-to-end Latency", s.E2ELInclQueue})
	}
	var out []Section
	for _, sec := range all {
		if p.Selected(sec.Key) {
			out = append(out, sec)
		}
	}
	return out
}

// Console prints rows the way Python's blocks do; stampede's own blocks
// use it too, so that they line up with Python's. The first write error
// sticks and is returned by Flush.
type Console struct {
	w *bufio.Writer
}

// NewConsole returns a Console writing to w through a buffer; call Flush
// at the end.
func NewConsole(w io.Writer) Console { return Console{bufio.NewWriter(w)} }

// Flush writes out what is buffered and returns the first write error.
func (c Console) Flush() error { return c.w.Flush() }

// Line prints s and a newline.
func (c Console) Line(s string) {
	c.w.WriteString(s)
	c.w.WriteByte('\n')
}

// Header prints title centred in BlockWidth characters of fill.
func (c Console) Header(title string, fill byte) {
	c.Line(py.FormatCenter(title, fill, BlockWidth))
}

// Rule prints the closing rule, BlockWidth "=".
func (c Console) Rule() { c.Line(strings.Repeat("=", BlockWidth)) }

// Row is "{:<40} {:<10}".format(label, value) for an int or string.
func (c Console) Row(label string, value any) {
	c.Line(py.Left(label, LabelWidth) + " " + py.Left(fmt.Sprint(value), ValueWidth))
}

// RowF is "{:<40} {:<10.2f}".format(label, value).
func (c Console) RowF(label string, value float64) {
	c.Line(py.Left(label, LabelWidth) + " " + py.Left(py.Fixed(value, 2), ValueWidth))
}

// Section prints one percentile section: its header, mean, median and the
// selected percentiles.
func (c Console) Section(sec Section) {
	c.Header(sec.Header, '-')
	c.RowF("Mean "+sec.Name+" (ms):", sec.Stats.MeanMs)
	c.RowF("Median "+sec.Name+" (ms):", sec.Stats.MedianMs)
	for _, pc := range sec.Stats.Percentiles {
		c.RowF("P"+PercentileWord(pc.P)+" "+sec.Name+" (ms):", pc.ValueMs)
	}
}

// Fields prints side-report rows: integers as "{:<10}", floats as
// "{:<10.2f}".
func (c Console) Fields(fs []SideField) {
	for _, f := range fs {
		switch v := f.Value.(type) {
		case int64:
			c.Row(f.Label, v)
		case float64:
			c.RowF(f.Label, v)
		}
	}
}

// SideField is one figure of a side report (probes, speculative or
// diffusion decoding): its console label, its result JSON key and its value,
// an int64 or a float64. The console rows and the JSON keys come in the
// same order.
type SideField struct {
	Label, Key string
	Value      any
}

func probeFields(pr *metrics.ProbeStats) []SideField {
	return []SideField{
		{"Probe requests completed:", "probe_completed", int64(pr.Completed)},
		{"Probe requests failed:", "probe_failed", int64(pr.Failed)},
		{"Median probe E2EL (ms):", "probe_median_e2el_ms", pr.MedianE2ELMs},
		{"P99 probe E2EL (ms):", "probe_p99_e2el_ms", pr.P99E2ELMs},
		{"Max probe E2EL (ms):", "probe_max_e2el_ms", pr.MaxE2ELMs},
	}
}

// specDecodeFields leaves out the per-position rates, which the console
// prints as one row per position and the JSON as one list.
func specDecodeFields(sd *metrics.SpecDecodeStats) []SideField {
	return []SideField{
		{"Acceptance rate (%):", "spec_decode_acceptance_rate", sd.AcceptanceRate},
		{"Acceptance length:", "spec_decode_acceptance_length", sd.AcceptanceLength},
		{"Drafts:", "spec_decode_num_drafts", sd.NumDrafts},
		{"Draft tokens:", "spec_decode_draft_tokens", sd.DraftTokens},
		{"Accepted tokens:", "spec_decode_accepted_tokens", sd.AcceptedTokens},
	}
}

// diffusionFields prints and saves the denoising steps truncated, as
// Python's int() does.
func diffusionFields(df *metrics.DiffusionStats) []SideField {
	return []SideField{
		{"Committed throughput (tok/s):", "diffusion_committed_throughput", df.CommittedThroughput},
		{"Denoising steps per canvas:", "diffusion_steps_per_canvas", df.StepsPerCanvas},
		{"Committed per denoising step:", "diffusion_committed_per_step", df.CommittedPerStep},
		{"Committed tokens:", "diffusion_committed_tokens", df.CommittedTokens},
		{"Denoising steps:", "diffusion_denoising_steps", pyInt(df.DenoisingSteps)},
		{"Canvas positions evaluated:", "diffusion_canvas_positions", df.CanvasPositions},
	}
}

// WriteResult prints what `vllm bench serve` prints to stdout once the run
// is over, to the character: for a generation run the failed requests'
// errors (the first 10) and the plotting tip, then the result block with
// its conditional rows, the probe block, the selected percentile sections,
// the diffusion or speculative-decoding block, and the closing rule.
func WriteResult(w io.Writer, s *metrics.Summary, p *ReportParams) error {
	c := NewConsole(w)
	if !s.Pooling {
		if s.Failed > 0 {
			c.Line("Failed requests during benchmark run detected (capping to 10):")
			for i, e := range s.Failures {
				c.Line("Error " + strconv.Itoa(i) + ": " + TerminalText(e)) // the JSON keeps e as it is
			}
		}
		if s.Completed > 0 {
			// Python prints this whenever termplotlib is absent; the
			// console block stays byte-identical with it.
			c.Line("tip: install termplotlib and gnuplot to plot the metrics")
		}
	}

	c.Header(" Serving Benchmark Result ", '=')
	if p.Workers > 0 {
		c.Row("Number of worker processes:", p.Workers)
	}
	c.Row("Successful requests:", s.Completed)
	c.Row("Failed requests:", s.Failed)
	if p.MaxConcurrency != 0 {
		c.Row("Maximum request concurrency:", p.MaxConcurrency)
	}
	if !math.IsInf(p.RequestRate, 1) {
		c.RowF("Request rate configured (RPS):", p.RequestRate)
	}
	c.RowF("Benchmark duration (s):", s.DurationS)
	c.Row("Total input tokens:", s.TotalInput)
	if !s.Pooling && p.HasTokenizer() {
		c.Row("Total generated tokens:", s.TotalOutput)
	}
	c.RowF("Request throughput (req/s):", s.RequestThroughput)
	if s.Pooling {
		c.RowF("Input throughput (inputs/s):", s.InputSequenceThroughput)
	}
	if p.Goodput && !s.Pooling {
		c.RowF("Request goodput (req/s):", s.RequestGoodput)
	}
	if !s.Pooling {
		if p.HasTokenizer() {
			c.RowF("Output token throughput (tok/s):", s.OutputThroughput)
			c.RowF("Peak output token throughput (tok/s):", s.MaxOutputTokensPerS)
		}
		c.RowF("Peak concurrent requests:", float64(s.MaxConcurrentRequests))
		if s.RTFx > 0 {
			c.RowF("RTFx (Inverse Real-Time Factor):", s.RTFx)
		}
	}
	if p.HasTokenizer() {
		c.RowF("Total token throughput (tok/s):", s.TotalTokenThroughput)
	}

	if p.Probe != nil {
		c.Header("Probe Requests", '-')
		c.Fields(probeFields(p.Probe))
	}

	for _, sec := range Sections(s, &p.RunSettings) {
		c.Section(sec)
	}

	if p.Diffusion != nil {
		c.Header("Diffusion Decoding", '-')
		c.Fields(diffusionFields(p.Diffusion))
	} else if sd := p.SpecDecode; sd != nil {
		c.Header("Speculative Decoding", '-')
		c.Fields(specDecodeFields(sd))
		if len(sd.PerPositionAcceptanceRates) > 0 {
			c.Line("Per-position acceptance (%):")
			for i, rate := range sd.PerPositionAcceptanceRates {
				c.RowF("  Position "+strconv.Itoa(i)+":", rate*100)
			}
		}
	}
	c.Rule()
	return c.Flush()
}

// WriteBanner prints the lines Python prints just before the main run
// starts: the traffic shape (rate or ramp-up, burstiness, concurrency cap)
// or the self-timing notice, the multi-process fork's "num_workers: M"
// line when --max-connections-per-worker is given (spec §i), then the
// probe rate when probes are sent. Values are Python's str(): "inf",
// "10.0", "None".
func WriteBanner(w io.Writer, p *RunSettings) error {
	var b strings.Builder
	if !p.SelfTimed {
		if p.RampUpStrategy != "" {
			fmt.Fprintf(&b, "Traffic ramp-up strategy: %s.\n", p.RampUpStrategy)
			fmt.Fprintf(&b, "Will increase RPS from %d to %d RPS over the duration of the benchmark.\n",
				p.RampUpStartRPS, p.RampUpEndRPS)
		} else {
			fmt.Fprintf(&b, "Traffic request rate: %s\n", py.FloatRepr(p.RequestRate))
		}
		distribution := "Gamma distribution"
		if p.Burstiness == 1 {
			distribution = "Poisson process"
		}
		fmt.Fprintf(&b, "Burstiness factor: %s (%s)\n", py.FloatRepr(p.Burstiness), distribution)
		concurrency := "None"
		if p.MaxConcurrency != 0 {
			concurrency = strconv.Itoa(p.MaxConcurrency)
		}
		fmt.Fprintf(&b, "Maximum request concurrency: %s\n", concurrency)
	} else {
		b.WriteString("Self timing is set, using the timestamps from the trace file.\n")
	}
	if p.Workers > 0 {
		fmt.Fprintf(&b, "num_workers: %d\n", p.Workers)
	}
	if p.ProbeRequestRate > 0 {
		fmt.Fprintf(&b, "Probe request rate: %s req/s\n", py.FloatRepr(p.ProbeRequestRate))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteWarnings prints Python's warning for a run in which no request
// succeeded (to stderr in Python, where warnings go); it prints nothing
// otherwise.
func WriteWarnings(w io.Writer, s *metrics.Summary) error {
	if s.Completed > 0 {
		return nil
	}
	_, err := io.WriteString(w, AllFailedWarning)
	return err
}

// AllFailedWarning is Python's warning when no request counted.
const AllFailedWarning = "UserWarning: All requests failed. This is likely due to a " +
	"misconfiguration on the benchmark arguments.\n"

// pyInt is Python's int(x) of a float: truncation toward zero.
func pyInt(x float64) int64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return int64(x)
}
