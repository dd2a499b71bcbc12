package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
)

// startServerMetrics starts --server-metrics' scraper before the first
// request, so its first scrape is the baseline; nil without the flag.
func (r *run) startServerMetrics(ctx context.Context) *serverScraper {
	url := r.cfg.serverMetricsURL()
	if url == "" {
		return nil
	}
	s := newServerScraper(url, r.cfg.serverMetricsInterval(), r.control, r.cfg.Headers)
	s.start(ctx)
	return s
}

// finish stops the scraper after one last scrape (with ctx) and returns
// its series on the run's time axis; nil for a nil scraper.
func (s *serverScraper) finish(ctx context.Context, res *engine.Result) *ServerMetrics {
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

// compareServerMetrics fills the "server vs client" rows from the
// client's statistics: the median and every --metric-percentiles value of
// TTFT, ITL and E2EL.
func (r *run) compareServerMetrics(s *metrics.Summary) {
	if r.serverMetrics == nil || s.Pooling {
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
	r.serverMetrics.compareWithClient(client)
}

// SidecarPath is the sidecar file beside a result file: the result's
// name without its extension, plus ".stampede.json".
func SidecarPath(resultPath string) string {
	root, _ := pySplitExt(resultPath)
	return root + ".stampede.json"
}

// serverMetricsSidecar is the part of the sidecar --server-metrics
// writes: {"version": 1, "server_metrics": {...}}.
type serverMetricsSidecar struct {
	Version       int            `json:"version"`
	ServerMetrics *ServerMetrics `json:"server_metrics"`
}

// saveServerMetrics writes the scraped series into the sidecar beside
// the result; a failure only warns, as the timeline's does.
func (r *run) saveServerMetrics(resultPath string) {
	if r.serverMetrics == nil {
		return
	}
	path := SidecarPath(resultPath)
	if err := writeJSONFile(path, serverMetricsSidecar{Version: 1, ServerMetrics: r.serverMetrics}); err != nil {
		fmt.Fprintf(r.stderr, "WARNING: server metrics not saved: %v\n", err)
	}
}

func writeJSONFile(path string, v any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	if err := enc.Encode(v); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
