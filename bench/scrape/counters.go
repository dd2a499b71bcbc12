package scrape

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/metrics"
)

// Counters are the /metrics counters Python samples before and after a
// run, for the speculative-decoding and diffusion deltas of its block,
// and the prefix cache's from the same answer (PrefixCacheOfRun).
type Counters struct {
	Spec      metrics.SpecDecodeCounters
	Diffusion metrics.DiffusionCounters
	prefix    prefixReading
}

// ReadCounters is GET url (the server's /metrics); ok is false when the
// server has no such endpoint or it failed, and the deltas are then
// skipped, as in Python.
func ReadCounters(ctx context.Context, client *http.Client, url string, headers []plan.Header) (Counters, bool) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Counters{}, false
	}
	for _, h := range headers {
		req.Header.Set(h.Key, h.Value)
	}
	resp, err := client.Do(req)
	if err != nil {
		return Counters{}, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Counters{}, false
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxScrapeBytes))
	if err != nil {
		return Counters{}, false
	}
	var c Counters
	c.Spec, _ = metrics.ParseSpecDecode(body)
	c.Diffusion, _ = metrics.ParseDiffusion(body)
	// What parsed before a malformed family still counts.
	a, _ := parseServerMetrics(body, resp.Header.Get("Content-Type"))
	c.prefix = readPrefixCache(a)
	return c, true
}
