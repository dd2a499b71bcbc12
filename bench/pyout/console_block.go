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
		all = append(all, TTFT.With(&s.TTFT), TPOT.With(&s.TPOT), ITL.With(&s.ITL))
	}
	all = append(all, E2EL.With(&s.E2EL))
	if s.ClientQueueTime != nil {
		all = append(all, ClientQueueTime.With(s.ClientQueueTime))
	}
	if s.E2ELInclQueue != nil {
		all = append(all, E2ELInclQueue.With(s.E2ELInclQueue))
	}
	var out []Section
	for _, sec := range all {
		if p.Selected(sec.Key) {
			out = append(out, sec)
		}
	}
	return out
}

// With is the section with its statistics.
func (sec Section) With(stats *metrics.Stats) Section {
	sec.Stats = stats
	return sec
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

// Figure prints figure f's row: "{:<10}" of an integer for a count,
// "{:<10.2f}" otherwise. v is an int or int64 for a count, else an int or
// float64.
func (c Console) Figure(f Figure, v any) {
	if f.Count {
		c.Row(f.Label(), v)
		return
	}
	switch v := v.(type) {
	case int:
		c.RowF(f.Label(), float64(v))
	case int64:
		c.RowF(f.Label(), float64(v))
	case float64:
		c.RowF(f.Label(), v)
	}
}

// Section prints one percentile section: its header, mean, median and the
// selected percentiles.
func (c Console) Section(sec Section) {
	c.Header(sec.Header, '-')
	c.RowF(sec.Figure(StatMean).Label(), sec.Stats.MeanMs)
	c.RowF(sec.Figure(StatMedian).Label(), sec.Stats.MedianMs)
	for _, pc := range sec.Stats.Percentiles {
		c.RowF(sec.Figure(StatPercentile(pc.P)).Label(), pc.ValueMs)
	}
}

// Fields prints side-report rows, in order.
func (c Console) Fields(fs []SideField) {
	for _, f := range fs {
		c.Figure(f.Figure, f.Value)
	}
}

// SideField is one figure of a side report (probes, speculative or
// diffusion decoding) and its value, an int64 for a count, else a
// float64. The console rows and the JSON keys come in the same order.
type SideField struct {
	Figure
	Value any
}

func probeFields(pr *metrics.ProbeStats) []SideField {
	return []SideField{
		{ProbeCompleted, int64(pr.Completed)},
		{ProbeFailed, int64(pr.Failed)},
		{ProbeMedianE2EL, pr.MedianE2ELMs},
		{ProbeP99E2EL, pr.P99E2ELMs},
		{ProbeMaxE2EL, pr.MaxE2ELMs},
	}
}

// specDecodeFields leaves out the per-position rates, which the console
// prints as one row per position and the JSON as one list.
func specDecodeFields(sd *metrics.SpecDecodeStats) []SideField {
	return []SideField{
		{SpecAcceptanceRate, sd.AcceptanceRate},
		{SpecAcceptanceLength, sd.AcceptanceLength},
		{SpecDrafts, sd.NumDrafts},
		{SpecDraftTokens, sd.DraftTokens},
		{SpecAcceptedTokens, sd.AcceptedTokens},
	}
}

// diffusionFields prints and saves the denoising steps truncated, as
// Python's int() does.
func diffusionFields(df *metrics.DiffusionStats) []SideField {
	return []SideField{
		{DiffusionCommittedThroughput, df.CommittedThroughput},
		{DiffusionStepsPerCanvas, df.StepsPerCanvas},
		{DiffusionCommittedPerStep, df.CommittedPerStep},
		{DiffusionCommittedTokens, df.CommittedTokens},
		{DiffusionDenoisingSteps, pyInt(df.DenoisingSteps)},
		{DiffusionCanvasPositions, df.CanvasPositions},
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
		c.Figure(WorkerProcesses, p.Workers)
	}
	c.Figure(Completed, s.Completed)
	c.Figure(Failed, s.Failed)
	if p.MaxConcurrency != 0 {
		c.Figure(MaxConcurrency, p.MaxConcurrency)
	}
	if !math.IsInf(p.RequestRate, 1) {
		c.Figure(RequestRateConfigured, p.RequestRate)
	}
	c.Figure(Duration, s.DurationS)
	c.Figure(TotalInputTokens, s.TotalInput)
	if !s.Pooling && p.HasTokenizer() {
		c.Figure(TotalOutputTokens, s.TotalOutput)
	}
	c.Figure(RequestThroughput, s.RequestThroughput)
	if s.Pooling {
		c.Figure(InputThroughput, s.InputSequenceThroughput)
	}
	if p.Goodput && !s.Pooling {
		c.Figure(RequestGoodput, s.RequestGoodput)
	}
	if !s.Pooling {
		if p.HasTokenizer() {
			c.Figure(OutputThroughput, s.OutputThroughput)
			c.Figure(PeakOutputThroughput, s.MaxOutputTokensPerS)
		}
		c.Figure(PeakConcurrentRequests, s.MaxConcurrentRequests)
		if s.RTFx > 0 {
			c.Figure(RTFx, s.RTFx)
		}
	}
	if p.HasTokenizer() {
		c.Figure(TotalTokenThroughput, s.TotalTokenThroughput)
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
			c.Line(SpecPerPositionAcceptance.Label())
			for i, rate := range sd.PerPositionAcceptanceRates {
				c.Figure(SpecPosition(i), rate*100)
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
