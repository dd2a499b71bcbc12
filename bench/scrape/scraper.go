// Package scrape reads the server's Prometheus /metrics: the series of
// --server-metrics, polled on a goroutine of its own through the run, and
// the counters Python samples before and after it.
package scrape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/report"
)

// --server-metrics: the server's own view of the run. A goroutine of its
// own (never a shard) GETs the server's Prometheus endpoint every
// --server-metrics-interval seconds from just before the run until just
// after it, parses the answer with the Prometheus project's parser (text
// format or OpenMetrics, as the Content-Type says) and keeps the series
// vLLM, SGLang, llama.cpp and TGI export about load, caches, tokens and
// latency (servers.go). The result goes to the sidecar under
// "server_metrics" (report.ServerMetrics) and into the report.

// promPoint is one kept sample of one scrape.
type promPoint struct {
	name   string
	labels map[string]string
	typ    string
	panel  string
	value  float64
	// Histograms: cumulative buckets, ascending bounds, the last +Inf.
	bounds []float64
	cum    []float64
	count  float64
	sum    float64
}

// maxScrapeBytes bounds one /metrics answer.
const maxScrapeBytes = 64 << 20

// answer is one parsed /metrics answer: the kept series' samples, and
// the families recognised (with their servers) and left out.
type answer struct {
	points     []promPoint
	recognised []string
	ignored    []string
	servers    []string
}

// parseServerMetrics reads one /metrics answer with the Prometheus
// parser chosen by its Content-Type (the text format when it names none).
func parseServerMetrics(body []byte, contentType string) (answer, error) {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	format := expfmt.ResponseFormat(h)
	if format.FormatType() != expfmt.TypeOpenMetrics && format.FormatType() != expfmt.TypeProtoDelim {
		format = expfmt.NewFormat(expfmt.TypeTextPlain)
	}
	dec := expfmt.NewDecoder(bytes.NewReader(body), format)
	var a answer
	for {
		var mf dto.MetricFamily
		err := dec.Decode(&mf)
		if errors.Is(err, io.EOF) {
			// The text parser hands families out in no fixed order.
			slices.Sort(a.recognised)
			slices.Sort(a.ignored)
			slices.Sort(a.servers)
			return a, nil
		}
		if err != nil {
			return a, err
		}
		a.add(&mf)
	}
}

// add keeps mf's samples when a rule recognises it, by the rule's kind.
func (a *answer) add(mf *dto.MetricFamily) {
	rule, name := ruleFor(mf)
	if rule == nil {
		a.ignored = append(a.ignored, mf.GetName())
		return
	}
	a.recognised = append(a.recognised, name)
	if !slices.Contains(a.servers, rule.server) {
		a.servers = append(a.servers, rule.server)
	}
	for _, m := range mf.Metric {
		p := promPoint{name: name, labels: labelMap(m.Label), panel: rule.panel}
		switch {
		case rule.kind == total && m.Counter != nil:
			p.typ, p.value = "counter", m.Counter.GetValue()
		case m.Gauge != nil:
			p.typ, p.value = "gauge", m.Gauge.GetValue()
		case m.Untyped != nil:
			p.typ, p.value = "untyped", m.Untyped.GetValue()
		case rule.kind == distribution && m.Histogram != nil:
			h := m.Histogram
			p.typ, p.count, p.sum = "histogram", float64(h.GetSampleCount()), h.GetSampleSum()
			for _, b := range h.Bucket {
				p.bounds = append(p.bounds, b.GetUpperBound())
				p.cum = append(p.cum, float64(b.GetCumulativeCount()))
			}
			if n := len(p.bounds); n == 0 || !math.IsInf(p.bounds[n-1], 1) {
				p.bounds = append(p.bounds, math.Inf(1))
				p.cum = append(p.cum, p.count)
			}
		default:
			continue
		}
		a.points = append(a.points, p)
	}
}

func labelMap(ls []*dto.LabelPair) map[string]string {
	if len(ls) == 0 {
		return nil
	}
	m := make(map[string]string, len(ls))
	for _, l := range ls {
		m[l.GetName()] = l.GetValue()
	}
	return m
}

// seriesKey names a series by its name and sorted labels.
func seriesKey(name string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(name)
	for _, k := range keys {
		b.WriteString("\x00" + k + "=" + labels[k])
	}
	return b.String()
}

// scrape is one parsed answer and when it was taken (the midpoint of the
// request and its answer).
type scrape struct {
	at     time.Time
	points []promPoint
}

// Scraper polls /metrics on its own goroutine.
type Scraper struct {
	url      string
	interval time.Duration
	client   *http.Client
	headers  []plan.Header

	mu       sync.Mutex
	scrapes  []scrape
	failures int
	lastErr  string
	// found is the first parsed answer's families, the points dropped.
	found *answer

	stopOnce sync.Once
	stopCh   chan struct{}
	done     chan struct{}
}

func newScraper(url string, interval time.Duration, client *http.Client, headers []plan.Header) *Scraper {
	return &Scraper{url: url, interval: interval, client: client, headers: headers,
		stopCh: make(chan struct{}), done: make(chan struct{})}
}

// start takes a scrape every interval until stop (Start took the first).
func (s *Scraper) start(ctx context.Context) {
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.stopCh:
				return
			case <-t.C:
			}
			s.scrapeOnce(ctx)
		}
	}()
}

// stop ends the polling and takes one last scrape with ctx, so the
// histogram deltas cover the whole run.
func (s *Scraper) stop(ctx context.Context) {
	s.Abort()
	s.scrapeOnce(ctx)
}

// Abort ends the polling without a last scrape (the run did not start);
// a nil scraper does nothing.
func (s *Scraper) Abort() {
	if s == nil {
		return
	}
	s.stopOnce.Do(func() { close(s.stopCh) })
	<-s.done
}

func (s *Scraper) scrapeOnce(ctx context.Context) {
	timeout := min(max(s.interval, time.Second), 10*time.Second)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sent := time.Now()
	a, err := s.get(ctx)
	at := sent.Add(time.Since(sent) / 2)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failures++
		s.lastErr = err.Error()
		return
	}
	if s.found == nil {
		s.found = &answer{recognised: a.recognised, ignored: a.ignored, servers: a.servers}
	}
	s.scrapes = append(s.scrapes, scrape{at: at, points: a.points})
}

func (s *Scraper) get(ctx context.Context) (answer, error) {
	return fetch(ctx, s.client, s.url, s.headers)
}

// fetch is one GET of a /metrics url, parsed.
func fetch(ctx context.Context, client *http.Client, url string, headers []plan.Header) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1")
	for _, h := range headers {
		req.Header.Set(h.Key, h.Value)
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return answer{}, fmt.Errorf("%s: HTTP %s", url, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxScrapeBytes))
	if err != nil {
		return answer{}, err
	}
	a, err := parseServerMetrics(body, resp.Header.Get("Content-Type"))
	if err != nil {
		return answer{}, fmt.Errorf("%s: %w", url, err)
	}
	return a, nil
}

// result turns the scrapes into series, times counted from origin (the
// run's time 0). firstS and lastS are the run's first start and last
// end, in seconds from origin: the histogram deltas run from the last
// scrape at or before firstS to the first scrape at or after lastS.
func (s *Scraper) result(origin time.Time, firstS, lastS float64) *report.ServerMetrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := buildServerMetrics(s.url, s.interval, s.scrapes, s.failures, s.lastErr, origin, firstS, lastS)
	if f := s.found; f != nil {
		m.Server, m.Recognised, m.Ignored = strings.Join(f.servers, "+"), f.recognised, f.ignored
	}
	return m
}

func buildServerMetrics(url string, interval time.Duration, scrapes []scrape, failures int, lastErr string,
	origin time.Time, firstS, lastS float64) *report.ServerMetrics {
	out := &report.ServerMetrics{URL: url, IntervalSec: interval.Seconds(), Scrapes: len(scrapes), Failures: failures,
		LastError: lastErr, Series: []report.ServerSeries{}, Histograms: []report.ServerHistogram{}}
	if len(scrapes) == 0 {
		return out
	}
	times := make([]float64, len(scrapes))
	for i, sc := range scrapes {
		times[i] = sc.at.Sub(origin).Seconds()
	}
	from, to := 0, len(scrapes)-1
	for i, t := range times {
		if t <= firstS {
			from = i
		}
	}
	for i := len(times) - 1; i >= 0; i-- {
		if times[i] >= lastS {
			to = i
		}
	}
	if to < from {
		to = from
	}
	out.Window = &report.ServerMetricsWindow{FromS: times[from], ToS: times[to]}

	series := map[string]*report.ServerSeries{}
	hists := map[string]*report.ServerHistogram{}
	firstCum := map[string][]float64{}
	var order []string
	for i, sc := range scrapes {
		for _, p := range sc.points {
			key := seriesKey(p.name, p.labels)
			if p.typ == "histogram" {
				h := hists[key]
				if h == nil {
					h = &report.ServerHistogram{Name: p.name, Labels: p.labels, Panel: p.panel}
					for _, b := range p.bounds {
						h.UpperBounds = append(h.UpperBounds, report.JSONFloat(b))
					}
					hists[key] = h
					order = append(order, key)
				}
				h.T = append(h.T, times[i])
				h.Count = append(h.Count, p.count)
				h.Sum = append(h.Sum, p.sum)
				if i <= from || firstCum[key] == nil {
					if len(p.cum) == len(h.UpperBounds) {
						firstCum[key] = p.cum
					}
				}
				if i <= to && len(p.cum) == len(h.UpperBounds) && firstCum[key] != nil {
					h.DeltaCumulative = make([]float64, len(p.cum))
					for k := range p.cum {
						h.DeltaCumulative[k] = max(p.cum[k]-firstCum[key][k], 0)
					}
				}
				continue
			}
			ser := series[key]
			if ser == nil {
				ser = &report.ServerSeries{Name: p.name, Labels: p.labels, Type: p.typ, Panel: p.panel}
				series[key] = ser
				order = append(order, key)
			}
			ser.T = append(ser.T, times[i])
			ser.V = append(ser.V, p.value)
		}
	}
	slices.Sort(order)
	for _, key := range order {
		if ser := series[key]; ser != nil {
			out.Series = append(out.Series, *ser)
		}
		if h := hists[key]; h != nil {
			if h.DeltaCumulative == nil {
				h.DeltaCumulative = make([]float64, len(h.UpperBounds))
			}
			out.Histograms = append(out.Histograms, *h)
		}
	}
	return out
}

// histogramQuantile is Prometheus's histogram_quantile over cumulative
// buckets: linear interpolation inside the bucket holding rank q·count,
// from 0 for the first bucket; a rank in the +Inf bucket gives the
// highest finite bound. It is NaN without observations.
func histogramQuantile(q float64, bounds []float64, cum []float64) float64 {
	n := len(cum)
	if n == 0 || len(bounds) != n || cum[n-1] <= 0 {
		return math.NaN()
	}
	total := cum[n-1]
	rank := q * total
	i := sort.SearchFloat64s(cum, rank)
	if i >= n {
		i = n - 1
	}
	if math.IsInf(bounds[i], 1) {
		if n >= 2 {
			return bounds[n-2]
		}
		return math.NaN()
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = bounds[i-1], cum[i-1]
	}
	inBucket := cum[i] - below
	if inBucket <= 0 {
		return bounds[i]
	}
	return lo + (bounds[i]-lo)*(rank-below)/inBucket
}

// bucketOf is the bounds of the bucket histogramQuantile interpolates q
// in (the highest finite bound twice for the +Inf bucket).
func bucketOf(q float64, bounds, cum []float64) (lo, hi float64) {
	n := len(cum)
	i := min(sort.SearchFloat64s(cum, q*cum[n-1]), n-1)
	if math.IsInf(bounds[i], 1) {
		if n >= 2 {
			return bounds[n-2], bounds[n-2]
		}
		return math.NaN(), math.NaN()
	}
	if i > 0 {
		lo = bounds[i-1]
	}
	return lo, bounds[i]
}

// mergedDelta sums the window deltas of every label set of the first of
// names the server has (label sets whose bounds differ from the first's
// are left out).
func mergedDelta(m *report.ServerMetrics, names []string) (string, []float64, []float64) {
	for _, name := range names {
		var bounds, cum []float64
		for _, h := range m.Histograms {
			if h.Name != name {
				continue
			}
			if bounds == nil {
				for _, b := range h.UpperBounds {
					bounds = append(bounds, float64(b))
				}
				cum = make([]float64, len(bounds))
			}
			if len(h.DeltaCumulative) != len(bounds) {
				continue
			}
			for k, v := range h.DeltaCumulative {
				cum[k] += v
			}
		}
		if bounds != nil {
			return name, bounds, cum
		}
	}
	return "", nil, nil
}

// clientPercentiles is a client metric's median and percentiles (ms).
type clientPercentiles struct {
	metric string
	ps     []float64 // 0..100
	ms     []float64
}

// compareWithClient fills m.VsClient: for each client metric the server
// has a histogram of, every percentile of the client's beside the
// server's.
func compareWithClient(m *report.ServerMetrics, client []clientPercentiles) {
	m.VsClient = nil
	for _, c := range client {
		name, bounds, cum := mergedDelta(m, vsClientNames(c.metric))
		if name == "" || cum[len(cum)-1] <= 0 {
			continue
		}
		for i, p := range c.ps {
			server := histogramQuantile(p/100, bounds, cum) * 1000
			if math.IsNaN(server) {
				continue
			}
			lo, hi := bucketOf(p/100, bounds, cum)
			m.VsClient = append(m.VsClient, report.ServerClientRow{Metric: c.metric, P: p, Histogram: name,
				ServerMs: server, BucketLoMs: lo * 1000, BucketHiMs: hi * 1000, ClientMs: c.ms[i], DiffMs: c.ms[i] - server})
		}
	}
}
