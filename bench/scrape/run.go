package scrape

import (
	"context"
	"net/http"
	"time"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
)

// Start starts --server-metrics' scraper of url (with the control client
// and the --header headers) before the first request, so that its first
// scrape is the baseline; nil when url is "" (no --server-metrics).
func Start(ctx context.Context, url string, interval time.Duration, client *http.Client, headers []plan.Header) *Scraper {
	if url == "" {
		return nil
	}
	s := newScraper(url, interval, client, headers)
	s.start(ctx)
	return s
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
	for i := range d.Results {
		rr := &d.Results[i]
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
// TTFT, ITL and E2EL. A nil m (no --server-metrics) stays nil.
func CompareWithClient(m *report.ServerMetrics, s *metrics.Summary) {
	if m == nil || s.Pooling {
		return
	}
	var client []clientPercentiles
	for _, m := range []struct {
		name string
		st   *metrics.Stats
	}{{"ttft", &s.TTFT}, {"itl", &s.ITL}, {"e2el", &s.E2EL}} {
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
