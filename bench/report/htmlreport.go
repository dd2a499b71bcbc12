package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// The HTML report (--report FILE.html, `stampede report RESULT.json...`)
// reads a run the way it was saved: Python's result JSON (with
// --save-detailed for the per-request arrays) and stampede's sidecar
// beside it. A live run is turned into the same JSON first, so a report
// written during a run and one written later from its files are the same.

// ReportRun is one run as the report reads it.
type ReportRun struct {
	// Name labels the run (its file name).
	Name string
	// Result is Python's result JSON, decoded (NaN and Infinity read as
	// null).
	Result map[string]any
	// Sidecar holds the sidecar's keys, undecoded; Server its
	// "server_metrics".
	Sidecar map[string]json.RawMessage
	Server  *ServerMetrics
}

// requests is the per-request view of a detailed result.
type reportRequests struct {
	starts, ttfts, latencies []float64 // seconds
	itls                     [][]float64
	inLens, outLens          []int
	errors                   []string
}

// LoadReportRuns reads a result file (one run, or one per line of an
// --append-result file) and its sidecar when there is one.
func LoadReportRuns(path string) ([]*ReportRun, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var sidecar []byte
	if b, err := os.ReadFile(SidecarPath(path)); err == nil {
		sidecar = b
	}
	var runs []*ReportRun
	lines := bytes.Split(bytes.TrimSpace(body), []byte("\n"))
	if len(lines) > 1 && bytes.HasPrefix(bytes.TrimSpace(lines[1]), []byte("{")) {
		// --append-result: one result per line, and the sidecar gets one
		// line per result too.
		sides := bytes.Split(bytes.TrimSpace(sidecar), []byte("\n"))
		if len(sides) != len(lines) {
			sides = nil
		}
		for i, line := range lines {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var side []byte
			if sides != nil {
				side = sides[i]
			}
			r, err := ParseReportRun(fmt.Sprintf("%s #%d", path, i+1), line, side)
			if err != nil {
				return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
			}
			runs = append(runs, r)
		}
		return runs, nil
	}
	r, err := ParseReportRun(path, body, sidecar)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return []*ReportRun{r}, nil
}

// ParseReportRun reads one result JSON document and its sidecar (nil
// when absent).
func ParseReportRun(name string, result, sidecar []byte) (*ReportRun, error) {
	r := &ReportRun{Name: name}
	if err := json.Unmarshal(py.NullNonFinite(result), &r.Result); err != nil {
		return nil, fmt.Errorf("not a result JSON: %w", err)
	}
	if r.Result == nil {
		return nil, errors.New("not a result JSON: want an object")
	}
	if _, ok := r.Result["duration"]; !ok {
		return nil, errors.New(`not a vllm bench serve result: no "duration"`)
	}
	if len(sidecar) > 0 {
		if err := json.Unmarshal(sidecar, &r.Sidecar); err != nil {
			return nil, fmt.Errorf("sidecar: %w", err)
		}
		if raw, ok := r.Sidecar["server_metrics"]; ok && string(raw) != "null" {
			r.Server = new(ServerMetrics)
			if err := json.Unmarshal(raw, r.Server); err != nil {
				return nil, fmt.Errorf("sidecar server_metrics: %w", err)
			}
		}
	}
	return r, nil
}

func (r *ReportRun) number(key string) (float64, bool) {
	v, ok := r.Result[key].(float64)
	return v, ok
}

func floats(v any) []float64 {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]float64, len(list))
	for i, x := range list {
		if f, ok := x.(float64); ok {
			out[i] = f
		} else {
			out[i] = math.NaN()
		}
	}
	return out
}

// requests returns the per-request arrays; nil when the result was not
// saved with --save-detailed.
func (r *ReportRun) requests() *reportRequests {
	q := &reportRequests{
		starts: floats(r.Result["start_times"]), ttfts: floats(r.Result["ttfts"]),
		latencies: floats(r.Result["latencies"]),
	}
	n := len(q.latencies)
	if n == 0 {
		return nil
	}
	if len(q.starts) != n {
		q.starts = nil
	}
	if len(q.ttfts) != n {
		q.ttfts = nil
	}
	if list, ok := r.Result["itls"].([]any); ok && len(list) == n {
		q.itls = make([][]float64, n)
		for i, x := range list {
			q.itls[i] = floats(x)
		}
	}
	ints := func(key string) []int {
		fs := floats(r.Result[key])
		if len(fs) != n {
			return nil
		}
		out := make([]int, n)
		for i, f := range fs {
			if !math.IsNaN(f) {
				out[i] = int(f)
			}
		}
		return out
	}
	q.inLens, q.outLens = ints("input_lens"), ints("output_lens")
	if list, ok := r.Result["errors"].([]any); ok && len(list) == n {
		q.errors = make([]string, n)
		for i, x := range list {
			q.errors[i], _ = x.(string)
		}
	}
	return q
}

func (q *reportRequests) ok(i int) bool {
	return q.errors == nil || q.errors[i] == ""
}

// distributions are the per-request latencies in ms by section key, as
// the console block's statistics take them: TTFT, E2EL and TPOT over
// successes (TPOT of those with more than one output token), ITL over
// every gap.
func (q *reportRequests) distributions() map[string][]float64 {
	d := map[string][]float64{}
	for i := range q.latencies {
		if !q.ok(i) {
			continue
		}
		if q.ttfts != nil {
			d[pyout.TTFT.Key] = append(d[pyout.TTFT.Key], q.ttfts[i]*1000)
		}
		d[pyout.E2EL.Key] = append(d[pyout.E2EL.Key], q.latencies[i]*1000)
		if q.ttfts != nil && q.outLens != nil && q.outLens[i] > 1 {
			d[pyout.TPOT.Key] = append(d[pyout.TPOT.Key], (q.latencies[i]-q.ttfts[i])/float64(q.outLens[i]-1)*1000)
		}
		if q.itls != nil {
			for _, g := range q.itls[i] {
				d[pyout.ITL.Key] = append(d[pyout.ITL.Key], g*1000)
			}
		}
	}
	for k, v := range d {
		v = slices.DeleteFunc(v, func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) })
		slices.Sort(v)
		d[k] = v
	}
	return d
}

// runData rebuilds the engine's view of the run for the timeline. With
// compact, each request's gaps are one gap as long as all of them, and
// gaps[i] says how many request i had.
func (q *reportRequests) runData(compact bool) (d *metrics.RunData, gaps []int) {
	if q.starts == nil || q.ttfts == nil {
		return nil, nil
	}
	ns := func(s float64) int64 {
		if math.IsNaN(s) {
			return 0
		}
		return int64(math.Round(s * 1e9))
	}
	b := metrics.NewLogBuilder(metrics.LogConfig{})
	gaps = make([]int, len(q.latencies))
	for i := range q.latencies {
		rr := &metrics.RequestResult{}
		rr.Index, rr.Success = i, q.ok(i)
		if q.errors != nil {
			rr.Error = q.errors[i]
		}
		rr.StartNs, rr.TTFTNs, rr.LatencyNs = ns(q.starts[i]), ns(q.ttfts[i]), ns(q.latencies[i])
		if rr.StartNs == 0 {
			rr.StartNs = 1 // Sent(): a request at the clock's origin was sent too
		}
		if q.inLens != nil {
			rr.PromptLen = q.inLens[i]
		}
		if q.outLens != nil {
			rr.OutputTokens = q.outLens[i]
		}
		if rr.Success {
			rr.ChunkEvents = 1
			rr.ITLNs = []int64{}
			if q.itls != nil {
				for _, g := range q.itls[i] {
					rr.ITLNs = append(rr.ITLNs, ns(g))
				}
				rr.ChunkEvents += len(q.itls[i])
			}
			if compact && len(rr.ITLNs) > 0 {
				var total int64
				for _, g := range rr.ITLNs {
					total += g
				}
				gaps[i] = len(rr.ITLNs)
				rr.ITLNs = []int64{total}
				rr.ChunkEvents = 2
			}
		}
		b.Append(rr)
	}
	return &metrics.RunData{Log: b.Log()}, gaps
}

// events is how many points the timeline would draw: one a request and
// one a gap.
func (q *reportRequests) events() int {
	n := len(q.latencies)
	for i := range q.latencies {
		if q.ok(i) && q.itls != nil {
			n += len(q.itls[i])
		}
	}
	return n
}

// reportTimeSpan is the time axis every over-time chart of a run shares:
// the requests' span and the server's scrapes, in seconds of run time.
func reportTimeSpan(q *reportRequests, s *ServerMetrics) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	if q != nil && q.starts != nil {
		for i, st := range q.starts {
			if math.IsNaN(st) {
				continue
			}
			lo, hi = min(lo, st), max(hi, st+nanTo0(q.latencies[i]))
		}
	}
	if s != nil {
		for _, ser := range s.Series {
			if n := len(ser.T); n > 0 {
				lo, hi = min(lo, ser.T[0]), max(hi, ser.T[n-1])
			}
		}
	}
	if math.IsInf(lo, 1) {
		return 0, 1
	}
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

func nanTo0(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// sidecarSection decodes the sidecar's key into dst, a section's type;
// false when the key is absent, null or not of that shape.
func (r *ReportRun) sidecarSection(key string, dst any) bool {
	raw, ok := r.Sidecar[key]
	return ok && string(raw) != "null" && json.Unmarshal(raw, dst) == nil
}

// sidecarObject decodes one sidecar key as a JSON object; nil when
// absent or not an object.
func (r *ReportRun) sidecarObject(key string) map[string]any {
	raw, ok := r.Sidecar[key]
	if !ok {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// steadyWindow is the steady-state window from the sidecar, when one was
// found: its bounds in seconds of run time.
func (r *ReportRun) steadyWindow() *[2]float64 {
	m := r.sidecarObject("steady_state")
	if m == nil {
		return nil
	}
	for _, keys := range [][2]string{{"start_s", "end_s"}, {"from_s", "to_s"}, {"window_start_s", "window_end_s"}} {
		a, okA := m[keys[0]].(float64)
		z, okZ := m[keys[1]].(float64)
		if okA && okZ && z > a {
			return &[2]float64{a, z}
		}
	}
	return nil
}

// reportFigures are the figures of the result block the report's summary
// shows, in the block's order, each when the result holds it as a number.
var reportFigures = []pyout.Figure{
	pyout.Completed, pyout.Failed, pyout.MaxConcurrency, pyout.Duration,
	pyout.TotalInputTokens, pyout.TotalOutputTokens, pyout.RequestThroughput, pyout.RequestGoodput,
	pyout.OutputThroughput, pyout.PeakOutputThroughput, pyout.PeakConcurrentRequests, pyout.TotalTokenThroughput,
}

// reportLatencies are the latency sections the report summarises and
// draws.
var reportLatencies = []pyout.Section{pyout.TTFT, pyout.TPOT, pyout.ITL, pyout.E2EL}

// summaryRow is one figure of a run's result as the summary shows it:
// the value as the console block prints it (counts whole, the rest to
// two decimals), and for a latency statistic its section and statistic.
type summaryRow struct {
	figure  pyout.Figure
	section *pyout.Section
	stat    pyout.Statistic
	value   string
}

// summaryRows are the result block's figures, from the result's keys, in
// the block's order: the counts and throughputs, then per latency its
// mean, median and percentiles by ascending percentile.
func (r *ReportRun) summaryRows() []summaryRow {
	var rows []summaryRow
	add := func(f pyout.Figure, sec *pyout.Section, st pyout.Statistic) {
		v, ok := r.number(f.Key)
		if !ok {
			return
		}
		text := py.Fixed(v, 2)
		if f.Count {
			text = fmt.Sprintf("%.0f", v)
		}
		rows = append(rows, summaryRow{f, sec, st, text})
	}
	for _, f := range reportFigures {
		add(f, nil, pyout.Statistic{})
	}
	for i := range reportLatencies {
		sec := &reportLatencies[i]
		add(sec.Figure(pyout.StatMean), sec, pyout.StatMean)
		add(sec.Figure(pyout.StatMedian), sec, pyout.StatMedian)
		var ps []float64
		for k := range r.Result {
			if p, ok := sec.PercentileOfKey(k); ok {
				ps = append(ps, p)
			}
		}
		slices.Sort(ps)
		for _, p := range ps {
			st := pyout.StatPercentile(p)
			add(sec.Figure(st), sec, st)
		}
	}
	return rows
}
