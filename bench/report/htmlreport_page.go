package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/metrics"
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

// reportBins is how many time bins the over-time charts use.
const reportBins = 80

// cdfPoints is how many quantiles draw a CDF.
const cdfPoints = 400

// WriteReport writes the HTML report of runs: one self-contained page
// (style, charts and the timeline's script inline; nothing is fetched
// when it is opened).
func WriteReport(w io.Writer, runs []*ReportRun, opts ReportOptions) error {
	if len(runs) == 0 && len(opts.Sweeps) == 0 {
		return fmt.Errorf("report: no run")
	}
	if opts.ITLThresholdsMs == [2]float64{} {
		opts.ITLThresholdsMs = [2]float64{25, 50}
	}
	title := opts.Title
	if title == "" {
		title = "stampede report"
	}
	var b strings.Builder
	b.WriteString(reportHead)
	b.WriteString("<title>" + html.EscapeString(title) + "</title>\n")
	b.WriteString(timelineStyle)
	b.WriteString(reportStyle)
	b.WriteString("</head>\n<body>\n")
	b.WriteString("<h1>" + html.EscapeString(title) + "</h1>\n<p class=\"meta\">")
	for i, r := range runs {
		if i > 0 {
			b.WriteString(" &middot; ")
		}
		fmt.Fprintf(&b, `<span class="swatch" style="background:%s"></span>%s`, chartColor(i), html.EscapeString(r.Name))
	}
	if !opts.Generated.IsZero() {
		b.WriteString(" &middot; generated " + html.EscapeString(opts.Generated.Format("2006-01-02 15:04:05 MST")))
	}
	b.WriteString("</p>\n")

	reqs := make([]*reportRequests, len(runs))
	for i, r := range runs {
		reqs[i] = r.requests()
	}
	writeSweeps(&b, opts.Sweeps)
	if len(runs) == 0 {
		b.WriteString("<p class=\"meta\">None of the sweep's result files was found beside it: only the sweep's figures are drawn.</p>\n")
		b.WriteString("<script>\n" + reportSelfCheck + "</script>\n</body>\n</html>\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	writeSummaryTable(&b, runs)
	for _, r := range runs {
		writeServerVsClientTable(&b, r, len(runs) > 1)
	}
	for i, r := range runs {
		writeOverTime(&b, r, reqs[i], i, len(runs) > 1)
	}
	writeDistributions(&b, runs, reqs)
	for _, r := range runs {
		writeBreakdown(&b, r, len(runs) > 1)
		writeHealthTable(&b, r, len(runs) > 1)
	}
	if err := writeReportTimeline(&b, runs, reqs, opts); err != nil {
		return err
	}
	b.WriteString("<script>\n" + reportSelfCheck + "</script>\n</body>\n</html>\n")
	bw := bufio.NewWriter(w)
	bw.WriteString(b.String())
	return bw.Flush()
}

func section(b *strings.Builder, id, title string) {
	fmt.Fprintf(b, "<h2 id=\"%s\">%s</h2>\n", id, html.EscapeString(title))
}

func writeSummaryTable(b *strings.Builder, runs []*ReportRun) {
	section(b, "summary", "Summary")
	if len(runs) == 1 {
		writeSingleSummary(b, runs[0])
		return
	}
	var labels []string
	values := make([]map[string]string, len(runs))
	for i, r := range runs {
		values[i] = map[string]string{}
		for _, row := range r.summaryRows() {
			if !slices.Contains(labels, row[0]) {
				labels = append(labels, row[0])
			}
			values[i][row[0]] = row[1]
		}
	}
	b.WriteString(`<table class="summary"><thead><tr><th></th>`)
	for i, r := range runs {
		fmt.Fprintf(b, `<th><span class="swatch" style="background:%s"></span>%s</th>`, chartColor(i), html.EscapeString(shortName(r.Name)))
	}
	b.WriteString("</tr></thead><tbody>\n")
	for _, l := range labels {
		fmt.Fprintf(b, "<tr><td>%s</td>", html.EscapeString(l))
		for i := range runs {
			fmt.Fprintf(b, "<td class=\"num\">%s</td>", html.EscapeString(values[i][l]))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>\n")
}

// writeSingleSummary lays one run's block out as two tables: the counts
// and throughputs, and the latencies as a metric × statistic matrix.
func writeSingleSummary(b *strings.Builder, r *ReportRun) {
	b.WriteString(`<div class="row"><table class="summary"><tbody>`)
	var latency [][2]string
	for _, row := range r.summaryRows() {
		if strings.HasSuffix(row[0], "(ms)") {
			latency = append(latency, row)
			continue
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td class=\"num\">%s</td></tr>\n", html.EscapeString(row[0]), html.EscapeString(row[1]))
	}
	b.WriteString("</tbody></table>\n")
	// Rows "Mean TTFT (ms)", "P99 TTFT (ms)": the statistic, then the metric.
	var stats, metricsOrder []string
	cell := map[[2]string]string{}
	for _, row := range latency {
		stat, rest, _ := strings.Cut(row[0], " ")
		metric := strings.TrimSuffix(rest, " (ms)")
		if !slices.Contains(stats, stat) {
			stats = append(stats, stat)
		}
		if !slices.Contains(metricsOrder, metric) {
			metricsOrder = append(metricsOrder, metric)
		}
		cell[[2]string{metric, stat}] = row[1]
	}
	if len(metricsOrder) > 0 {
		b.WriteString(`<table class="summary"><thead><tr><th>ms</th>`)
		for _, st := range stats {
			fmt.Fprintf(b, "<th class=\"num\">%s</th>", html.EscapeString(st))
		}
		b.WriteString("</tr></thead><tbody>\n")
		for _, m := range metricsOrder {
			fmt.Fprintf(b, "<tr><td>%s</td>", html.EscapeString(m))
			for _, st := range stats {
				fmt.Fprintf(b, "<td class=\"num\">%s</td>", html.EscapeString(cell[[2]string{m, st}]))
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</tbody></table>")
	}
	b.WriteString("</div>\n")
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

func writeServerVsClientTable(b *strings.Builder, r *ReportRun, many bool) {
	s := r.Server
	if s == nil {
		return
	}
	section(b, "server-vs-client", "Server vs client"+runHeading(r, many))
	if s.Scrapes == 0 {
		fmt.Fprintf(b, "<p class=\"meta\">No scrape of %s succeeded: %s</p>\n", html.EscapeString(s.URL), html.EscapeString(s.LastError))
		return
	}
	if len(s.VsClient) == 0 {
		fmt.Fprintf(b, "<p class=\"meta\">%s has no TTFT, ITL or E2E histogram to compare with.</p>\n", html.EscapeString(s.URL))
		return
	}
	b.WriteString(`<table class="summary"><thead><tr><th>Percentile</th><th>Server (ms)</th><th>Client (ms)</th><th>Client − server (ms)</th><th>Server's bucket (ms)</th><th>Server histogram</th></tr></thead><tbody>` + "\n")
	for _, row := range s.VsClient {
		fmt.Fprintf(b, "<tr><td>P%s %s</td><td class=\"num\">%.2f</td><td class=\"num\">%.2f</td><td class=\"num\">%.2f</td><td class=\"num\">%s – %s</td><td><code>%s</code></td></tr>\n",
			trimFloat(row.P), strings.ToUpper(row.Metric), row.ServerMs, row.ClientMs, row.DiffMs,
			trimFloat(row.BucketLoMs), trimFloat(row.BucketHiMs), html.EscapeString(row.Histogram))
	}
	b.WriteString("</tbody></table>\n")
	win := ""
	if s.Window != nil {
		win = fmt.Sprintf(" over %.1f s", s.Window.ToS-s.Window.FromS)
	}
	fmt.Fprintf(b, "<p class=\"meta\">Server percentiles are interpolated in its histogram's growth%s (%d scrapes of %s every %gs); each is only known to lie in its bucket, so a difference smaller than the bucket says nothing. The difference is the network and the client.</p>\n",
		win, s.Scrapes, html.EscapeString(s.URL), s.IntervalSec)
}

// quantiles samples a sorted slice at n evenly spaced probabilities.
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

func percentileSorted(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return sorted[min(int(p/100*float64(len(sorted)-1)+0.5), len(sorted)-1)]
}

func writeDistributions(b *strings.Builder, runs []*ReportRun, reqs []*reportRequests) {
	section(b, "distributions", "Latency distributions")
	dists := make([]map[string][]float64, len(runs))
	any := false
	for i, q := range reqs {
		if q != nil {
			dists[i] = q.distributions()
			any = true
		}
	}
	if !any {
		b.WriteString("<p class=\"meta\">The results have no per-request arrays: save them with --save-detailed to draw distributions.</p>\n")
		return
	}
	b.WriteString(`<div class="grid">`)
	for _, m := range []struct{ key, title string }{{"ttft", "TTFT"}, {"tpot", "TPOT"}, {"itl", "ITL"}, {"e2el", "E2EL"}} {
		cdf := &svgChart{ID: "cdf-" + m.key, Title: m.title + " — CDF", XLabel: m.title + " (ms)", YLabel: "% of requests", Y0: 0, Y1: 100}
		if m.key == "itl" {
			cdf.YLabel = "% of gaps"
		}
		hist := &svgChart{ID: "hist-" + m.key, Title: m.title + " — histogram", XLabel: m.title + " (ms), up to P99", YLabel: "count"}
		hi, lo := 0.0, math.Inf(1)
		for _, d := range dists {
			if d != nil && len(d[m.key]) > 0 {
				hi = max(hi, percentileSorted(d[m.key], 99))
				lo = min(lo, d[m.key][0])
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
			if d == nil || len(d[m.key]) == 0 {
				continue
			}
			v := d[m.key]
			maxAll = max(maxAll, v[len(v)-1])
			xs, ps := quantiles(v, cdfPoints)
			cdf.Lines = append(cdf.Lines, svgLine{Name: shortName(runs[i].Name), Color: chartColor(i), X: xs, Y: ps, Step: true})
			hx, hy, w := histogram(v, lo, hi, 40)
			hist.Lines = append(hist.Lines, svgLine{Name: shortName(runs[i].Name), Color: chartColor(i), X: hx, Y: hy, Bars: len(runs) == 1, Step: len(runs) > 1, BarW: w})
		}
		if len(runs) == 1 {
			cdf.Lines[0].Name, hist.Lines[0].Name = "", ""
		}
		cdf.X0, cdf.X1 = lo, lo+(maxAll-lo)*1.02
		hist.X0, hist.X1 = lo, lo+(hi-lo)*1.02
		cdf.Note, hist.Note = "no "+m.title+" values", "no "+m.title+" values"
		cdf.render(b)
		hist.render(b)
	}
	b.WriteString("</div>\n")
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

// overTime bins a run's requests on [lo, hi]: completions per second,
// output tokens per second (each request's tokens spread over its token
// events) and the most requests in flight within each bin.
func overTime(q *reportRequests, lo, hi float64) (centres, done, tokens, inflight []float64) {
	n := reportBins
	w := (hi - lo) / float64(n)
	centres = make([]float64, n)
	done, tokens, inflight = make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range centres {
		centres[i] = lo + (float64(i)+0.5)*w
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
	for i := range done {
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
	for i := range inflight {
		end := lo + float64(i+1)*w
		peak := cur
		for k < len(edges) && edges[k].t < end {
			cur += edges[k].d
			peak = max(peak, cur)
			k++
		}
		inflight[i] = float64(peak)
	}
	return centres, done, tokens, inflight
}

func writeOverTime(b *strings.Builder, r *ReportRun, q *reportRequests, idx int, many bool) {
	section(b, "over-time", "Over time"+runHeading(r, many))
	lo, hi := reportTimeSpan(q, r.Server)
	shade := r.steadyWindow()
	axis := func(c *svgChart) *svgChart {
		c.X0, c.X1, c.W = lo, hi, 600
		c.XLabel = "run time (s)"
		c.Shade, c.ShadeLabel = shade, "steady-state window"
		return c
	}
	if shade != nil {
		fmt.Fprintf(b, "<p class=\"meta\"><span class=\"swatch\" style=\"background:#fff3c4\"></span>Shaded: the steady-state window, %.2f–%.2f s.</p>\n", shade[0], shade[1])
	}
	b.WriteString(`<div class="grid">`)
	if q != nil && q.starts != nil {
		centres, done, tokens, inflight := overTime(q, lo, hi)
		color := chartColor(idx)
		axis(&svgChart{ID: fmt.Sprintf("tput-%d", idx), Title: "Request throughput", YLabel: "requests/s",
			Lines: []svgLine{{X: centres, Y: done, Step: true, Color: color}}}).render(b)
		axis(&svgChart{ID: fmt.Sprintf("tokens-%d", idx), Title: "Output token throughput", YLabel: "tokens/s",
			Lines: []svgLine{{X: centres, Y: tokens, Step: true, Color: color}}}).render(b)
		axis(&svgChart{ID: fmt.Sprintf("inflight-%d", idx), Title: "Requests in flight (peak per bin)", YLabel: "requests",
			Lines: []svgLine{{X: centres, Y: inflight, Step: true, Color: color}}}).render(b)
	} else {
		b.WriteString("<p class=\"meta\">The result has no start times: save it with --save-detailed to draw throughput and concurrency over time.</p>\n")
	}
	if s := r.Server; s != nil {
		for k, c := range serverCharts(s) {
			c.ID = fmt.Sprintf("server-%d-%d", idx, k)
			axis(c).render(b)
		}
	}
	b.WriteString("</div>\n")
}

// serverCharts draws the scraped series, one chart per metric, one line
// per label set: gauges as read, counters as rates between scrapes,
// histograms as their mean per interval.
func serverCharts(s *ServerMetrics) []*svgChart {
	byName := map[string]*svgChart{}
	var names []string
	chart := func(name, title, ylabel string) *svgChart {
		if g, ok := serverChartGroups[name]; ok {
			name, title = g, g
		}
		c := byName[name]
		if c == nil {
			c = &svgChart{Title: title, YLabel: ylabel}
			byName[name] = c
			names = append(names, name)
		}
		return c
	}
	line := func(c *svgChart, name string, labels map[string]string, xs, ys []float64) {
		label := shortMetric(name)
		if l := labelText(labels, -1); l != "" {
			label += " " + l
		}
		c.Lines = append(c.Lines, svgLine{Name: label, Color: chartColor(len(c.Lines)), X: xs, Y: ys})
	}
	for _, ser := range s.Series {
		if ser.Type == "counter" {
			xs, ys := rates(ser.T, ser.V)
			line(chart(ser.Name, "Server: rate of "+ser.Name, "per second"), ser.Name, ser.Labels, xs, ys)
			continue
		}
		line(chart(ser.Name, "Server: "+ser.Name, ""), ser.Name, ser.Labels, ser.T, ser.V)
	}
	for _, h := range s.Histograms {
		var xs, ys []float64
		for i := 1; i < len(h.T); i++ {
			dc := h.Count[i] - h.Count[i-1]
			if dc <= 0 {
				continue
			}
			xs = append(xs, (h.T[i]+h.T[i-1])/2)
			ys = append(ys, (h.Sum[i]-h.Sum[i-1])/dc*1000)
		}
		line(chart(h.Name, "Server: mean "+h.Name+" per interval", "ms"), h.Name, h.Labels, xs, ys)
	}
	out := make([]*svgChart, 0, len(names))
	for _, n := range names {
		c := byName[n]
		if len(c.Lines) == 1 {
			c.Lines[0].Name = ""
		}
		c.Note = "no change during the run"
		out = append(out, c)
	}
	return out
}

// serverChartGroups draws related series on one chart.
var serverChartGroups = map[string]string{
	"vllm:num_requests_running":       "Server: requests running and waiting",
	"vllm:num_requests_waiting":       "Server: requests running and waiting",
	"sglang:num_running_reqs":         "Server: requests running and waiting",
	"sglang:num_queue_reqs":           "Server: requests running and waiting",
	"vllm:prompt_tokens_total":        "Server: tokens per second (prompt, generated)",
	"vllm:generation_tokens_total":    "Server: tokens per second (prompt, generated)",
	"sglang:prompt_tokens_total":      "Server: tokens per second (prompt, generated)",
	"sglang:generation_tokens_total":  "Server: tokens per second (prompt, generated)",
	"vllm:prefix_cache_queries_total": "Server: prefix cache, tokens per second (queried, hit)",
	"vllm:prefix_cache_hits_total":    "Server: prefix cache, tokens per second (queried, hit)",
}

// shortMetric is a metric's name without its "vllm:" or "sglang:" prefix
// and its unit suffixes.
func shortMetric(name string) string {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[i+1:]
	}
	return strings.TrimSuffix(strings.TrimSuffix(name, "_total"), "_seconds")
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

// writeBreakdown draws the sidecar's TTFT breakdown: the mean of each
// phase and their table.
func writeBreakdown(b *strings.Builder, r *ReportRun, many bool) {
	bd := r.sidecarObject("breakdown")
	if bd == nil {
		return
	}
	phases, _ := bd["phases"].(map[string]any)
	if phases == nil {
		return
	}
	section(b, "breakdown", "TTFT breakdown"+runHeading(r, many))
	order := []string{"queue_wait", "connect", "tls_handshake", "send_delay", "server_ttfb", "first_token", "ttft"}
	b.WriteString(`<table class="summary"><thead><tr><th>Phase</th><th>Mean (ms)</th><th>Median (ms)</th><th>Std (ms)</th></tr></thead><tbody>`)
	means := map[string]float64{}
	for _, name := range order {
		p, _ := phases[name].(map[string]any)
		if p == nil {
			continue
		}
		mean, _ := p["mean_ms"].(float64)
		median, _ := p["median_ms"].(float64)
		std, _ := p["std_ms"].(float64)
		means[name] = mean
		fmt.Fprintf(b, "<tr><td>%s</td><td class=\"num\">%.3f</td><td class=\"num\">%.3f</td><td class=\"num\">%.3f</td></tr>", name, mean, median, std)
	}
	b.WriteString("</tbody></table>\n")
	// The mean TTFT as one bar split into its phases (which add up to it).
	parts := []string{"connect", "tls_handshake", "send_delay", "server_ttfb", "first_token"}
	total := 0.0
	for _, p := range parts {
		total += max(means[p], 0)
	}
	if total <= 0 {
		return
	}
	const w, barW, x0 = 900, 860.0, 20.0
	fmt.Fprintf(b, `<figure class="chart" id="breakdown"><svg viewBox="0 0 %d 64" width="%d" height="64" role="img" aria-label="Mean TTFT by phase">`, w, w)
	fmt.Fprintf(b, `<text class="title" x="%g" y="14">Mean TTFT by phase (%.3f ms)</text>`, x0, total)
	x := x0
	for i, p := range parts {
		pw := max(means[p], 0) / total * barW
		if pw <= 0 {
			continue
		}
		fmt.Fprintf(b, `<path class="mark" fill="%s" d="M%.1f 22h%.1fv20h-%.1fZ"><title>%s %.3f ms</title></path>`, chartColor(i), x, pw, pw, p, means[p])
		if pw > 70 {
			fmt.Fprintf(b, `<text x="%.1f" y="56">%s %.2f ms</text>`, x+2, p, means[p])
		}
		x += pw
	}
	b.WriteString("</svg></figure>\n")
}

// writeHealthTable lists the sidecar's client health figures.
func writeHealthTable(b *strings.Builder, r *ReportRun, many bool) {
	h := r.sidecarObject("health")
	if h == nil {
		return
	}
	section(b, "health", "Client health"+runHeading(r, many))
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteString(`<table class="summary"><tbody>`)
	for _, k := range keys {
		var text string
		if f, ok := h[k].(float64); ok {
			text = strconv.FormatFloat(f, 'g', 6, 64)
		} else {
			v, _ := json.Marshal(h[k])
			text = string(v)
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td class=\"num\">%s</td></tr>", html.EscapeString(k), html.EscapeString(text))
	}
	b.WriteString("</tbody></table>\n")
}

func writeReportTimeline(b *strings.Builder, runs []*ReportRun, reqs []*reportRequests, opts ReportOptions) error {
	section(b, "timeline", "Request timeline"+runHeading(runs[0], len(runs) > 1))
	q := reqs[0]
	var rd *metrics.RunData
	if q != nil {
		rd = q.runData()
	}
	if rd == nil {
		b.WriteString("<p class=\"meta\">The result has no per-request times: save it with --save-detailed to draw the timeline.</p>\n")
		return nil
	}
	events := 0
	for i := range rd.Results {
		events += len(rd.Results[i].ITLNs) + 1
	}
	compact := events > reportTimelineBudget
	// gaps is how many gaps each compacted request had.
	gaps := make([]int, len(rd.Results))
	if compact {
		// One decode segment per request, as long as all its gaps.
		for i := range rd.Results {
			rr := &rd.Results[i]
			if len(rr.ITLNs) == 0 {
				continue
			}
			var total int64
			for _, g := range rr.ITLNs {
				total += g
			}
			gaps[i] = len(rr.ITLNs)
			rr.ITLNs = []int64{total}
			rr.ChunkEvents = 2
		}
	}
	data, err := buildTimeline(rd, TimelineOptions{ITLThresholdsMs: opts.ITLThresholdsMs})
	if err != nil {
		return err
	}
	if compact {
		// Colour each decode segment by the request's mean gap.
		k := 0
		for i := range rd.Results {
			if !rd.Results[i].Sent() {
				continue
			}
			if row := &data.Requests[k]; len(row.Classes) == 1 {
				row.Classes = string(itlClass(rd.Results[i].ITLNs[0]/int64(gaps[i]), opts.ITLThresholdsMs))
			}
			k++
		}
		fmt.Fprintf(b, "<p class=\"meta\">%d token events: each request is drawn as its TTFT and one decode segment coloured by its mean gap.</p>\n", events)
	}
	payload, err := json.Marshal(data)
	if err != nil {
		return err
	}
	b.WriteString(`<div id="timeline-section">`)
	b.WriteString(timelineBody)
	b.WriteString(`<script id="timeline-data" type="application/json">`)
	b.Write(payload)
	b.WriteString("</script>\n<script>\n" + timelineScript + "</script>\n</div>\n")
	return nil
}

const reportHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<script>
// Errors while the page loads are kept on the page itself, so a reader (or
// a test) can see that every chart was drawn.
window.reportErrors = [];
window.addEventListener("error", function (e) {
  window.reportErrors.push(String(e.message));
  document.documentElement.setAttribute("data-report-errors", window.reportErrors.join(" | "));
});
</script>
`

const reportStyle = `<style>
body { max-width: 1240px; }
h2 { font-size: 15px; font-weight: 600; margin: 22px 0 8px; border-bottom: 1px solid #e3e3e3; padding-bottom: 3px; }
.meta { color: #555; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 5px; vertical-align: 0; }
table.summary { border-collapse: collapse; margin: 4px 0 8px; }
table.summary th, table.summary td { padding: 2px 12px 2px 4px; border-bottom: 1px solid #eee; text-align: left; }
table.summary td.num { text-align: right; font-variant-numeric: tabular-nums; }
.row { display: flex; flex-wrap: wrap; gap: 8px 40px; align-items: flex-start; }
table.summary th.num { text-align: right; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 6px 12px; }
.stack figure { margin: 0 0 4px; }
figure.chart { margin: 0; }
figure.chart svg { max-width: 100%; height: auto; font: 11px system-ui, sans-serif; }
svg .title { font-size: 12px; font-weight: 600; fill: #222; }
svg .axis line { stroke: #ececec; }
svg .axis line.xt { stroke: #999; }
svg .axis text { fill: #555; }
svg .frame { fill: none; stroke: #bbb; }
svg .shade { fill: #fff3c4; }
svg .note { fill: #999; font-style: italic; }
svg .legend text { fill: #333; }
</style>
`

// reportSelfCheck runs once the page has loaded: it marks each chart
// with how many marks it drew (paths for the SVG charts, painted pixels
// for the timeline's canvas), so a reader or a test can tell an empty
// chart from a drawn one.
const reportSelfCheck = `"use strict";
window.addEventListener("load", function () {
  document.querySelectorAll("figure.chart").forEach(function (f) {
    f.setAttribute("data-marks", String(f.querySelectorAll("path.mark").length));
  });
  const canvas = document.getElementById("canvas");
  if (canvas) {
    const ctx = canvas.getContext("2d");
    const img = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    // Pixels of the segments' colours only (not the axes' or the text's).
    const colours = JSON.parse(document.getElementById("timeline-data").textContent).colors.map(function (c) {
      return [parseInt(c.slice(1, 3), 16), parseInt(c.slice(3, 5), 16), parseInt(c.slice(5, 7), 16)];
    });
    let painted = 0;
    for (let i = 0; i < img.length; i += 4) {
      for (const c of colours) {
        if (Math.abs(img[i] - c[0]) < 3 && Math.abs(img[i + 1] - c[1]) < 3 && Math.abs(img[i + 2] - c[2]) < 3) { painted++; break; }
      }
    }
    canvas.setAttribute("data-marks", String(painted));
  }
  // Everything is inline: the page must not have loaded a single resource.
  document.documentElement.setAttribute("data-resources", String(performance.getEntriesByType("resource").length));
  document.documentElement.setAttribute("data-report-ready", String(Math.round(performance.now())));
});
`
