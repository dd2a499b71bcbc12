package mock

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads /metrics with the Prometheus project's own parser, so the
// test also checks that the exposition is valid text format.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

func gauge(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil || len(f.Metric) != 1 {
		t.Fatalf("/metrics has no single %s", name)
	}
	m := f.Metric[0]
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	t.Fatalf("%s is neither a gauge nor a counter", name)
	return 0
}

func hist(t *testing.T, fams map[string]*dto.MetricFamily, name string) *dto.Histogram {
	t.Helper()
	f := fams[name]
	if f == nil || len(f.Metric) != 1 || f.Metric[0].Histogram == nil {
		t.Fatalf("/metrics has no histogram %s", name)
	}
	return f.Metric[0].Histogram
}

// TestLoadMetrics follows one stream: while it runs, the running gauge and
// the KV cache's use rise; once it ends they fall back, and the
// histograms hold one TTFT, one e2e latency, one queue time and one gap
// per later token, with a TTFT no shorter than the configured one.
func TestLoadMetrics(t *testing.T) {
	t.Parallel()
	const tokens = 20
	ttft := 30 * time.Millisecond
	_, base := startServer(t, Config{Model: "m", TTFT: ttft, ITL: 5 * time.Millisecond})

	idle := scrape(t, base)
	if u := gauge(t, idle, "vllm:kv_cache_usage_perc"); u != 0 {
		t.Errorf("idle KV cache usage %v, want 0", u)
	}
	resp := post(t, base+"/v1/completions", `{"prompt":"abcd","max_tokens":20,"stream":true}`)
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: {") {
			break
		}
	}
	busy := scrape(t, base)
	if r := gauge(t, busy, "vllm:num_requests_running"); r != 1 {
		t.Errorf("running %v during the stream, want 1", r)
	}
	if u := gauge(t, busy, "vllm:kv_cache_usage_perc"); !(u > 0) {
		t.Errorf("KV cache usage %v during the stream, want > 0", u)
	}
	if q := gauge(t, busy, "vllm:prefix_cache_queries_total"); q != 4 {
		t.Errorf("prefix cache queries %v, want the 4 prompt tokens", q)
	}
	readSSE(t, rd)
	resp.Body.Close()

	var after map[string]*dto.MetricFamily
	for i := 0; ; i++ {
		after = scrape(t, base)
		if gauge(t, after, "vllm:num_requests_running") == 0 || i == 100 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if u := gauge(t, after, "vllm:kv_cache_usage_perc"); u != 0 {
		t.Errorf("KV cache usage %v after the stream, want 0", u)
	}
	for name, want := range map[string]uint64{
		"vllm:time_to_first_token_seconds": 1,
		"vllm:inter_token_latency_seconds": tokens - 1,
		"vllm:e2e_request_latency_seconds": 1,
		"vllm:request_queue_time_seconds":  1,
	} {
		h := hist(t, after, name)
		if h.GetSampleCount() != want {
			t.Errorf("%s count %d, want %d", name, h.GetSampleCount(), want)
		}
		b := h.Bucket
		if last := b[len(b)-1]; last.GetCumulativeCount() != want {
			t.Errorf("%s last bucket %d, want %d", name, last.GetCumulativeCount(), want)
		}
		for i := 1; i < len(b); i++ {
			if b[i].GetCumulativeCount() < b[i-1].GetCumulativeCount() || b[i].GetUpperBound() <= b[i-1].GetUpperBound() {
				t.Errorf("%s buckets not cumulative: %v", name, b)
			}
		}
	}
	if s := hist(t, after, "vllm:time_to_first_token_seconds").GetSampleSum(); s < ttft.Seconds() {
		t.Errorf("TTFT sum %vs, shorter than the configured %v", s, ttft)
	}
	if e2e, first := hist(t, after, "vllm:e2e_request_latency_seconds").GetSampleSum(),
		hist(t, after, "vllm:time_to_first_token_seconds").GetSampleSum(); e2e < first {
		t.Errorf("e2e %vs before the first token at %vs", e2e, first)
	}
}

// TestLoadMetricsWaiting: with one sequence allowed at a time, a second
// stream waits, and the waiting gauge says so.
func TestLoadMetricsWaiting(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{Model: "m", Mode: DecodeStep, MaxNumSeqs: 1, ITL: 5 * time.Millisecond})
	first := post(t, base+"/v1/completions", `{"prompt":"ab","max_tokens":200,"stream":true}`)
	defer first.Body.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"ab","max_tokens":2,"stream":true}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	waited := false
	for i := 0; i < 200 && !waited; i++ {
		waited = gauge(t, scrape(t, base), "vllm:num_requests_waiting") == 1
		time.Sleep(2 * time.Millisecond)
	}
	if !waited {
		t.Error("the second stream never showed as waiting")
	}
	first.Body.Close()
	<-done
}

// TestPrefixCacheCounters: with --prefix-cache global a repeated prompt's
// tokens count as hits on /metrics; POST /reset_prefix_cache empties the
// cache, so the same prompt misses again, while both counters go on
// counting from where they were.
func TestPrefixCacheCounters(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, Config{Model: "m", PrefixCache: PrefixCacheGlobal, PrefixCacheTokens: 1000})
	const body = `{"prompt":"abcdefghij","max_tokens":2}`
	counters := func() (queries, hits float64) {
		fams := scrape(t, base)
		return gauge(t, fams, "vllm:prefix_cache_queries_total"), gauge(t, fams, "vllm:prefix_cache_hits_total")
	}
	for i, want := range []struct{ queries, hits float64 }{{10, 0}, {20, 10}, {30, 10}} {
		if i == 2 {
			resp := post(t, base+"/reset_prefix_cache", "")
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST /reset_prefix_cache: %s", resp.Status)
			}
		}
		readJSON(t, post(t, base+"/v1/completions", body))
		if q, h := counters(); q != want.queries || h != want.hits {
			t.Errorf("request %d: queries %v hits %v, want %v and %v", i+1, q, h, want.queries, want.hits)
		}
	}
}
