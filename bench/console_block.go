package bench

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
// 50 characters.
const (
	labelWidth = 40
	valueWidth = 10
	blockWidth = 50
)

// metricSection is one percentile section of the report, in print order.
type metricSection struct {
	key    string // percentile-metrics name and JSON key infix
	name   string // in row labels
	header string
	stats  *metrics.Stats
}

// sections returns the metric sections the report prints, in Python's
// order, each only when selected in --percentile-metrics and its data
// exist: TTFT, TPOT and ITL need a generation run with a tokenizer, the
// queue sections need --max-concurrency (and, for the second, a finite
// request rate).
func sections(s *metrics.Summary, p *RunSettings) []metricSection {
	var all []metricSection
	if !s.Pooling && p.hasTokenizer() {
		all = append(all,
			metricSection{"ttft", "TTFT", "Time to First Token", &s.TTFT},
			metricSection{"tpot", "TPOT", "Time per Output Token (excl. 1st token)", &s.TPOT},
			metricSection{"itl", "ITL", "Inter-token Latency", &s.ITL})
	}
	all = append(all, metricSection{"e2el", "E2EL", "End-to-end Latency", &s.E2EL})
	if s.ClientQueueTime != nil {
		all = append(all, metricSection{"client_queue_time", "Client Queue Time", "Client-side Queueing", s.ClientQueueTime})
	}
	if s.E2ELInclQueue != nil {
		all = append(all, metricSection{"e2el_including_client_queue", "E2EL incl. Client Queue",
			"Queue-inclusive End-to-end Latency", s.E2ELInclQueue})
	}
	var out []metricSection
	for _, sec := range all {
		if p.selected(sec.key) {
			out = append(out, sec)
		}
	}
	return out
}

// consoleWriter prints Python's rows; the first write error sticks.
type consoleWriter struct {
	w *bufio.Writer
}

func (c consoleWriter) line(s string) {
	c.w.WriteString(s)
	c.w.WriteByte('\n')
}

func (c consoleWriter) header(title string, fill byte) {
	c.line(py.FormatCenter(title, fill, blockWidth))
}

// row is "{:<40} {:<10}".format(label, value) for an int or string.
func (c consoleWriter) row(label string, value any) {
	c.line(py.Left(label, labelWidth) + " " + py.Left(fmt.Sprint(value), valueWidth))
}

// rowF is "{:<40} {:<10.2f}".format(label, value).
func (c consoleWriter) rowF(label string, value float64) {
	c.line(py.Left(label, labelWidth) + " " + py.Left(py.Fixed(value, 2), valueWidth))
}

// fields prints side-report rows: integers as "{:<10}", floats as
// "{:<10.2f}".
func (c consoleWriter) fields(fs []sideField) {
	for _, f := range fs {
		switch v := f.value.(type) {
		case int64:
			c.row(f.label, v)
		case float64:
			c.rowF(f.label, v)
		}
	}
}

// sideField is one figure of a side report (probes, speculative or
// diffusion decoding): its console label, its result JSON key and its value,
// an int64 or a float64. The console rows and the JSON keys come in the
// same order.
type sideField struct {
	label, key string
	value      any
}

func probeFields(pr *metrics.ProbeStats) []sideField {
	return []sideField{
		{"Probe requests completed:", "probe_completed", int64(pr.Completed)},
		{"Probe requests failed:", "probe_failed", int64(pr.Failed)},
		{"Median probe E2EL (ms):", "probe_median_e2el_ms", pr.MedianE2ELMs},
		{"P99 probe E2EL (ms):", "probe_p99_e2el_ms", pr.P99E2ELMs},
		{"Max probe E2EL (ms):", "probe_max_e2el_ms", pr.MaxE2ELMs},
	}
}

// specDecodeFields leaves out the per-position rates, which the console
// prints as one row per position and the JSON as one list.
func specDecodeFields(sd *metrics.SpecDecodeStats) []sideField {
	return []sideField{
		{"Acceptance rate (%):", "spec_decode_acceptance_rate", sd.AcceptanceRate},
		{"Acceptance length:", "spec_decode_acceptance_length", sd.AcceptanceLength},
		{"Drafts:", "spec_decode_num_drafts", sd.NumDrafts},
		{"Draft tokens:", "spec_decode_draft_tokens", sd.DraftTokens},
		{"Accepted tokens:", "spec_decode_accepted_tokens", sd.AcceptedTokens},
	}
}

// diffusionFields prints and saves the denoising steps truncated, as
// Python's int() does.
func diffusionFields(df *metrics.DiffusionStats) []sideField {
	return []sideField{
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
	c := consoleWriter{bufio.NewWriter(w)}
	if !s.Pooling {
		if s.Failed > 0 {
			c.line("Failed requests during benchmark run detected (capping to 10):")
			for i, e := range s.Failures {
				c.line("Error " + strconv.Itoa(i) + ": " + TerminalText(e)) // the JSON keeps e as it is
			}
		}
		if s.Completed > 0 {
			// Python prints this whenever termplotlib is absent; the
			// console block stays byte-identical with it.
			c.line("tip: install termplotlib and gnuplot to plot the metrics")
		}
	}

	c.header(" Serving Benchmark Result ", '=')
	if p.Workers > 0 {
		c.row("Number of worker processes:", p.Workers)
	}
	c.row("Successful requests:", s.Completed)
	c.row("Failed requests:", s.Failed)
	if p.MaxConcurrency != 0 {
		c.row("Maximum request concurrency:", p.MaxConcurrency)
	}
	if !math.IsInf(p.RequestRate, 1) {
		c.rowF("Request rate configured (RPS):", p.RequestRate)
	}
	c.rowF("Benchmark duration (s):", s.DurationS)
	c.row("Total input tokens:", s.TotalInput)
	if !s.Pooling && p.hasTokenizer() {
		c.row("Total generated tokens:", s.TotalOutput)
	}
	c.rowF("Request throughput (req/s):", s.RequestThroughput)
	if s.Pooling {
		c.rowF("Input throughput (inputs/s):", s.InputSequenceThroughput)
	}
	if p.Goodput && !s.Pooling {
		c.rowF("Request goodput (req/s):", s.RequestGoodput)
	}
	if !s.Pooling {
		if p.hasTokenizer() {
			c.rowF("Output token throughput (tok/s):", s.OutputThroughput)
			c.rowF("Peak output token throughput (tok/s):", s.MaxOutputTokensPerS)
		}
		c.rowF("Peak concurrent requests:", float64(s.MaxConcurrentRequests))
		if s.RTFx > 0 {
			c.rowF("RTFx (Inverse Real-Time Factor):", s.RTFx)
		}
	}
	if p.hasTokenizer() {
		c.rowF("Total token throughput (tok/s):", s.TotalTokenThroughput)
	}

	if p.Probe != nil {
		c.header("Probe Requests", '-')
		c.fields(probeFields(p.Probe))
	}

	for _, sec := range sections(s, &p.RunSettings) {
		c.section(sec)
	}

	if p.Diffusion != nil {
		c.header("Diffusion Decoding", '-')
		c.fields(diffusionFields(p.Diffusion))
	} else if sd := p.SpecDecode; sd != nil {
		c.header("Speculative Decoding", '-')
		c.fields(specDecodeFields(sd))
		if len(sd.PerPositionAcceptanceRates) > 0 {
			c.line("Per-position acceptance (%):")
			for i, rate := range sd.PerPositionAcceptanceRates {
				c.rowF("  Position "+strconv.Itoa(i)+":", rate*100)
			}
		}
	}
	c.line(strings.Repeat("=", blockWidth))
	return c.w.Flush()
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
	_, err := io.WriteString(w, allFailedWarning)
	return err
}

// allFailedWarning is Python's warning when no request counted.
const allFailedWarning = "UserWarning: All requests failed. This is likely due to a " +
	"misconfiguration on the benchmark arguments.\n"

// pyInt is Python's int(x) of a float: truncation toward zero.
func pyInt(x float64) int64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return int64(x)
}
