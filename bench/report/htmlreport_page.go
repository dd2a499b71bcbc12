package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/pyout"
)

// ReportOptions are the report's settings.
type ReportOptions struct {
	Title string
	// ITLThresholdsMs colour the timeline (--timeline-itl-thresholds).
	ITLThresholdsMs [2]float64
	// Generated stamps the page; zero leaves the stamp out.
	Generated time.Time
	// Sweeps are drawn as throughput against latency with their Pareto
	// fronts, after the summary.
	Sweeps []*ReportSweep
}

// reportTimelineBudget is how many token events the timeline keeps per
// token: above it each request is drawn as its TTFT and one decode
// segment coloured by its mean gap, which keeps a 10,000-request page
// small and quick to open.
const reportTimelineBudget = 250_000

// The over-time charts' bins: as many as give each about
// binCompletions completed requests, between minBins and maxBins over
// the run, their width then rounded to a readable one (niceWidth). Fewer
// completions per bin than that and the request rate jumps bin to bin
// with the arrivals' own randomness.
const (
	binCompletions = 25
	minBins        = 20
	maxBins        = 120
)

// cdfPoints is how many quantiles draw a CDF.
const cdfPoints = 400

// WriteReport writes the HTML report of runs: one self-contained page
// (style, charts and the timeline's script inline; nothing is fetched
// when it is opened), from assets/report.html.
func WriteReport(w io.Writer, runs []*ReportRun, opts ReportOptions) error {
	if len(runs) == 0 && len(opts.Sweeps) == 0 {
		return fmt.Errorf("report: no run")
	}
	if opts.ITLThresholdsMs == [2]float64{} {
		opts.ITLThresholdsMs = [2]float64{25, 50}
	}
	page, err := newReportPage(runs, opts)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	if err := pages.ExecuteTemplate(bw, "report.html", page); err != nil {
		return fmt.Errorf("report page: %w", err)
	}
	return bw.Flush()
}

// reportPage is what assets/report.html shows, section by section.
type reportPage struct {
	Title     string
	Runs      []runSwatch
	Generated string
	Sweeps    []*sweepView
	// NoRuns is a page of sweeps whose results were not found: it has
	// none of the sections below.
	NoRuns  bool
	Summary *summaryView
	// PrefixCache is a sentence per run whose sidecar has a prefix_cache.
	PrefixCache []string
	// Errors are each run's failed requests, grouped; none when no
	// request failed.
	Errors         []*errorsView
	ServerVsClient []*serverVsClientView
	OverTime       []*overTimeView
	// Distributions are the CDF and histogram of each latency; nil when
	// no run has per-request arrays.
	Distributions []*chartView
	RunExtras     []runExtras
	Timeline      *timelineSection
}

// runSwatch names a run beside its colour in the charts.
type runSwatch struct {
	Color, Name string
}

// runExtras are one run's sections from its sidecar; nil where absent.
type runExtras struct {
	FirstTokens *firstTokensView
	Breakdown   *breakdownView
	NetworkRTT  *networkRTTView
	ServerSpans *serverSpansView
	Health      *healthView
}

func newReportPage(runs []*ReportRun, opts ReportOptions) (*reportPage, error) {
	page := &reportPage{Title: opts.Title, Sweeps: sweepViews(opts.Sweeps), NoRuns: len(runs) == 0}
	if page.Title == "" {
		page.Title = "stampede report"
	}
	for i, r := range runs {
		page.Runs = append(page.Runs, runSwatch{chartColor(i), r.Name})
	}
	if !opts.Generated.IsZero() {
		page.Generated = opts.Generated.Format("2006-01-02 15:04:05 MST")
	}
	if page.NoRuns {
		return page, nil
	}
	many := len(runs) > 1
	reqs := make([]*reportRequests, len(runs))
	for i, r := range runs {
		reqs[i] = r.requests()
	}
	page.Summary = newSummaryView(runs)
	for _, r := range runs {
		if line := prefixCacheLine(r, many); line != "" {
			page.PrefixCache = append(page.PrefixCache, line)
		}
	}
	for _, r := range runs {
		if v := newErrorsView(r, many); v != nil {
			page.Errors = append(page.Errors, v)
		}
	}
	for _, r := range runs {
		if v := newServerVsClientView(r, many); v != nil {
			page.ServerVsClient = append(page.ServerVsClient, v)
		}
	}
	for i, r := range runs {
		page.OverTime = append(page.OverTime, newOverTimeView(r, reqs[i], i, many))
	}
	page.Distributions = distributionCharts(runs, reqs)
	for _, r := range runs {
		page.RunExtras = append(page.RunExtras, runExtras{newFirstTokensView(r, many), newBreakdownView(r, many),
			newNetworkRTTView(r, many), newServerSpansView(r, many), newHealthView(r, many)})
	}
	tl, err := newTimelineSection(runs, reqs, opts)
	if err != nil {
		return nil, err
	}
	page.Timeline = tl
	return page, nil
}

// summaryView is the Summary section. With one run, Rows are its counts
// and throughputs (one value each) and Latency the metric × statistic
// matrix; with several, Columns are the runs and Rows every figure of any
// run, latencies included.
type summaryView struct {
	Columns    []runSwatch
	Rows       []summaryLine
	Statistics []string
	Latency    []summaryLine
}

// summaryLine is one labelled row of values.
type summaryLine struct {
	Label  string
	Values []string
}

func newSummaryView(runs []*ReportRun) *summaryView {
	v := &summaryView{}
	if len(runs) == 1 {
		var stats, metrics []string
		cell := map[[2]string]string{}
		for _, row := range runs[0].summaryRows() {
			if row.section == nil {
				v.Rows = append(v.Rows, summaryLine{row.figure.Name, []string{row.value}})
				continue
			}
			metric := row.section.Name
			if !slices.Contains(stats, row.stat.Name) {
				stats = append(stats, row.stat.Name)
			}
			if !slices.Contains(metrics, metric) {
				metrics = append(metrics, metric)
			}
			cell[[2]string{metric, row.stat.Name}] = row.value
		}
		v.Statistics = stats
		for _, m := range metrics {
			line := summaryLine{Label: m}
			for _, st := range stats {
				line.Values = append(line.Values, cell[[2]string{m, st}])
			}
			v.Latency = append(v.Latency, line)
		}
		return v
	}
	var labels []string
	values := make([]map[string]string, len(runs))
	for i, r := range runs {
		v.Columns = append(v.Columns, runSwatch{chartColor(i), shortName(r.Name)})
		values[i] = map[string]string{}
		for _, row := range r.summaryRows() {
			if !slices.Contains(labels, row.figure.Name) {
				labels = append(labels, row.figure.Name)
			}
			values[i][row.figure.Name] = row.value
		}
	}
	for _, l := range labels {
		line := summaryLine{Label: l}
		for i := range runs {
			line.Values = append(line.Values, values[i][l])
		}
		v.Rows = append(v.Rows, line)
	}
	return v
}

func shortName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

func runHeading(r *ReportRun, many bool) string {
	if many {
		return " — " + shortName(r.Name)
	}
	return ""
}

// serverVsClientView compares the server's histograms with the client's
// samples, from the sidecar's server_metrics.
type serverVsClientView struct {
	Heading, URL, LastError, Server string
	Scrapes, Recognised             int
	Rows                            []serverVsClientLine
	Window, Interval                string
}

// serverVsClientLine is one percentile: the client's exact value beside
// the server's histogram bucket it must lie in to agree with the server.
// Where is "inside", "above" or "below" the bucket, Verdict says so with
// the distance to the bucket's nearer bound, and Server is the
// interpolated estimate (histogram_quantile's), shown only as a hint.
type serverVsClientLine struct {
	Percentile, Client, Bucket, Where, Verdict, Server, Histogram string
}

func newServerVsClientView(r *ReportRun, many bool) *serverVsClientView {
	s := r.Server
	if s == nil {
		return nil
	}
	v := &serverVsClientView{Heading: runHeading(r, many), URL: s.URL, LastError: s.LastError, Scrapes: s.Scrapes,
		Server: s.Server, Recognised: len(s.Recognised),
		Interval: strconv.FormatFloat(s.IntervalSec, 'g', -1, 64)}
	for _, row := range s.VsClient {
		bucket, where, verdict := bucketVerdict(row.ClientMs, row.BucketLoMs, row.BucketHiMs)
		v.Rows = append(v.Rows, serverVsClientLine{
			Percentile: "P" + trimFloat(row.P) + " " + strings.ToUpper(row.Metric),
			Client:     fixed2(row.ClientMs), Bucket: bucket, Where: where, Verdict: verdict,
			Server: fixed2(row.ServerMs), Histogram: row.Histogram,
		})
	}
	if s.Window != nil {
		v.Window = fmt.Sprintf(" over %.1f s", s.Window.ToS-s.Window.FromS)
	}
	return v
}

// bucketVerdict places the client's value against the server's bucket
// [lo, hi] (ms): the bucket as text, where the value lies, and that in
// words with the distance to the nearer bound. A percentile in the
// histogram's +Inf bucket has lo == hi, the last finite bound: its
// bucket is everything above it.
func bucketVerdict(client, lo, hi float64) (bucket, where, verdict string) {
	open := lo == hi
	if open {
		bucket = "above " + trimFloat(lo)
	} else {
		bucket = trimFloat(lo) + " – " + trimFloat(hi)
	}
	switch {
	case client < lo:
		return bucket, "below", fixed2(lo-client) + " ms below"
	case !open && client > hi:
		return bucket, "above", fixed2(client-hi) + " ms above"
	}
	return bucket, "inside", "inside"
}

// fixed2 is a value as "%.2f" prints it.
func fixed2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// quantiles samples a sorted slice at n evenly spaced probabilities.
// Not metrics.NearestRank: a CDF's points sit at the value nearest the
// interpolated position p·(n−1), evenly spaced from the first value to
// the last, as the plot draws them.
func quantiles(sorted []float64, n int) (xs, ps []float64) {
	if len(sorted) == 0 {
		return nil, nil
	}
	if len(sorted) <= n {
		for i, v := range sorted {
			xs = append(xs, v)
			ps = append(ps, float64(i+1)/float64(len(sorted))*100)
		}
		return xs, ps
	}
	for k := 0; k <= n; k++ {
		p := float64(k) / float64(n)
		idx := min(int(p*float64(len(sorted)-1)+0.5), len(sorted)-1)
		xs = append(xs, sorted[idx])
		ps = append(ps, p*100)
	}
	return xs, ps
}

// percentileSorted is the value nearest the interpolated position of the
// p-th percentile, for an axis' bound; not metrics.NearestRank, so that
// it rounds to the value quantiles plots there.
func percentileSorted(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return sorted[min(int(p/100*float64(len(sorted)-1)+0.5), len(sorted)-1)]
}

// distributionCharts draws each latency's CDF and histogram, one line per
// run; nil when no run has per-request arrays.
func distributionCharts(runs []*ReportRun, reqs []*reportRequests) []*chartView {
	dists := make([]map[string][]float64, len(runs))
	any := false
	for i, q := range reqs {
		if q != nil {
			dists[i] = q.distributions()
			any = true
		}
	}
	if !any {
		return nil
	}
	var charts []*chartView
	for _, sec := range reportLatencies {
		key, title := sec.Key, sec.Name
		cdf := &svgChart{ID: "cdf-" + key, Title: title + " — CDF", XLabel: title + " (ms)", YLabel: "% of requests", Y0: 0, Y1: 100}
		if key == pyout.ITL.Key {
			cdf.YLabel = "% of gaps"
		}
		hist := &svgChart{ID: "hist-" + key, Title: title + " — histogram", XLabel: title + " (ms), up to P99", YLabel: "count"}
		hi, lo := 0.0, math.Inf(1)
		for _, d := range dists {
			if d != nil && len(d[key]) > 0 {
				hi = max(hi, percentileSorted(d[key], 99))
				lo = min(lo, d[key][0])
			}
		}
		if math.IsInf(lo, 1) {
			lo = 0
		}
		// Start the axes at 0 unless the values sit far from it.
		if lo < hi/2 {
			lo = 0
		} else {
			lo = niceFloor(lo - (hi-lo)*0.1)
		}
		maxAll := 0.0
		for i, d := range dists {
			if d == nil || len(d[key]) == 0 {
				continue
			}
			v := d[key]
			maxAll = max(maxAll, v[len(v)-1])
			xs, ps := quantiles(v, cdfPoints)
			cdf.Lines = append(cdf.Lines, svgLine{Name: shortName(runs[i].Name), Color: chartColor(i), X: xs, Y: ps, Step: true})
			hx, hy, w := histogram(v, lo, hi, 40)
			hist.Lines = append(hist.Lines, svgLine{Name: shortName(runs[i].Name), Color: chartColor(i), X: hx, Y: hy, Bars: len(runs) == 1, Step: len(runs) > 1, BarW: w})
		}
		if len(runs) == 1 && len(cdf.Lines) == 1 {
			// A run in which every request failed has no values: no line.
			cdf.Lines[0].Name, hist.Lines[0].Name = "", ""
		}
		cdf.X0, cdf.X1 = lo, lo+(maxAll-lo)*1.02
		hist.X0, hist.X1 = lo, lo+(hi-lo)*1.02
		cdf.Note, hist.Note = "no "+title+" values", "no "+title+" values"
		charts = append(charts, cdf.view(), hist.view())
	}
	return charts
}

// niceFloor rounds v down to a round number of its magnitude.
func niceFloor(v float64) float64 {
	if v <= 0 {
		return 0
	}
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	return math.Floor(v/mag) * mag
}

// histogram counts values in [lo, hi] into n bins: the bins' centres,
// counts and width.
func histogram(v []float64, lo, hi float64, n int) (xs, ys []float64, width float64) {
	if len(v) == 0 {
		return nil, nil, 1
	}
	if !(hi > lo) {
		hi = lo + 1
	}
	width = (hi - lo) / float64(n)
	ys = make([]float64, n)
	for _, x := range v {
		if x < lo || x > hi {
			continue
		}
		ys[min(int((x-lo)/width), n-1)]++
	}
	xs = make([]float64, n)
	for i := range xs {
		xs[i] = lo + (float64(i)+0.5)*width
	}
	return xs, ys, width
}

// binWidth is the over-time charts' bin width (s) for a span of run
// time holding completions completed requests.
func binWidth(span float64, completions int) float64 {
	if !(span > 0) {
		return 1
	}
	n := min(max(completions/binCompletions, minBins), maxBins)
	return niceWidth(span / float64(n))
}

// niceWidth rounds w (> 0) to the nearest of 1, 2, 2.5 and 5 times a
// power of ten, on a log scale.
func niceWidth(w float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(w)))
	best := mag
	for _, f := range []float64{1, 2, 2.5, 5, 10} {
		if math.Abs(math.Log(f*mag/w)) < math.Abs(math.Log(best/w)) {
			best = f * mag
		}
	}
	return best
}

// binEdges widens [lo, hi] to whole bins of width w from run time 0, so
// bin edges fall on round times: the first edge and the bin count.
func binEdges(lo, hi, w float64) (start float64, n int) {
	start = math.Floor(lo/w) * w
	n = max(int(math.Ceil((hi-start)/w-1e-9)), 1)
	return start, n
}

// overTime bins a run's requests into n bins of width w from lo:
// completions per second, output tokens per second (each request's
// tokens spread over its token events) and the most requests in flight
// within each bin. xs are the bins' left edges and one more, the last
// right edge, where each series repeats its last value, so a step line
// holds each value across its own bin.
func overTime(q *reportRequests, lo, w float64, n int) (xs, done, tokens, inflight []float64) {
	xs = make([]float64, n+1)
	done, tokens, inflight = make([]float64, n+1), make([]float64, n+1), make([]float64, n+1)
	for i := range xs {
		xs[i] = lo + float64(i)*w
	}
	bin := func(t float64) int { return min(max(int((t-lo)/w), 0), n-1) }
	type edge struct {
		t float64
		d int
	}
	var edges []edge
	for i, st := range q.starts {
		lat := q.latencies[i]
		if math.IsNaN(st) || math.IsNaN(lat) {
			continue
		}
		end := st + lat
		edges = append(edges, edge{st, 1}, edge{end, -1})
		if !q.ok(i) {
			continue
		}
		done[bin(end)]++
		if q.ttfts == nil || math.IsNaN(q.ttfts[i]) {
			continue
		}
		events := 1
		if q.itls != nil {
			events += len(q.itls[i])
		}
		per := 1.0
		if q.outLens != nil && q.outLens[i] > 0 {
			per = float64(q.outLens[i]) / float64(events)
		}
		t := st + q.ttfts[i]
		tokens[bin(t)] += per
		if q.itls != nil {
			for _, g := range q.itls[i] {
				t += g
				tokens[bin(t)] += per
			}
		}
	}
	for i := range n {
		done[i] /= w
		tokens[i] /= w
	}
	sort.Slice(edges, func(a, b int) bool {
		if edges[a].t != edges[b].t {
			return edges[a].t < edges[b].t
		}
		return edges[a].d < edges[b].d
	})
	cur, k := 0, 0
	for i := range n {
		end := lo + float64(i+1)*w
		peak := cur
		for k < len(edges) && edges[k].t < end {
			cur += edges[k].d
			peak = max(peak, cur)
			k++
		}
		inflight[i] = float64(peak)
	}
	done[n], tokens[n], inflight[n] = done[n-1], tokens[n-1], inflight[n-1]
	return xs, done, tokens, inflight
}

// overTimeView is one run's charts over run time: its requests' and the
// server's.
type overTimeView struct {
	Heading string
	// Shade is the steady-state window's bounds, when one was found.
	Shade    *[2]string
	NoStarts bool
	// BinWidth is the request charts' bin width in seconds, as text.
	BinWidth string
	Charts   []*chartView
}

// completions counts a run's successful requests; 0 without per-request
// arrays.
func completions(q *reportRequests) int {
	if q == nil {
		return 0
	}
	n := 0
	for i := range q.latencies {
		if q.ok(i) {
			n++
		}
	}
	return n
}

func newOverTimeView(r *ReportRun, q *reportRequests, idx int, many bool) *overTimeView {
	v := &overTimeView{Heading: runHeading(r, many)}
	lo, hi := reportTimeSpan(q, r.Server)
	w := binWidth(hi-lo, completions(q))
	lo, n := binEdges(lo, hi, w)
	hi = lo + float64(n)*w
	shade := r.steadyWindow()
	axis := func(c *svgChart) *chartView {
		c.X0, c.X1, c.W = lo, hi, 600
		c.XLabel = "run time (s)"
		c.Shade, c.ShadeLabel = shade, "steady-state window"
		return c.view()
	}
	if shade != nil {
		v.Shade = &[2]string{fixed2(shade[0]), fixed2(shade[1])}
	}
	if q != nil && q.starts != nil {
		xs, done, tokens, inflight := overTime(q, lo, w, n)
		v.BinWidth = trimFloat(w)
		bins := " (" + v.BinWidth + " s bins)"
		color := chartColor(idx)
		v.Charts = append(v.Charts,
			axis(&svgChart{ID: fmt.Sprintf("tput-%d", idx), Title: "Request throughput" + bins, YLabel: "requests/s",
				Lines: []svgLine{{X: xs, Y: done, Step: true, Color: color}}}),
			axis(&svgChart{ID: fmt.Sprintf("tokens-%d", idx), Title: "Output token throughput" + bins, YLabel: "tokens/s",
				Lines: []svgLine{{X: xs, Y: tokens, Step: true, Color: color}}}),
			axis(&svgChart{ID: fmt.Sprintf("inflight-%d", idx), Title: "Requests in flight (peak per " + v.BinWidth + " s bin)", YLabel: "requests",
				Lines: []svgLine{{X: xs, Y: inflight, Step: true, Color: color}}}))
	} else {
		v.NoStarts = true
	}
	if s := r.Server; s != nil {
		for k, c := range serverCharts(s) {
			c.ID = fmt.Sprintf("server-%d-%d", idx, k)
			v.Charts = append(v.Charts, axis(c))
		}
	}
	return v
}

func rates(t, v []float64) (xs, ys []float64) {
	for i := 1; i < len(t); i++ {
		dt := t[i] - t[i-1]
		if dt <= 0 {
			continue
		}
		xs = append(xs, (t[i]+t[i-1])/2)
		ys = append(ys, max(v[i]-v[i-1], 0)/dt)
	}
	return xs, ys
}

// labelText names a label set by its labels other than model_name and
// engine="0"; "" when none is left.
func labelText(labels map[string]string, _ int) string {
	var parts []string
	for k, v := range labels {
		if k != "model_name" && !(k == "engine" && v == "0") {
			parts = append(parts, k+"="+v)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// breakdownView is the sidecar's TTFT breakdown: the table of its phases
// and the mean TTFT as one bar split into them.
type breakdownView struct {
	Heading string
	// Requests and NewConnections count the requests the breakdown is
	// over and those of them that opened a connection; "" when absent.
	Requests, NewConnections string
	Rows                     []breakdownLine
	Bar                      *breakdownBar
}

// breakdownLine is one phase: its words, the sidecar key it came from,
// and its figures in ms.
type breakdownLine struct {
	Phase, Key, Mean, Median, Std string
}

type breakdownBar struct {
	Total string
	Parts []breakdownPart
}

// breakdownPart is one phase's stretch of the bar; a stretch wide enough
// carries its short label at LabelX.
type breakdownPart struct {
	Phase, Short, Color, D, Mean, MeanShort string
	Labelled                                bool
	LabelX                                  float64
}

func newBreakdownView(r *ReportRun, many bool) *breakdownView {
	bd := r.sidecarObject("breakdown")
	if bd == nil {
		return nil
	}
	phases, _ := bd["phases"].(map[string]any)
	if phases == nil {
		return nil
	}
	v := &breakdownView{Heading: runHeading(r, many)}
	if n, ok := bd["requests"].(float64); ok {
		v.Requests = strconv.FormatFloat(n, 'f', 0, 64)
	}
	if n, ok := bd["new_connections"].(float64); ok {
		v.NewConnections = strconv.FormatFloat(n, 'f', 0, 64)
	}
	ms3 := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	order := make([]string, 0, len(phases))
	for _, l := range breakdownLabels {
		order = append(order, l.Key)
	}
	var rest []string
	for k := range phases {
		if !slices.Contains(order, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	means := map[string]float64{}
	for _, name := range append(order, rest...) {
		p, _ := phases[name].(map[string]any)
		if p == nil {
			continue
		}
		mean, _ := p["mean_ms"].(float64)
		median, _ := p["median_ms"].(float64)
		std, _ := p["std_ms"].(float64)
		means[name] = mean
		label, _ := breakdownLabel(name)
		v.Rows = append(v.Rows, breakdownLine{label, name, ms3(mean), ms3(median), ms3(std)})
	}
	// The phases of the TTFT add up to it.
	parts := []string{"connect", "tls_handshake", "send_delay", "server_ttfb", "first_token"}
	total := 0.0
	for _, p := range parts {
		total += max(means[p], 0)
	}
	if total <= 0 {
		return v
	}
	const barW, x0 = 860.0, 20.0
	bar := &breakdownBar{Total: ms3(total)}
	x := x0
	for i, p := range parts {
		pw := max(means[p], 0) / total * barW
		if pw <= 0 {
			continue
		}
		label, short := breakdownLabel(p)
		bar.Parts = append(bar.Parts, breakdownPart{
			Phase: label, Short: short, Color: chartColor(i), D: fmt.Sprintf("M%.1f 22h%.1fv20h-%.1fZ", x, pw, pw),
			Mean: ms3(means[p]), MeanShort: fixed2(means[p]), Labelled: pw > 70, LabelX: x + 2,
		})
		x += pw
	}
	v.Bar = bar
	return v
}

// healthView lists the sidecar's client health figures in words: the
// known keys in healthLabels' order, then any other by its key.
type healthView struct {
	Heading string
	Rows    []healthLine
}

// healthLine is one figure: its words, its unit ("" for a count), its
// value printed in its format, and the sidecar key it came from.
type healthLine struct {
	Label, Unit, Value, Key string
}

func newHealthView(r *ReportRun, many bool) *healthView {
	h := r.sidecarObject("health")
	if h == nil {
		return nil
	}
	v := &healthView{Heading: runHeading(r, many)}
	known := map[string]bool{}
	for _, l := range healthLabels {
		known[l.Key] = true
		if val, ok := h[l.Key]; ok {
			v.Rows = append(v.Rows, healthLine{l.Label, l.Unit, figureText(val, l.Format), l.Key})
		}
	}
	var rest []string
	for k := range h {
		if !known[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		text := figureText(h[k], formatCount)
		if f, ok := h[k].(float64); ok {
			text = strconv.FormatFloat(f, 'g', 6, 64)
		}
		v.Rows = append(v.Rows, healthLine{k, "", text, k})
	}
	return v
}

// timelineSection is the first run's request timeline, drawn by
// timeline.js from Data.
type timelineSection struct {
	Heading string
	// Missing is set when the result has no per-request times.
	Missing bool
	// Compacted is the number of token events when there were too many
	// to draw each; 0 otherwise.
	Compacted int
	// Lanes are the timeline's rows, concurrency slots that Requests
	// requests were packed into.
	Lanes, Requests int
	Data            template.JS
}

func newTimelineSection(runs []*ReportRun, reqs []*reportRequests, opts ReportOptions) (*timelineSection, error) {
	v := &timelineSection{Heading: runHeading(runs[0], len(runs) > 1)}
	q := reqs[0]
	if q == nil {
		v.Missing = true
		return v, nil
	}
	events := q.events()
	compact := events > reportTimelineBudget
	rd, gaps := q.runData(compact)
	if rd == nil {
		v.Missing = true
		return v, nil
	}
	defer rd.Log.Close()
	data, err := buildTimeline(rd, TimelineOptions{ITLThresholdsMs: opts.ITLThresholdsMs})
	if err != nil {
		return nil, err
	}
	if compact {
		// Colour each decode segment by the request's mean gap.
		k := 0
		for i, r := range rd.Log.All() {
			if !r.Sent() {
				continue
			}
			if row := &data.Requests[k]; len(row.Classes) == 1 {
				row.Classes = string(itlClass(r.ITLNs[0]/int64(gaps[i]), opts.ITLThresholdsMs))
			}
			k++
		}
		v.Compacted = events
	}
	data.Lanes = packLanes(data.Requests)
	v.Lanes, v.Requests = data.Lanes, len(data.Requests)
	// encoding/json escapes <, > and & inside strings, so the data cannot
	// close its <script> element.
	payload, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	v.Data = template.JS(payload)
	return v, nil
}

// prefixCacheLine is the run's sidecar prefix_cache as a sentence; "" when
// it has none.
func prefixCacheLine(r *ReportRun, many bool) string {
	raw, ok := r.Sidecar["prefix_cache"]
	var pc *PrefixCache
	if !ok || json.Unmarshal(raw, &pc) != nil || pc == nil {
		return ""
	}
	line := pc.Line()
	if many {
		line = r.Name + ": " + line
	}
	return line
}
