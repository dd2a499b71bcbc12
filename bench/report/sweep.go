package report

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// A sweep's and --num-runs' outputs: sweep.json and sweep.csv (the
// summary bench.Sweep saves after each point and the HTML report reads),
// the sweep's table, and the spread of a point's runs. bench/sweep.go
// says how a sweep runs.

// SweepFileJSON and SweepFileCSV are the sweep's summary files.
const (
	SweepFileJSON = "sweep.json"
	SweepFileCSV  = "sweep.csv"
)

// SweepAxis is one --sweep FLAG=V1,V2,...: a serve flag and its values.
type SweepAxis struct {
	Flag   string   `json:"flag"`
	Values []string `json:"values"`
}

// SweepSetting is one flag's value at a point.
type SweepSetting struct {
	Flag  string `json:"flag"`
	Value string `json:"value"`
}

// SweepRow is one finished point.
type SweepRow struct {
	// Point names the point: its settings as FLAG=V joined with commas.
	Point    string         `json:"point"`
	Settings []SweepSetting `json:"settings"`
	// Files are the result JSON files of the point's runs.
	Files []string `json:"result_files"`
	// Runs are each run's figures; Metrics their mean.
	Runs    []PointMetrics `json:"runs"`
	Metrics PointMetrics   `json:"metrics"`
	// Spread is each figure's spread over the runs, with two or more.
	Spread map[string]SpreadJSON `json:"spread,omitempty"`
}

// SweepResult is the content of sweep.json.
type SweepResult struct {
	Axes    []SweepAxis `json:"axes"`
	NumRuns int         `json:"num_runs"`
	// SummaryPercentiles are --sweep-summary-percentiles: the table's
	// extra columns, after the headline figures.
	SummaryPercentiles []float64  `json:"summary_percentiles,omitempty"`
	Rows               []SweepRow `json:"rows"`
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
	// Extra are the Rust client's --sweep-summary-percentiles figures, by
	// ExtraKey ("p90_ttft_ms"); absent without the option.
	Extra map[string]float64 `json:"extra_percentiles,omitempty"`
}

// ExtraMetrics are the latencies --sweep-summary-percentiles adds a
// column of per percentile, in column order.
var ExtraMetrics = []string{"ttft", "tpot", "e2el"}

// ExtraKey names one --sweep-summary-percentiles figure: "p90_ttft_ms",
// with the percentile written as Python's result JSON writes its keys.
func ExtraKey(metric string, p float64) string {
	return "p" + pyout.PercentileWord(p) + "_" + metric + "_ms"
}

// extraFigures are the table's --sweep-summary-percentiles columns.
func extraFigures(ps []float64) []pointFigure {
	var out []pointFigure
	for _, p := range ps {
		for _, m := range ExtraMetrics {
			key := ExtraKey(m, p)
			out = append(out, pointFigure{strings.ToUpper(m) + " p" + pyout.PercentileWord(p), key, func(pm *PointMetrics) float64 {
				if v, ok := pm.Extra[key]; ok {
					return v
				}
				return math.NaN()
			}})
		}
	}
	return out
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

// MeanPoint is the figures' mean over runs.
func MeanPoint(runs []PointMetrics) PointMetrics {
	if len(runs) == 1 {
		return runs[0]
	}
	var m PointMetrics
	if len(runs) == 0 {
		return m
	}
	n := float64(len(runs))
	var good, att float64
	for _, r := range runs {
		m.Completed += r.Completed
		m.Failed += r.Failed
		for _, f := range [][2]*float64{
			{&m.RequestThroughput, &r.RequestThroughput}, {&m.OutputThroughput, &r.OutputThroughput},
			{&m.TTFTP50, &r.TTFTP50}, {&m.TTFTP99, &r.TTFTP99}, {&m.TPOTP50, &r.TPOTP50}, {&m.TPOTP99, &r.TPOTP99},
			{&m.ITLP50, &r.ITLP50}, {&m.ITLP99, &r.ITLP99}, {&m.E2ELP50, &r.E2ELP50}, {&m.E2ELP99, &r.E2ELP99},
		} {
			*f[0] += *f[1] / n
		}
		good += orNaN(r.RequestGoodput) / n
		att += orNaN(r.Attainment) / n
		for k, v := range r.Extra {
			if m.Extra == nil {
				m.Extra = map[string]float64{}
			}
			m.Extra[k] += v / n
		}
	}
	m.Completed /= len(runs)
	m.Failed /= len(runs)
	if !math.IsNaN(good) {
		m.RequestGoodput = &good
	}
	if !math.IsNaN(att) {
		m.Attainment = &att
	}
	return m
}

// SpreadJSON is a metrics.Spread whose NaNs (one run) are written null.
type SpreadJSON struct {
	N      int      `json:"n"`
	Mean   *float64 `json:"mean"`
	StdDev *float64 `json:"stddev"`
	CILow  *float64 `json:"ci95_low"`
	CIHigh *float64 `json:"ci95_high"`
	CV     *float64 `json:"cv"`
}

// SpreadsJSON is m for sweep.json.
func SpreadsJSON(m map[string]metrics.Spread) map[string]SpreadJSON {
	num := func(f float64) *float64 {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return &f
	}
	out := make(map[string]SpreadJSON, len(m))
	for k, s := range m {
		out[k] = SpreadJSON{N: s.N, Mean: num(s.Mean), StdDev: num(s.StdDev), CILow: num(s.CILow), CIHigh: num(s.CIHigh), CV: num(s.CV)}
	}
	return out
}

// SpreadOfPoints is the spread of every headline figure over runs, by
// figure name; figures absent from the runs (goodput without --goodput)
// are left out.
func SpreadOfPoints(runs []PointMetrics) map[string]metrics.Spread {
	out := map[string]metrics.Spread{}
	for _, f := range pointFigures {
		var xs []float64
		for i := range runs {
			if v := f.get(&runs[i]); !math.IsNaN(v) {
				xs = append(xs, v)
			}
		}
		if len(xs) > 0 {
			out[f.key] = metrics.SpreadOf(xs)
		}
	}
	return out
}

// WriteSpread prints, after a title, one line per headline figure: the
// mean, the 95 % confidence interval of the mean (Student's t with n − 1
// degrees of freedom) and the coefficient of variation over the runs.
func WriteSpread(w io.Writer, title string, runs []PointMetrics) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s\n", py.FormatCenter(" "+title+" ", '=', pyout.BlockWidth))
	if len(runs) < 2 {
		fmt.Fprintln(bw, "(fewer than two finished runs: no spread)")
		return bw.Flush()
	}
	spreads := SpreadOfPoints(runs)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tmean\t95% CI\tCV\t")
	for _, f := range pointFigures {
		s, ok := spreads[f.key]
		if !ok {
			continue
		}
		fmt.Fprintf(tw, "%s\t%.2f\t[%.2f, %.2f]\t%.1f%%\t\n", f.name, s.Mean, s.CILow, s.CIHigh, 100*s.CV)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(bw, strings.Repeat("=", pyout.BlockWidth))
	return bw.Flush()
}

// LoadSweep reads a saved sweep.json.
func LoadSweep(path string) (*SweepResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r SweepResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Save writes sweep.json and sweep.csv in dir, each through a temporary
// file renamed into place, so an interrupt never leaves half a file.
func (r *SweepResult) Save(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(filepath.Join(dir, SweepFileJSON), append(b, '\n')); err != nil {
		return err
	}
	var sb strings.Builder
	cw := csv.NewWriter(&sb)
	if err := cw.WriteAll(r.records(false)); err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, SweepFileCSV), []byte(sb.String()))
}

// WriteFileAtomic writes b to path through a temporary file renamed into
// place, so an interrupt never leaves half a file.
func WriteFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o666); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// records is the table: a header, then one record per row. forPeople
// selects the short column names and two decimals.
func (r *SweepResult) records(forPeople bool) [][]string {
	figures := append(append([]pointFigure(nil), pointFigures...), extraFigures(r.SummaryPercentiles)...)
	var head []string
	for _, a := range r.Axes {
		head = append(head, a.Flag)
	}
	if r.NumRuns > 1 {
		head = append(head, "runs")
	}
	for _, f := range figures {
		if forPeople {
			head = append(head, f.name)
		} else {
			head = append(head, f.key)
		}
	}
	out := [][]string{head}
	for _, row := range r.Rows {
		var rec []string
		for _, s := range row.Settings {
			rec = append(rec, s.Value)
		}
		if r.NumRuns > 1 {
			rec = append(rec, strconv.Itoa(len(row.Runs)))
		}
		for _, f := range figures {
			v := f.get(&row.Metrics)
			switch {
			case math.IsNaN(v) && forPeople:
				rec = append(rec, "-")
			case math.IsNaN(v):
				rec = append(rec, "")
			case forPeople:
				rec = append(rec, strconv.FormatFloat(v, 'f', 2, 64))
			default:
				rec = append(rec, strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		out = append(out, rec)
	}
	return out
}

// WriteTable prints the summary: one row per point, the swept values
// then the headline figures (latencies in ms).
func (r *SweepResult) WriteTable(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, py.FormatCenter(" Sweep Summary ", '=', pyout.BlockWidth))
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, rec := range r.records(true) {
		fmt.Fprintln(tw, strings.Join(rec, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}
