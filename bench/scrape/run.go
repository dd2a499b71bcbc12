package scrape

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
)

// Target is what --server-metrics scrapes: the URL (without
// credentials), the interval, the control client and the headers the
// scrape may carry (bench/endpoint's ScrapeHeaders: none of the base
// URL's credentials unless the URL is on its origin).
type Target struct {
	URL      string
	Interval time.Duration
	Client   *http.Client
	Headers  []plan.Header
}

// Start starts --server-metrics' scraper before the first request: it
// takes the first scrape, the baseline, at once, says on stderr which
// series it recognised (or why the scrape failed), and polls on its own
// goroutine from then on. Nil when t.URL is "" (no --server-metrics).
func Start(ctx context.Context, t Target, stderr io.Writer) *Scraper {
	if t.URL == "" {
		return nil
	}
	s := newScraper(t.URL, t.Interval, t.Client, t.Headers)
	s.scrapeOnce(ctx)
	s.mu.Lock()
	fmt.Fprintln(stderr, s.recognition())
	s.mu.Unlock()
	s.start(ctx)
	return s
}

// recognition is the line Start prints: the servers, the families
// recognised by name, and how many were left out (the first few named).
func (s *Scraper) recognition() string {
	f := s.found
	if f == nil {
		return fmt.Sprintf("stampede: server metrics: the first scrape of %s failed (%s); retrying every %v", s.url, s.lastErr, s.interval)
	}
	if len(f.recognised) == 0 {
		return fmt.Sprintf("stampede: server metrics: no series of vLLM, SGLang, llama.cpp or TGI recognised at %s; %d ignored%s",
			s.url, len(f.ignored), someNames(f.ignored))
	}
	return fmt.Sprintf("stampede: server metrics: %s, %d series recognised: %s; %d ignored%s",
		strings.Join(f.servers, "+"), len(f.recognised), strings.Join(f.recognised, ", "), len(f.ignored), someNames(f.ignored))
}

// someNames is " (a, b, c, ...)" for the first few of names; "" for none.
func someNames(names []string) string {
	const shown = 5
	if len(names) == 0 {
		return ""
	}
	if len(names) <= shown {
		return " (" + strings.Join(names, ", ") + ")"
	}
	return " (" + strings.Join(names[:shown], ", ") + ", ...)"
}

// Finish stops the scraper after one last scrape (with ctx) and returns
// its series on the run's time axis; nil for a nil scraper.
func (s *Scraper) Finish(ctx context.Context, res *engine.Result) *report.ServerMetrics {
	if s == nil {
		return nil
	}
	s.stop(ctx)
	first, last := runSpan(&res.Data)
	return s.result(res.Start, first, last)
}

// runSpan is the run's first request start and last request end, in
// seconds of run time.
func runSpan(d *metrics.RunData) (first, last float64) {
	seen := false
	for _, rr := range d.Log.All() {
		if !rr.Sent() {
			continue
		}
		start, end := metrics.Seconds(rr.StartNs), metrics.Seconds(rr.StartNs+rr.LatencyNs)
		if !seen || start < first {
			first = start
		}
		if !seen || end > last {
			last = end
		}
		seen = true
	}
	return first, last
}

// CompareWithClient fills the "server vs client" rows of m from the
// client's statistics: the median and every --metric-percentiles value of
// TTFT, ITL, TPOT and E2EL. A nil m (no --server-metrics) stays nil.
func CompareWithClient(m *report.ServerMetrics, s *metrics.Summary) {
	if m == nil || s.Pooling {
		return
	}
	var client []clientPercentiles
	for _, m := range []struct {
		name string
		st   *metrics.Stats
	}{{"ttft", &s.TTFT}, {"itl", &s.ITL}, {"tpot", &s.TPOT}, {"e2el", &s.E2EL}} {
		c := clientPercentiles{metric: m.name, ps: []float64{50}, ms: []float64{m.st.MedianMs}}
		for _, p := range m.st.Percentiles {
			if p.P != 50 {
				c.ps, c.ms = append(c.ps, p.P), append(c.ms, p.ValueMs)
			}
		}
		client = append(client, c)
	}
	compareWithClient(m, client)
}
