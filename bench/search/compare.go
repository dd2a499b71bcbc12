package search

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// Compare reads result JSON files, Python's or stampede's (they are the
// same format), and says per metric how each differs from the first.
//
// Each argument is one side of the comparison: a file, or several files
// joined with commas (repeated runs of one setting, such as --num-runs
// writes); a file written with --append-result holds one run per line and
// counts as repeated runs too. A side's value of a metric is the mean over
// its runs.
//
// Whether a difference is significant is decided, per metric family, with
// the strongest evidence both sides carry:
//
//   - per request: when both sides have the per-request samples of a
//     family (TTFT from "ttfts", TPOT from "ttfts", "latencies" and
//     "output_lens", ITL from the flattened "itls" — those need
//     --save-detailed — and E2EL from "latencies", which is always saved),
//     the two-sided Mann–Whitney U test on the successful requests'
//     values, pooled over a side's runs (metrics.MannWhitneyU: normal
//     approximation with tie and continuity correction). Its verdict
//     applies to every statistic of the family (mean, median, std, pN).
//   - run level: otherwise, with at least two runs on each side, Welch's
//     t test on the runs' values of that metric (metrics.WelchT).
//   - neither: no test ("-").
//
// A large sample makes a tiny shift significant (two runs of one setting
// on a busy host differ by a fraction of a percent), so a difference is
// reported as real ("yes") only when p < alpha and the relative change
// (of the family's median for per-request tests, of the mean otherwise)
// is at least minEffect.
type CompareOptions struct {
	// Alpha is the significance level (default 0.05).
	Alpha float64
	// MinEffect is the smallest relative change called a difference
	// (default 0.02, 2 %).
	MinEffect float64
}

// resultRun is one run's result JSON read back.
type resultRun struct {
	keys    []string
	values  map[string]float64
	samples map[string][]float64 // family → per-request values in ms
}

// CompareSide is one argument of compare: its runs.
type CompareSide struct {
	Name string
	runs []*resultRun
}

// ComparisonRow is one metric across the sides.
type ComparisonRow struct {
	Metric string `json:"metric"`
	// Values has one entry per side, the mean over its runs; null where a
	// side lacks the metric.
	Values []*float64 `json:"values"`
	// Versus has one entry per side after the first.
	Versus []CompareCell `json:"versus_first"`
}

// CompareCell is one side's difference from the first side.
type CompareCell struct {
	Delta    *float64 `json:"delta"`
	DeltaPct *float64 `json:"delta_pct"`
	// Test is "mann-whitney" (per request), "welch" (run level) or "".
	Test string `json:"test"`
	// P is the test's p-value; null without a test.
	P *float64 `json:"p"`
	// Significant is p < alpha and a change of at least the minimum
	// effect.
	Significant bool `json:"significant"`
}

// Comparison is compare's whole answer; Write prints it as a table.
type Comparison struct {
	Files     []string        `json:"files"`
	Runs      []int           `json:"runs"`
	Alpha     float64         `json:"alpha"`
	MinEffect float64         `json:"min_effect"`
	Rows      []ComparisonRow `json:"rows"`
}

// sampleFamilies are the metric families with per-request samples.
var sampleFamilies = []string{"ttft", "tpot", "itl", "e2el"}

// sampleMedianKey names the row of a family's per-request median.
func sampleMedianKey(family string) string { return "sample_median_" + family + "_ms" }

// familyOf is the sample family a result key belongs to, "" for none.
func familyOf(key string) string {
	for _, f := range sampleFamilies {
		if strings.HasSuffix(key, "_"+f+"_ms") {
			return f
		}
	}
	return ""
}

// LoadCompareSide reads one argument of compare: comma-separated paths,
// each holding one or more result JSON documents.
func LoadCompareSide(arg string) (*CompareSide, error) {
	side := &CompareSide{Name: arg}
	for _, path := range strings.Split(arg, ",") {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		runs, err := parseResultRuns(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		side.runs = append(side.runs, runs...)
	}
	return side, nil
}

// parseResultRuns reads the result documents of one file (several with
// --append-result, one per line).
func parseResultRuns(data []byte) ([]*resultRun, error) {
	dec := json.NewDecoder(bytes.NewReader(py.NullNonFinite(data)))
	var runs []*resultRun
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not a result JSON: %w", err)
		}
		r, err := parseResultRun(raw)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("no result in the file")
	}
	return runs, nil
}

func parseResultRun(raw json.RawMessage) (*resultRun, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("a result JSON is an object")
	}
	r := &resultRun{values: map[string]float64{}, samples: map[string][]float64{}}
	lists := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		var f float64
		switch {
		case len(v) > 0 && v[0] == '[':
			lists[key] = v
		case json.Unmarshal(v, &f) == nil && !bytes.Equal(v, []byte("null")):
			r.keys = append(r.keys, key)
			r.values[key] = f
		}
	}
	if err := r.readSamples(lists); err != nil {
		return nil, err
	}
	return r, nil
}

// readSamples derives the per-request samples (ms) of the successful
// requests from the lists a result holds.
func (r *resultRun) readSamples(lists map[string]json.RawMessage) error {
	var ttfts, latencies []float64
	var outputLens []int
	var errs []string
	var itls [][]float64
	for _, l := range []struct {
		key string
		dst any
	}{
		{"ttfts", &ttfts}, {"latencies", &latencies}, {"output_lens", &outputLens},
		{"errors", &errs}, {"itls", &itls},
	} {
		if raw, ok := lists[l.key]; ok {
			if err := json.Unmarshal(raw, l.dst); err != nil {
				return fmt.Errorf("%q: %w", l.key, err)
			}
		}
	}
	// A success has an empty error; without the errors list, a failure
	// is a request without latency (Python records 0.0 for it).
	ok := func(i int, latency float64) bool {
		if errs != nil {
			return i < len(errs) && errs[i] == ""
		}
		return latency > 0
	}
	lat := func(i int) float64 {
		if i < len(latencies) {
			return latencies[i]
		}
		return 0
	}
	for i, v := range latencies {
		if ok(i, v) {
			r.samples["e2el"] = append(r.samples["e2el"], v*1000)
		}
	}
	for i, v := range ttfts {
		if !ok(i, lat(i)) {
			continue
		}
		r.samples["ttft"] = append(r.samples["ttft"], v*1000)
		if i < len(outputLens) && outputLens[i] > 1 && i < len(latencies) {
			r.samples["tpot"] = append(r.samples["tpot"], (latencies[i]-v)/float64(outputLens[i]-1)*1000)
		}
	}
	for i, gaps := range itls {
		if !ok(i, lat(i)) {
			continue
		}
		for _, g := range gaps {
			r.samples["itl"] = append(r.samples["itl"], g*1000)
		}
	}
	return nil
}

// values are the side's values of key, one per run that has it.
func (s *CompareSide) values(key string) []float64 {
	for _, f := range sampleFamilies {
		if key == sampleMedianKey(f) {
			if v := s.samples(f); len(v) > 0 {
				return []float64{median(v)}
			}
			return nil
		}
	}
	var out []float64
	for _, r := range s.runs {
		if v, ok := r.values[key]; ok {
			out = append(out, v)
		}
	}
	return out
}

// samples pools the side's per-request values of a family; nil unless
// every run has them.
func (s *CompareSide) samples(family string) []float64 {
	var out []float64
	for _, r := range s.runs {
		v, ok := r.samples[family]
		if !ok {
			return nil
		}
		out = append(out, v...)
	}
	return out
}

// Compare builds the comparison of sides against the first.
func Compare(sides []*CompareSide, opts CompareOptions) *Comparison {
	if opts.Alpha == 0 {
		opts.Alpha = 0.05
	}
	if opts.MinEffect == 0 {
		opts.MinEffect = 0.02
	}
	c := &Comparison{Alpha: opts.Alpha, MinEffect: opts.MinEffect}
	var keys []string
	for _, s := range sides {
		c.Files = append(c.Files, s.Name)
		c.Runs = append(c.Runs, len(s.runs))
		for _, r := range s.runs {
			for _, k := range r.keys {
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
	}
	// One test per family and pair of sides, shared by its rows.
	type pair struct {
		family string
		side   int
	}
	perRequest := map[pair]*metrics.MannWhitney{}
	shift := map[pair]float64{}
	for i := 1; i < len(sides); i++ {
		for _, f := range sampleFamilies {
			a, b := sides[0].samples(f), sides[i].samples(f)
			if len(a) == 0 || len(b) == 0 {
				continue
			}
			mw := metrics.MannWhitneyU(a, b)
			perRequest[pair{f, i}] = &mw
			shift[pair{f, i}] = relChange(median(a), median(b))
		}
	}
	// A family with per-request samples but no statistic in the files
	// (E2EL outside --percentile-metrics) gets a row of the samples'
	// median, so its test shows.
	for _, f := range sampleFamilies {
		has := false
		for _, k := range keys {
			has = has || familyOf(k) == f
		}
		if !has && len(sides[0].samples(f)) > 0 {
			keys = append(keys, sampleMedianKey(f))
		}
	}
	for _, k := range keys {
		row := ComparisonRow{Metric: k}
		for _, s := range sides {
			if v := s.values(k); len(v) > 0 {
				m := metrics.SpreadOf(v).Mean
				row.Values = append(row.Values, &m)
			} else {
				row.Values = append(row.Values, nil)
			}
		}
		for i := 1; i < len(sides); i++ {
			var cell CompareCell
			a, b := row.Values[0], row.Values[i]
			if a != nil && b != nil {
				d := *b - *a
				cell.Delta = &d
				if *a != 0 {
					pct := 100 * d / math.Abs(*a)
					cell.DeltaPct = &pct
				}
			}
			effect := math.NaN()
			if mw := perRequest[pair{familyOf(k), i}]; mw != nil {
				cell.Test, cell.P = "mann-whitney", &mw.P
				effect = shift[pair{familyOf(k), i}]
			} else if p := metrics.WelchT(sides[0].values(k), sides[i].values(k)); !math.IsNaN(p) {
				cell.Test, cell.P = "welch", &p
				effect = relChange(*a, *b)
			}
			cell.Significant = cell.P != nil && *cell.P < opts.Alpha && math.Abs(effect) >= opts.MinEffect
			row.Versus = append(row.Versus, cell)
		}
		c.Rows = append(c.Rows, row)
	}
	return c
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// relChange is (b − a)/|a|; ±Inf when a is 0 and b is not.
func relChange(a, b float64) float64 {
	if a == b {
		return 0
	}
	return (b - a) / math.Abs(a)
}

// Write prints the comparison: a legend naming the sides, then one row
// per metric with each side's value and, for each side after the first,
// the change, the p-value and the verdict.
func (c *Comparison) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for i, f := range c.Files {
		fmt.Fprintf(bw, "[%c] %s (%d run%s)\n", 'A'+rune(i%26), f, c.Runs[i], plural(c.Runs[i]))
	}
	fmt.Fprintf(bw, "significant: p < %g and a change of at least %g%% (per request: Mann-Whitney U on the family's samples, change of the median; run level: Welch's t on the runs)\n\n",
		c.Alpha, 100*c.MinEffect)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"metric", "A"}
	for i := 1; i < len(c.Files); i++ {
		l := string('A' + rune(i%26))
		head = append(head, l, "Δ%", "p", "sig")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range c.Rows {
		cols := []string{r.Metric, fmtValue(r.Values[0])}
		for i, cell := range r.Versus {
			cols = append(cols, fmtValue(r.Values[i+1]), fmtPct(cell.DeltaPct), fmtP(cell), fmtSig(cell))
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func fmtValue(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *v)
}

func fmtPct(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", *v)
}

func fmtP(c CompareCell) string {
	if c.P == nil {
		return "-"
	}
	if *c.P < 1e-4 {
		return "<1e-4"
	}
	return fmt.Sprintf("%.4f", *c.P)
}

func fmtSig(c CompareCell) string {
	switch {
	case c.P == nil:
		return "-"
	case c.Significant:
		return "yes"
	}
	return "no"
}
