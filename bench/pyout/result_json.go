package pyout

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// DateLayout is the result's "date" key and file-name stamp, Python's
// strftime("%Y%m%d-%H%M%S") in local time.
const DateLayout = "20060102-150405"

// detailedKeys are removed from the result unless --save-detailed;
// "latencies" and "queue_times" stay, as in Python.
var detailedKeys = []string{
	"input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors",
}

// errMetadataFormat is Python's ValueError for a --metadata item without
// "=".
var errMetadataFormat = &py.Error{Type: "ValueError", Msg: "Invalid metadata format. Please use KEY=VALUE format."}

// CheckMetadata reports the first --metadata item without "=". Python
// builds the result dict, and so raises this, after every run, whether or
// not the result is saved.
func CheckMetadata(items []string) error {
	for _, item := range items {
		if !strings.Contains(item, "=") {
			return errMetadataFormat
		}
	}
	return nil
}

// Result is the result JSON of one run, keys in Python's order.
type Result struct {
	dict *py.Object
	// Date is the "date" value, also used in the file name.
	Date string
}

// MarshalJSON encodes the result exactly as Python's json.dump does.
func (r *Result) MarshalJSON() ([]byte, error) { return py.Dumps(r.dict) }

// WriteTo writes the result as MarshalJSON encodes it, a long run's lists
// streamed from its log as they are written.
func (r *Result) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	err := py.WriteJSON(cw, r.dict, &py.DefaultJSON)
	return cw.n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// BuildResult assembles the result JSON as Python's main_async does (spec
// §f): setup keys, --metadata items (each may replace a setup key in
// place), traffic keys, then the benchmark's own keys, optional side
// reports, one group per printed metric section, and finally, unless
// --save-detailed, without the per-request lists. now gives the "date".
// A malformed --metadata item is an error here, after the run, as in
// Python.
//
// The per-request lists are read from d's log as the result is written
// (WriteTo), output lengths counted as Compute counted them (countTokens,
// for the requests the log's sort did not count).
func BuildResult(s *metrics.Summary, d *metrics.RunData, p *ReportParams, countTokens func(string) int, now time.Time) (*Result, error) {
	res := py.NewObject()
	date := now.Format(DateLayout)
	res.Set("date", date)
	res.Set("endpoint_type", p.Backend)
	res.Set("backend", p.Backend)
	if p.Label != nil {
		res.Set("label", *p.Label)
	} else {
		res.Set("label", nil)
	}
	res.Set("model_id", p.ModelID)
	if p.TokenizerID != "" {
		res.Set("tokenizer_id", p.TokenizerID)
	} else {
		res.Set("tokenizer_id", nil)
	}
	res.Set("num_prompts", p.NumPrompts)

	for _, item := range p.Metadata {
		key, value, ok := strings.Cut(item, "=")
		if !ok {
			return nil, errMetadataFormat
		}
		res.Set(strings.TrimFunc(key, py.IsSpace), strings.TrimFunc(value, py.IsSpace))
	}

	if p.RequestRate < math.Inf(1) {
		res.Set(RequestRateConfigured.Key, p.RequestRate)
	} else {
		res.Set(RequestRateConfigured.Key, "inf")
	}
	res.Set("burstiness", p.Burstiness)
	if p.MaxConcurrency != 0 {
		res.Set(MaxConcurrency.Key, p.MaxConcurrency)
	} else {
		res.Set(MaxConcurrency.Key, nil)
	}
	if p.RampUpStrategy != "" {
		res.Set("ramp_up_strategy", p.RampUpStrategy)
		res.Set("ramp_up_start_rps", p.RampUpStartRPS)
		res.Set("ramp_up_end_rps", p.RampUpEndRPS)
	}

	res.Update(benchmarkResult(s, d, p, countTokens))

	if !p.SaveDetailed {
		for _, k := range detailedKeys {
			res.Delete(k)
		}
	}
	return &Result{dict: res, Date: date}, nil
}

// benchmarkResult is the dict Python's benchmark() returns.
func benchmarkResult(s *metrics.Summary, d *metrics.RunData, p *ReportParams, countTokens func(string) int) *py.Object {
	// The per-request lists are read from the run's log as the result is
	// written: each is a pass over it, and none is held whole.
	log := d.Log
	perRequest := func(f func(r *metrics.RequestResult) float64) py.Floats {
		return func(yield func(float64) bool) {
			for _, r := range log.All() {
				if !yield(f(r)) {
					return
				}
			}
		}
	}
	inputLens := py.Ints(func(yield func(int) bool) {
		for _, r := range log.All() {
			if !yield(r.PromptLen) {
				return
			}
		}
	})
	errs := py.Strings(func(yield func(string) bool) {
		for _, r := range log.All() {
			if !yield(r.Error) {
				return
			}
		}
	})
	latencies := perRequest(func(r *metrics.RequestResult) float64 { return metrics.Seconds(r.LatencyNs) })
	queueTimes := perRequest(func(r *metrics.RequestResult) float64 { return metrics.Seconds(r.QueueNs) })

	b := py.NewObject()
	b.Set(Duration.Key, s.DurationS)
	b.Set(Completed.Key, s.Completed)
	if s.Pooling {
		b.Set(TotalInputTokens.Key, s.TotalInput)
		b.Set(TotalInputSequences.Key, s.TotalInputSequences)
		b.Set(RequestThroughput.Key, s.RequestThroughput)
		b.Set(InputThroughput.Key, s.InputSequenceThroughput)
		b.Set(TotalTokenThroughput.Key, s.TotalTokenThroughput)
		b.Set("input_lens", inputLens)
		b.Set("latencies", latencies)
		b.Set("queue_times", queueTimes)
		b.Set("errors", errs)
	} else {
		// The per-token lists are only written for --save-detailed: the
		// key is dropped otherwise.
		itls := py.FloatsLists(func(yield func(py.Floats) bool) {
			for _, r := range log.All() {
				gaps := py.Floats(func(yield func(float64) bool) {
					for _, gap := range r.ITLNs {
						if !yield(metrics.Seconds(gap)) {
							return
						}
					}
				})
				if !yield(gaps) {
					return
				}
			}
		})
		texts := py.Strings(func(yield func(string) bool) {
			for _, r := range log.All() {
				if !yield(r.GeneratedText) {
					return
				}
			}
		})
		outputLens := py.Ints(func(yield func(int) bool) {
			for _, r := range log.All() {
				if !yield(r.OutputLen(countTokens)) {
					return
				}
			}
		})
		b.Set(Failed.Key, s.Failed)
		b.Set(TotalInputTokens.Key, s.TotalInput)
		b.Set(TotalOutputTokens.Key, s.TotalOutput)
		b.Set(RequestThroughput.Key, s.RequestThroughput)
		if p.Goodput {
			b.Set(RequestGoodput.Key, s.RequestGoodput)
		} else {
			b.Set(RequestGoodput.Key, nil)
		}
		b.Set(OutputThroughput.Key, s.OutputThroughput)
		b.Set(TotalTokenThroughput.Key, s.TotalTokenThroughput)
		b.Set("input_lens", inputLens)
		b.Set("output_lens", outputLens)
		b.Set("ttfts", perRequest(func(r *metrics.RequestResult) float64 { return metrics.Seconds(r.TTFTNs) }))
		b.Set("itls", itls)
		b.Set("latencies", latencies)
		b.Set("start_times", perRequest(func(r *metrics.RequestResult) float64 { return metrics.Seconds(r.StartNs) }))
		b.Set("queue_times", queueTimes)
		b.Set("generated_texts", texts)
		b.Set("errors", errs)
		b.Set(PeakOutputThroughput.Key, s.MaxOutputTokensPerS)
		b.Set(PeakConcurrentRequests.Key, s.MaxConcurrentRequests)
		b.Set(RTFx.Key, s.RTFx)
	}

	setFields := func(fs []SideField) {
		for _, f := range fs {
			b.Set(f.Key, f.Value)
		}
	}
	if p.Probe != nil {
		setFields(probeFields(p.Probe))
	}
	if len(p.RPSChangeEvents) > 0 {
		events := make([]*py.Object, len(p.RPSChangeEvents))
		for i, e := range p.RPSChangeEvents {
			events[i] = py.NewObject()
			events[i].Set("rps", e.RPS)
			events[i].Set("timestamp", e.Timestamp)
		}
		b.Set("rps_change_events", events)
	}
	if sd := p.SpecDecode; sd != nil {
		setFields(specDecodeFields(sd))
		rates := sd.PerPositionAcceptanceRates
		if rates == nil {
			rates = []float64{}
		}
		b.Set(SpecPerPositionAcceptance.Key, rates)
	}
	if p.Diffusion != nil {
		setFields(diffusionFields(p.Diffusion))
	}
	for _, sec := range Sections(s, &p.RunSettings) {
		b.Set(sec.Figure(StatMean).Key, sec.Stats.MeanMs)
		b.Set(sec.Figure(StatMedian).Key, sec.Stats.MedianMs)
		b.Set(sec.Figure(StatStd).Key, sec.Stats.StdMs)
		for _, pc := range sec.Stats.Percentiles {
			b.Set(sec.Figure(StatPercentile(pc.P)).Key, pc.ValueMs)
		}
	}
	return b
}

// ResultFilename returns the result file's path, "" when nothing is saved
// (neither --save-result, --append-result nor --plot-timeline). The name
// is Python's:
//
//	{label}-{request_rate}qps[-concurrency{N}]-{model base}-{date}.json
//	{label}-ramp-up-{strategy}-{start}qps-{end}qps[-concurrency{N}]-{model base}-{date}.json
//
// with label = --label or --backend, the rate as Python's str(float)
// ("inf", "10.0") and the model base the text after the last "/" of the
// model id. --result-filename replaces the whole name; --result-dir is
// created (with parents) and joined in front, as os.path.join does.
func ResultFilename(p *RunSettings, date string) (string, error) {
	if !(p.PlotTimeline || p.SaveResult || p.AppendResult) {
		return "", nil
	}
	base := p.ModelID[strings.LastIndex(p.ModelID, "/")+1:]
	conc := ""
	if p.MaxConcurrency != 0 {
		conc = "-concurrency" + strconv.Itoa(p.MaxConcurrency)
	}
	label := p.Backend
	if p.Label != nil && *p.Label != "" {
		label = *p.Label
	}
	var name string
	if p.RampUpStrategy != "" {
		name = fmt.Sprintf("%s-ramp-up-%s-%dqps-%dqps%s-%s-%s.json",
			label, p.RampUpStrategy, p.RampUpStartRPS, p.RampUpEndRPS, conc, base, date)
	} else {
		name = fmt.Sprintf("%s-%sqps%s-%s-%s.json",
			label, py.FloatRepr(p.RequestRate), conc, base, date)
	}
	if p.ResultFilename != "" {
		name = p.ResultFilename
	}
	if p.ResultDir != "" {
		if err := os.MkdirAll(p.ResultDir, 0o777); err != nil {
			return "", fmt.Errorf("--result-dir %s: %w", p.ResultDir, err)
		}
		name = py.PathJoin(p.ResultDir, name)
	}
	return name, nil
}

// SaveResult writes the result JSON to path: truncating the file, or with
// --append-result appending to it, after a "\n" when it is not empty (one
// JSON document per line). No newline follows the JSON, as in Python.
func SaveResult(path string, r *Result, appendResult bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendResult {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o666)
	if err != nil {
		return fmt.Errorf("result file: %w", err)
	}
	if appendResult {
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("result file: %w", err)
		}
		if info.Size() != 0 {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				f.Close()
				return fmt.Errorf("result file %s: %w", path, err)
			}
		}
	}
	w := bufio.NewWriterSize(f, 256<<10)
	if _, err := r.WriteTo(w); err != nil {
		f.Close()
		return fmt.Errorf("result file %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("result file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("result file %s: %w", path, err)
	}
	return nil
}
