package scrape

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/internal/py"
)

// vllmExposition is a trimmed /metrics answer of vLLM (text format 0.0.4).
const vllmExposition = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
# HELP vllm:kv_cache_usage_perc KV-cache usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 120.0
# HELP vllm:unrelated_total Something else.
# TYPE vllm:unrelated_total counter
vllm:unrelated_total{engine="0",model_name="m"} 9.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.01",model_name="m"} 1.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 3.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 4.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 0.5
`

// sglangOpenMetrics is an SGLang-style answer in OpenMetrics.
const sglangOpenMetrics = `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m"} 7
# TYPE sglang:generation_tokens counter
sglang:generation_tokens_total{model_name="m"} 42
# EOF
`

func TestParseServerMetricsText(t *testing.T) {
	a, err := parseServerMetrics([]byte(vllmExposition), "text/plain; version=0.0.4; charset=utf-8")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]promPoint{}
	for _, p := range a.points {
		got[p.name] = p
	}
	if _, ok := got["vllm:unrelated_total"]; ok {
		t.Error("kept a series outside the list")
	}
	if p := got["vllm:num_requests_running"]; p.typ != "gauge" || p.value != 3 || p.labels["engine"] != "0" {
		t.Errorf("running: %+v", p)
	}
	if p := got["vllm:generation_tokens_total"]; p.typ != "counter" || p.value != 120 {
		t.Errorf("generation tokens: %+v", p)
	}
	h := got["vllm:time_to_first_token_seconds"]
	if h.typ != "histogram" || h.count != 4 || h.sum != 0.5 || len(h.bounds) != 3 || !math.IsInf(h.bounds[2], 1) || h.cum[1] != 3 {
		t.Errorf("TTFT histogram: %+v", h)
	}
}

func TestParseServerMetricsOpenMetrics(t *testing.T) {
	a, err := parseServerMetrics([]byte(sglangOpenMetrics), "application/openmetrics-text; version=1.0.0; charset=utf-8")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]float64{}
	for _, p := range a.points {
		names[p.name] = p.value
	}
	if names["sglang:num_running_reqs"] != 7 || names["sglang:generation_tokens_total"] != 42 {
		t.Errorf("OpenMetrics points: %v", names)
	}
}

func TestParseServerMetricsRejectsGarbage(t *testing.T) {
	if _, err := parseServerMetrics([]byte("vllm:num_requests_running{ 3\n"), ""); err == nil {
		t.Error("a malformed line parsed")
	}
}

func FuzzParseServerMetrics(f *testing.F) {
	f.Add([]byte(vllmExposition), "text/plain; version=0.0.4")
	f.Add([]byte(sglangOpenMetrics), "application/openmetrics-text; version=1.0.0")
	f.Add([]byte(llamacppExposition), "text/plain; version=0.0.4")
	f.Add([]byte(tgiExposition), "")
	f.Add([]byte(sglangExposition), "text/plain")
	f.Add([]byte("# TYPE x histogram\nx_bucket{le=\"1\"} 2\nx_bucket{le=\"0.5\"} 5\n"), "")
	f.Add([]byte(vllmPrefixCache(100, 40)), "text/plain; version=0.0.4")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		a, _ := parseServerMetrics(body, contentType)
		if r := readPrefixCache(a); r.source != nil && len(r.source.queries) == 0 {
			t.Fatalf("a prefix-cache reading without queries: %+v", r)
		}
		if len(a.recognised)+len(a.ignored) > 0 && len(a.points) > 0 && a.points[0].panel == "" {
			t.Fatalf("a kept point without a panel: %+v", a.points[0])
		}
		for _, p := range a.points {
			if p.typ == "histogram" && (len(p.bounds) != len(p.cum) || !math.IsInf(p.bounds[len(p.bounds)-1], 1)) {
				t.Fatalf("histogram without a closing +Inf bucket: %+v", p)
			}
		}
	})
}

func TestHistogramQuantile(t *testing.T) {
	bounds := []float64{0.1, 0.2, 0.4, math.Inf(1)}
	cum := []float64{10, 30, 40, 40}
	for _, tt := range []struct{ q, want float64 }{
		{0.5, 0.1 + 0.1*(20-10)/20}, // rank 20 in (0.1, 0.2]
		{0.25, 0.1 * 10 / 10},       // rank 10: the first bucket's top
		{0.05, 0.1 * 2 / 10},        // inside the first bucket, from 0
		{1, 0.4},
	} {
		if got := histogramQuantile(tt.q, bounds, cum); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("q %v: %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := histogramQuantile(0.99, []float64{1, math.Inf(1)}, []float64{1, 10}); got != 1 {
		t.Errorf("rank in +Inf: %v, want the highest finite bound", got)
	}
	if !math.IsNaN(histogramQuantile(0.5, bounds, []float64{0, 0, 0, 0})) {
		t.Error("no observations gave a number")
	}
}

// TestBuildServerMetrics: three scrapes around a run; the delta runs from
// the scrape before the first request to the one after the last, and a
// counter and a gauge keep every scrape.
func TestBuildServerMetrics(t *testing.T) {
	origin := time.Unix(1000, 0)
	mk := func(sec float64, running, gen float64, cum []float64) scrape {
		return scrape{at: origin.Add(time.Duration(sec * float64(time.Second))), points: []promPoint{
			{name: "vllm:num_requests_running", typ: "gauge", value: running},
			{name: "vllm:generation_tokens_total", typ: "counter", value: gen},
			{name: "vllm:time_to_first_token_seconds", typ: "histogram", bounds: []float64{0.1, math.Inf(1)}, cum: cum, count: cum[1]},
		}}
	}
	scrapes := []scrape{
		mk(-0.5, 0, 100, []float64{5, 5}), // before the run: the baseline
		mk(0.5, 4, 140, []float64{7, 8}),
		mk(1.5, 0, 200, []float64{9, 11}), // after the run
	}
	m := buildServerMetrics("u", time.Second, scrapes, 1, "boom", origin, 0.1, 1.2)
	if m.Scrapes != 3 || m.Failures != 1 || m.LastError != "boom" {
		t.Errorf("counts: %+v", m)
	}
	if m.Window == nil || m.Window.FromS != -0.5 || m.Window.ToS != 1.5 {
		t.Errorf("window %+v, want -0.5..1.5", m.Window)
	}
	if len(m.Series) != 2 || len(m.Histograms) != 1 {
		t.Fatalf("series %d, histograms %d", len(m.Series), len(m.Histograms))
	}
	h := m.Histograms[0]
	if h.DeltaCumulative[0] != 4 || h.DeltaCumulative[1] != 6 {
		t.Errorf("delta %v, want [4 6]", h.DeltaCumulative)
	}
	compareWithClient(m, []clientPercentiles{{metric: "ttft", ps: []float64{50}, ms: []float64{80}}})
	if len(m.VsClient) != 1 {
		t.Fatalf("rows %v", m.VsClient)
	}
	r := m.VsClient[0]
	// Rank 3 of 6 lies in the first bucket, which holds 4: 0.1 * 3/4.
	if math.Abs(r.ServerMs-75) > 1e-9 || math.Abs(r.DiffMs-5) > 1e-9 || r.BucketLoMs != 0 || r.BucketHiMs != 100 {
		t.Errorf("row %+v, want server 75 ms, diff 5 ms", r)
	}
	var b strings.Builder
	report.WriteServerVsClient(&b, m)
	if !strings.Contains(b.String(), "P50 TTFT") || !strings.Contains(b.String(), "75.00") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestReportFlagsValidation(t *testing.T) {
	for _, args := range [][]string{
		{"--server-metrics-interval", "0"},
		{"--server-metrics-interval", "-1"},
		{"--server-metrics", "ftp://x/metrics"},
		{"--report", "out.txt"},
	} {
		_, err := benchtest.ParseArgs(append([]string{"--model", "m"}, args...), benchtest.NoEnv)
		var usage *py.UsageError
		if err == nil || !asUsage(err, &usage) || !strings.Contains(usage.Msg, strings.TrimPrefix(args[0], "")) {
			t.Errorf("%v: %v, want a usage error naming %s", args, err, args[0])
		}
	}
	c, err := benchtest.ParseArgs([]string{"--model", "m", "--base-url", "http://h:1", "--server-metrics", "--report", "r.html"}, benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ServerMetricsURL(); got != "http://h:1/metrics" {
		t.Errorf("default URL %q", got)
	}
	c, err = benchtest.ParseArgs([]string{"--model", "m", "--server-metrics", "http://other:9/m", "--server-metrics-interval", "0.5"}, benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.ServerMetricsURL() != "http://other:9/m" || c.ScrapeInterval() != 500*time.Millisecond {
		t.Errorf("URL %q interval %v", c.ServerMetricsURL(), c.ScrapeInterval())
	}
	if c, _ := benchtest.ParseArgs([]string{"--model", "m"}, benchtest.NoEnv); c.ServerMetricsURL() != "" {
		t.Error("scraping without --server-metrics")
	}
}

func asUsage(err error, target **py.UsageError) bool {
	u, ok := err.(*py.UsageError)
	if ok {
		*target = u
	}
	return ok
}
