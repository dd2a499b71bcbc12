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
// Each row is judged on its own statistic, with a confidence interval of
// its change (see verdict.go for the method): per request, a bootstrap over
// the runs and the requests of each side when both carry the family's
// samples (TTFT from "ttfts", TPOT from "ttfts", "latencies" and
// "output_lens", ITL from the flattened "itls" — those need
// --save-detailed — and E2EL from "latencies", which is always saved);
// per run, Welch's interval with at least two runs on each side; else none.
type CompareOptions struct {
	// Alpha is one minus the intervals' confidence (default 0.05: 95 %
	// intervals).
	Alpha float64
	// MinEffect is the smallest relative change called a difference
	// (default 0.02, 2 %).
	MinEffect float64
	// Vary names the fingerprint keys (or their prefixes) the comparison
	// is about; any other difference is unlike for like
	// (compare_fingerprint.go).
	Vary []string
}

// resultRun is one run's result JSON read back.
type resultRun struct {
	keys    []string
	values  map[string]float64
	samples map[string][]float64 // family → per-request values in ms
	// settings are the run's settings (compare_settings.go), by key, as
	// settingText writes them; they are not values.
	settings map[string]string
}

// CompareSide is one argument of compare: its runs.
type CompareSide struct {
	Name string
	runs []*resultRun
	fp   SideFingerprint
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
	// Test is how the interval was had: "bootstrap" (per request, runs
	// and requests resampled), "welch" (run level) or "" (none).
	Test string `json:"test"`
	// P is the two-sided p-value of no change; null without a test.
	P *float64 `json:"p"`
	// CILowPct and CIHighPct bound the change of the row's statistic,
	// B − A over |A| in percent, at confidence 1 − alpha; null without a
	// test.
	CILowPct  *float64 `json:"ci_low_pct"`
	CIHighPct *float64 `json:"ci_high_pct"`
	// Verdict is "better", "worse", "changed" (a figure that improves
	// neither way), "no change" or "can't tell".
	Verdict string `json:"verdict"`
	// RunsNeeded is, for a "can't tell", about how many runs each side
	// would need for a change of this size to be called; 0 when the spread
	// between runs is unknown (one run each).
	RunsNeeded int `json:"runs_needed,omitempty"`
	// Significant is a verdict of better, worse or changed.
	Significant bool `json:"significant"`
}

// Comparison is compare's whole answer; Write prints it as a table.
type Comparison struct {
	Files     []string `json:"files"`
	Runs      []int    `json:"runs"`
	Alpha     float64  `json:"alpha"`
	MinEffect float64  `json:"min_effect"`
	// Vary is --vary; Sides each side's fingerprint; Fingerprints each
	// side's check against the first's, printed before any number.
	Vary         []string           `json:"vary"`
	Sides        []SideFingerprint  `json:"fingerprints"`
	Fingerprints []FingerprintCheck `json:"like_for_like"`
	Rows         []ComparisonRow    `json:"rows"`
}

// sampleFamilies are the metric families with per-request samples.
var sampleFamilies = []string{"ttft", "tpot", "itl", "e2el"}

// sampleMedianKey names the row of a family's per-request median.
func sampleMedianKey(family string) string { return "sample_median_" + family + "_ms" }

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
		if err := side.loadFingerprint(path); err != nil {
			return nil, err
		}
	}
	side.loadSettings()
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
	r := &resultRun{values: map[string]float64{}, samples: map[string][]float64{}, settings: map[string]string{}}
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
		case isSetting(key):
			r.settings[key] = settingText(v)
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

// runSamples are the side's per-request values of a family, one list per
// run; nil unless every run has them.
func (s *CompareSide) runSamples(family string) [][]float64 {
	var out [][]float64
	for _, r := range s.runs {
		v, ok := r.samples[family]
		if !ok {
			return nil
		}
		out = append(out, v)
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
	c := &Comparison{Alpha: opts.Alpha, MinEffect: opts.MinEffect, Vary: opts.Vary}
	if c.Vary == nil {
		c.Vary = []string{}
	}
	for i, s := range sides {
		c.Sides = append(c.Sides, s.fp)
		if i > 0 {
			c.Fingerprints = append(c.Fingerprints, checkFingerprint(&sides[0].fp, &s.fp, opts.Vary))
		}
	}
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
	// A family with per-request samples but no statistic in the files
	// (E2EL outside --percentile-metrics) gets a row of the samples'
	// median, so its verdict shows.
	for _, f := range sampleFamilies {
		has := false
		for _, k := range keys {
			st, ok := statisticOf(k)
			has = has || (ok && st.family == f)
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
			row.Versus = append(row.Versus, compareCell(k, sides[0], sides[i], row.Values[0], row.Values[i], opts))
		}
		c.Rows = append(c.Rows, row)
	}
	return c
}

// compareCell is side b's difference from side a on the row key.
func compareCell(key string, a, b *CompareSide, va, vb *float64, opts CompareOptions) CompareCell {
	cell := CompareCell{Verdict: VerdictCantTell}
	if va != nil && vb != nil {
		d := *vb - *va
		cell.Delta = &d
		if *va != 0 {
			pct := 100 * d / math.Abs(*va)
			cell.DeltaPct = &pct
		}
	}
	var iv interval
	ok := false
	if st, isStat := statisticOf(key); isStat {
		if sa, sb := a.runSamples(st.family), b.runSamples(st.family); sa != nil && sb != nil {
			iv, ok = bootstrapInterval(st, sa, sb, opts.Alpha)
		}
	}
	if !ok {
		iv, ok = welchInterval(a.values(key), b.values(key), opts.Alpha)
	}
	if !ok {
		if va != nil && vb != nil && *va == *vb {
			// A figure the same to the last digit (a count of tokens).
			cell.Verdict = VerdictSame
		}
		return cell
	}
	cell.Test = iv.method
	p, lo, hi := iv.p, iv.lowPct, iv.highPct
	cell.P, cell.CILowPct, cell.CIHighPct = &p, &lo, &hi
	cell.Verdict = verdict(iv, 100*opts.MinEffect, directionOf(key))
	cell.Significant = cell.Verdict == VerdictBetter || cell.Verdict == VerdictWorse || cell.Verdict == VerdictChanged
	if cell.Verdict == VerdictCantTell {
		cell.RunsNeeded = runsNeeded(iv, 100*opts.MinEffect, opts.Alpha)
	}
	return cell
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

// Write prints the comparison: a legend naming the sides, then one row
// per metric with each side's value and, for each side after the first,
// the change, the p-value and the verdict.
func (c *Comparison) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for i, f := range c.Files {
		fmt.Fprintf(bw, "[%c] %s (%d run%s)\n", 'A'+rune(i%26), f, c.Runs[i], plural(c.Runs[i]))
	}
	c.writeFingerprints(bw)
	fmt.Fprintf(bw, "each row judged on its own statistic: the change B − A over |A| with its %g%% interval "+
		"(per request: bootstrap over runs and requests; per run: Welch); better/worse when the interval excludes 0 "+
		"and the change is at least %g%%, no change when the interval lies within ±%g%%\n",
		100*(1-c.Alpha), 100*c.MinEffect, 100*c.MinEffect)
	if slices.Min(c.Runs) < 2 {
		fmt.Fprintf(bw, "with one run a side, an interval counts the spread of its requests, not of runs: "+
			"repeat with --num-runs (or join runs with commas) for verdicts that hold from run to run\n")
	}
	fmt.Fprintln(bw)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	head := []string{"metric", "A"}
	for i := 1; i < len(c.Files); i++ {
		l := string('A' + rune(i%26))
		head = append(head, l, "Δ%", "interval", "verdict")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range c.Rows {
		cols := []string{r.Metric, fmtValue(r.Values[0])}
		for i, cell := range r.Versus {
			cols = append(cols, fmtValue(r.Values[i+1]), fmtPct(cell.DeltaPct), fmtCI(cell), fmtVerdict(cell, c.Runs[0], c.Runs[i+1]))
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

func fmtCI(c CompareCell) string {
	if c.CILowPct == nil {
		return "-"
	}
	return fmtInterval(*c.CILowPct, *c.CIHighPct)
}

// fmtVerdict is the verdict with what a "can't tell" needs.
func fmtVerdict(c CompareCell, runsA, runsB int) string {
	if c.Verdict != VerdictCantTell {
		return c.Verdict
	}
	switch {
	case c.RunsNeeded > 1000:
		return c.Verdict + " (need > 1000 runs a side)"
	case c.RunsNeeded > 0:
		return fmt.Sprintf("%s (need ~%d runs a side)", c.Verdict, c.RunsNeeded)
	case c.Test == "" && (runsA < 2 || runsB < 2):
		return c.Verdict + " (one run: repeat with --num-runs)"
	}
	return c.Verdict
}
