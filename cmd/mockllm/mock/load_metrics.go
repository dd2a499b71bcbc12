package mock

import (
	"strconv"
	"sync/atomic"
)

// loadMetrics are the /metrics series that move with the mock's load, named
// as vLLM names them: the KV cache's use, modelled from the tokens the
// running streams hold (each holds its prompt and what it generated so
// far); prefix cache queries (every admitted prompt token) and hits (the
// tokens of those the prefix cache held, prefixcache.go; 0 with the cache
// off), both counted when a request is admitted, as vLLM's scheduler counts
// them; and the latency histograms vLLM's engine keeps
// (TTFT, inter-token latency, end-to-end latency, queue time). The writer
// goroutine updates them; /metrics reads them from an event loop, so every
// field is atomic.
type loadMetrics struct {
	kvTokens      atomic.Int64
	prefixQueries atomic.Uint64
	prefixHits    atomic.Uint64
	ttft, itl     histogram
	e2e, queue    histogram
}

// kvCacheSeqs sizes the mock's KV cache: this many MaxModelLen-long
// sequences fit.
const kvCacheSeqs = 64

// vLLM's bucket bounds (seconds) for its TTFT and queue histograms, and
// for its inter-token one, each with finer bounds below so that the
// mock's millisecond-scale latencies fall in more than one bucket.
var (
	ttftBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.05, 0.075,
		0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	e2eBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

func (m *loadMetrics) init() {
	m.ttft.init(ttftBuckets)
	m.itl.init(itlBuckets)
	m.e2e.init(e2eBuckets)
	m.queue.init(ttftBuckets)
}

// histogram is a Prometheus histogram one goroutine observes into and
// any other may read: per-bucket counts (not cumulative), the count and
// the sum in nanoseconds.
type histogram struct {
	bounds []float64 // upper bounds, seconds
	counts []atomic.Uint64
	count  atomic.Uint64
	sumNs  atomic.Int64
}

func (h *histogram) init(bounds []float64) {
	h.bounds = bounds
	h.counts = make([]atomic.Uint64, len(bounds)+1)
}

// observe adds one value of ns nanoseconds.
func (h *histogram) observe(ns int64) {
	if ns < 0 {
		ns = 0
	}
	v := float64(ns) / 1e9
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(ns)
	h.count.Add(1)
}

// appendHistogram writes h in the text format: cumulative _bucket lines
// with le labels, then _sum and _count.
func appendHistogram(b []byte, name, help, labels string, h *histogram) []byte {
	b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" histogram\n"...)
	var cum uint64
	for i := range h.counts {
		cum += h.counts[i].Load()
		le := "+Inf"
		if i < len(h.bounds) {
			le = strconv.FormatFloat(h.bounds[i], 'g', -1, 64)
		}
		b = sample(b, name+"_bucket", labels+`,le="`+le+`"`, float64(cum))
	}
	b = sample(b, name+"_sum", labels, float64(h.sumNs.Load())/1e9)
	return sample(b, name+"_count", labels, float64(h.count.Load()))
}

// appendLoadMetrics writes the load series after the counters
// serveMetrics writes.
func (s *Server) appendLoadMetrics(b []byte, labels string) []byte {
	m := &s.load
	capacity := float64(s.cfg.MaxModelLen) * kvCacheSeqs
	usage := min(max(float64(m.kvTokens.Load())/capacity, 0), 1)
	b = append(b, "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n# TYPE vllm:kv_cache_usage_perc gauge\n"...)
	b = sample(b, "vllm:kv_cache_usage_perc", labels, usage)
	b = append(b, "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.\n# TYPE vllm:prefix_cache_queries_total counter\n"...)
	b = sample(b, "vllm:prefix_cache_queries_total", labels, float64(m.prefixQueries.Load()))
	b = append(b, "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.\n# TYPE vllm:prefix_cache_hits_total counter\n"...)
	b = sample(b, "vllm:prefix_cache_hits_total", labels, float64(m.prefixHits.Load()))
	b = appendHistogram(b, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", labels, &m.ttft)
	b = appendHistogram(b, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", labels, &m.itl)
	b = appendHistogram(b, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", labels, &m.e2e)
	return appendHistogram(b, "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", labels, &m.queue)
}

// admitted notes that st left the queue at startNs and began to hold its
// prompt in the KV cache.
func (m *loadMetrics) admitted(st *stream, startNs int64) {
	m.queue.observe(startNs - st.arrivalNs)
	m.prefixQueries.Add(uint64(st.promptTotal))
	m.prefixHits.Add(uint64(st.cachedTokens))
	m.kvTokens.Add(int64(st.promptTotal))
	st.kvHeld = int64(st.promptTotal)
}

// generated notes n more tokens held by st.
func (m *loadMetrics) generated(st *stream, n int) {
	m.kvTokens.Add(int64(n))
	st.kvHeld += int64(n)
}

// finished releases what st held and records its end-to-end latency.
func (m *loadMetrics) finished(st *stream, nowNs int64) {
	m.kvTokens.Add(-st.kvHeld)
	st.kvHeld = 0
	m.e2e.observe(nowNs - st.arrivalNs)
}
