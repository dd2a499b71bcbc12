package scrape

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/report"
)

// The expositions below are written by hand from each server's metric
// definitions (names, types, labels, units), as their /metrics would
// print them mid-run.

// llamacppExposition: llama.cpp's counters and gauges (no labels, no
// histograms), plus one family stampede leaves out.
const llamacppExposition = `# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 1200
# HELP llamacpp:prompt_tokens_cached_total Number of prompt tokens reused from the cache
# TYPE llamacpp:prompt_tokens_cached_total counter
llamacpp:prompt_tokens_cached_total 300
# HELP llamacpp:prompt_seconds_total Prompt process time
# TYPE llamacpp:prompt_seconds_total counter
llamacpp:prompt_seconds_total 1.5
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 640
# HELP llamacpp:tokens_predicted_seconds_total Predict process time
# TYPE llamacpp:tokens_predicted_seconds_total counter
llamacpp:tokens_predicted_seconds_total 12.25
# HELP llamacpp:n_decode_total Total number of llama_decode() calls
# TYPE llamacpp:n_decode_total counter
llamacpp:n_decode_total 410
# HELP llamacpp:n_tokens_max Largest observed sequence length (prompt + generation)
# TYPE llamacpp:n_tokens_max counter
llamacpp:n_tokens_max 512
# HELP llamacpp:prompt_tokens_seconds Average prompt throughput in tokens/s.
# TYPE llamacpp:prompt_tokens_seconds gauge
llamacpp:prompt_tokens_seconds 800
# HELP llamacpp:predicted_tokens_seconds Average generation throughput in tokens/s.
# TYPE llamacpp:predicted_tokens_seconds gauge
llamacpp:predicted_tokens_seconds 52.2
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 4
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 2
# HELP llamacpp:n_busy_slots_per_decode Average number of busy slots per llama_decode() call
# TYPE llamacpp:n_busy_slots_per_decode gauge
llamacpp:n_busy_slots_per_decode 3.5
`

// tgiExposition: TGI as metrics-exporter-prometheus renders it: counters
// without "_total", every *duration a histogram in seconds, labels
// method="prefill"/"decode" on the batch series.
const tgiExposition = `# TYPE tgi_request_count counter
tgi_request_count 12
# TYPE tgi_request_success counter
tgi_request_success 10
# TYPE tgi_request_failure counter
tgi_request_failure{err="validation"} 1
# TYPE tgi_batch_inference_count counter
tgi_batch_inference_count{method="prefill"} 5
tgi_batch_inference_count{method="decode"} 300
# TYPE tgi_queue_size gauge
tgi_queue_size 3
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 8
# TYPE tgi_batch_current_max_tokens gauge
tgi_batch_current_max_tokens 4096
# TYPE tgi_request_duration histogram
tgi_request_duration_bucket{le="0.5"} 2
tgi_request_duration_bucket{le="1"} 6
tgi_request_duration_bucket{le="2"} 10
tgi_request_duration_bucket{le="+Inf"} 10
tgi_request_duration_sum 11.5
tgi_request_duration_count 10
# TYPE tgi_request_mean_time_per_token_duration histogram
tgi_request_mean_time_per_token_duration_bucket{le="0.01"} 1
tgi_request_mean_time_per_token_duration_bucket{le="0.02"} 9
tgi_request_mean_time_per_token_duration_bucket{le="+Inf"} 10
tgi_request_mean_time_per_token_duration_sum 0.16
tgi_request_mean_time_per_token_duration_count 10
# TYPE tgi_request_queue_duration histogram
tgi_request_queue_duration_bucket{le="0.01"} 7
tgi_request_queue_duration_bucket{le="+Inf"} 10
tgi_request_queue_duration_sum 0.2
tgi_request_queue_duration_count 10
# TYPE tgi_batch_inference_duration histogram
tgi_batch_inference_duration_bucket{method="decode",le="0.02"} 290
tgi_batch_inference_duration_bucket{method="decode",le="+Inf"} 300
tgi_batch_inference_duration_sum{method="decode"} 4.5
tgi_batch_inference_duration_count{method="decode"} 300
# TYPE tgi_request_input_length histogram
tgi_request_input_length_bucket{le="100"} 4
tgi_request_input_length_bucket{le="+Inf"} 10
tgi_request_input_length_sum 1500
tgi_request_input_length_count 10
# TYPE tgi_request_skipped_tokens summary
tgi_request_skipped_tokens{quantile="0.5"} 0
tgi_request_skipped_tokens_sum 0
tgi_request_skipped_tokens_count 10
`

// sglangExposition: SGLang's prometheus_client families with its labels,
// in the text format.
const sglangExposition = `# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="unified",model_name="m",tp_rank="0"} 6.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{engine_type="unified",model_name="m",tp_rank="0"} 1.0
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{engine_type="unified",model_name="m",tp_rank="0"} 0.4
# HELP sglang:cache_hit_rate The prefix cache hit rate.
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{engine_type="unified",model_name="m",tp_rank="0"} 0.1
# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="m"} 900.0
# HELP sglang:cached_tokens_total Number of cached prompt tokens.
# TYPE sglang:cached_tokens_total counter
sglang:cached_tokens_total{model_name="m"} 90.0
# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 3.0
sglang:time_to_first_token_seconds_bucket{le="0.2",model_name="m"} 5.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 5.0
sglang:time_to_first_token_seconds_count{model_name="m"} 5.0
sglang:time_to_first_token_seconds_sum{model_name="m"} 0.6
# HELP sglang:num_so_requests_total Number of structured output requests processed.
# TYPE sglang:num_so_requests_total counter
sglang:num_so_requests_total{model_name="m"} 0.0
`

// TestEachServersSeries: every server's families land on their panels by
// type, the ones stampede does not map are counted as ignored.
func TestEachServersSeries(t *testing.T) {
	for _, tt := range []struct {
		server, body string
		// kept: name → panel and type of its first point.
		kept    map[string][2]string
		ignored []string
	}{
		{server: "llama.cpp", body: llamacppExposition, kept: map[string][2]string{
			"llamacpp:prompt_tokens_total":            {"tokens", "counter"},
			"llamacpp:tokens_predicted_total":         {"tokens", "counter"},
			"llamacpp:prompt_tokens_cached_total":     {"prefix_cache", "counter"},
			"llamacpp:prompt_seconds_total":           {"busy", "counter"},
			"llamacpp:tokens_predicted_seconds_total": {"busy", "counter"},
			"llamacpp:n_decode_total":                 {"forward_passes", "counter"},
			"llamacpp:prompt_tokens_seconds":          {"throughput", "gauge"},
			"llamacpp:predicted_tokens_seconds":       {"throughput", "gauge"},
			"llamacpp:requests_processing":            {"requests", "gauge"},
			"llamacpp:requests_deferred":              {"requests", "gauge"},
		}, ignored: []string{"llamacpp:n_busy_slots_per_decode", "llamacpp:n_tokens_max"}},
		{server: "TGI", body: tgiExposition, kept: map[string][2]string{
			"tgi_request_count":                        {"request_rate", "counter"},
			"tgi_request_success":                      {"request_rate", "counter"},
			"tgi_request_failure":                      {"request_rate", "counter"},
			"tgi_batch_inference_count":                {"forward_passes", "counter"},
			"tgi_queue_size":                           {"requests", "gauge"},
			"tgi_batch_current_size":                   {"requests", "gauge"},
			"tgi_batch_current_max_tokens":             {"kv_cache_tokens", "gauge"},
			"tgi_request_duration":                     {"e2el", "histogram"},
			"tgi_request_mean_time_per_token_duration": {"tpot", "histogram"},
			"tgi_request_queue_duration":               {"queue", "histogram"},
			"tgi_batch_inference_duration":             {"step", "histogram"},
			"tgi_request_input_length":                 {"request_tokens", "histogram"},
		}, ignored: []string{"tgi_request_skipped_tokens"}},
		{server: "SGLang", body: sglangExposition, kept: map[string][2]string{
			"sglang:num_running_reqs":            {"requests", "gauge"},
			"sglang:num_queue_reqs":              {"requests", "gauge"},
			"sglang:token_usage":                 {"kv_cache_usage", "gauge"},
			"sglang:cache_hit_rate":              {"cache_hit_rate", "gauge"},
			"sglang:prompt_tokens_total":         {"tokens", "counter"},
			"sglang:cached_tokens_total":         {"prefix_cache", "counter"},
			"sglang:time_to_first_token_seconds": {"ttft", "histogram"},
		}, ignored: []string{"sglang:num_so_requests_total"}},
		{server: "vLLM", body: vllmExposition, kept: map[string][2]string{
			"vllm:num_requests_running":        {"requests", "gauge"},
			"vllm:kv_cache_usage_perc":         {"kv_cache_usage", "gauge"},
			"vllm:generation_tokens_total":     {"tokens", "counter"},
			"vllm:time_to_first_token_seconds": {"ttft", "histogram"},
		}, ignored: []string{"vllm:unrelated_total"}},
	} {
		a, err := parseServerMetrics([]byte(tt.body), "text/plain; version=0.0.4")
		if err != nil {
			t.Fatalf("%s: %v", tt.server, err)
		}
		if !slices.Equal(a.servers, []string{tt.server}) {
			t.Errorf("%s: servers %v", tt.server, a.servers)
		}
		got := map[string][2]string{}
		for _, p := range a.points {
			if _, ok := got[p.name]; !ok {
				got[p.name] = [2]string{p.panel, p.typ}
			}
		}
		for name, want := range tt.kept {
			if got[name] != want {
				t.Errorf("%s: %s kept as %v, want %v", tt.server, name, got[name], want)
			}
		}
		if len(got) != len(tt.kept) || len(a.recognised) != len(tt.kept) {
			t.Errorf("%s: kept %v (recognised %v), want the %d above", tt.server, got, a.recognised, len(tt.kept))
		}
		if !slices.Equal(a.ignored, tt.ignored) {
			t.Errorf("%s: ignored %v, want %v", tt.server, a.ignored, tt.ignored)
		}
	}
}

// TestRuleNeedsItsType: a family of a known name but another type is
// not read as the rule says (a counter as a gauge, a summary as a
// histogram); an untyped family passes for a level or a total.
func TestRuleNeedsItsType(t *testing.T) {
	body := `# TYPE llamacpp:requests_processing counter
llamacpp:requests_processing 3
# TYPE tgi_request_duration summary
tgi_request_duration{quantile="0.5"} 1
tgi_request_duration_sum 1
tgi_request_duration_count 1
tgi_queue_size 4
`
	a, err := parseServerMetrics([]byte(body), "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.recognised, []string{"tgi_queue_size"}) || len(a.ignored) != 2 {
		t.Errorf("recognised %v, ignored %v", a.recognised, a.ignored)
	}
	if len(a.points) != 1 || a.points[0].typ != "untyped" || a.points[0].value != 4 {
		t.Errorf("points %+v", a.points)
	}
}

// TestRulesNamePanels: every rule's panel is one the report draws, and
// no name is listed twice.
func TestRulesNamePanels(t *testing.T) {
	panels := map[string]bool{}
	for _, p := range report.ServerPanels {
		panels[p.ID] = true
	}
	names := map[string]bool{}
	for _, r := range seriesRules {
		if !panels[r.panel] {
			t.Errorf("%s: panel %q is not in report.ServerPanels", r.name, r.panel)
		}
		if names[r.name] {
			t.Errorf("%s listed twice", r.name)
		}
		names[r.name] = true
		if r.vsClient != "" && r.kind != distribution {
			t.Errorf("%s compares with the client but is no histogram", r.name)
		}
	}
}

// TestTGIVsClient: TGI's E2E and per-request TPOT histograms give server
// rows; it has no TTFT or ITL histogram, so those get none.
func TestTGIVsClient(t *testing.T) {
	origin := time.Unix(1000, 0)
	// The baseline: six requests done, all within 1 s and 0.02 s a token.
	baseline := `# TYPE tgi_request_duration histogram
tgi_request_duration_bucket{le="0.5"} 2
tgi_request_duration_bucket{le="1"} 6
tgi_request_duration_bucket{le="2"} 6
tgi_request_duration_bucket{le="+Inf"} 6
tgi_request_duration_sum 5
tgi_request_duration_count 6
# TYPE tgi_request_mean_time_per_token_duration histogram
tgi_request_mean_time_per_token_duration_bucket{le="0.01"} 1
tgi_request_mean_time_per_token_duration_bucket{le="0.02"} 6
tgi_request_mean_time_per_token_duration_bucket{le="+Inf"} 6
tgi_request_mean_time_per_token_duration_sum 0.1
tgi_request_mean_time_per_token_duration_count 6
`
	a0, _ := parseServerMetrics([]byte(baseline), "")
	a1, _ := parseServerMetrics([]byte(tgiExposition), "")
	m := buildServerMetrics("u", time.Second, []scrape{{at: origin.Add(-time.Second), points: a0.points}, {at: origin.Add(5 * time.Second), points: a1.points}},
		0, "", origin, 0, 4)
	compareWithClient(m, []clientPercentiles{
		{metric: "ttft", ps: []float64{50}, ms: []float64{10}},
		{metric: "itl", ps: []float64{50}, ms: []float64{10}},
		{metric: "tpot", ps: []float64{50}, ms: []float64{20}},
		{metric: "e2el", ps: []float64{50}, ms: []float64{1500}},
	})
	var metrics []string
	for _, r := range m.VsClient {
		metrics = append(metrics, r.Metric+"="+r.Histogram)
	}
	// The E2E delta is 4 requests, all in (1, 2]: the median interpolates
	// to 1.5 s.
	if !slices.Equal(metrics, []string{"tpot=tgi_request_mean_time_per_token_duration", "e2el=tgi_request_duration"}) {
		t.Fatalf("rows %v", metrics)
	}
	if e := m.VsClient[1]; math.Abs(e.ServerMs-1500) > 1e-9 {
		t.Errorf("E2E row %+v, want the server's median 1500 ms", e)
	}
}

// TestStartSaysWhatItRecognised: Start's first scrape is the baseline,
// and its stderr line names the server, the series and the rest.
func TestStartSaysWhatItRecognised(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(llamacppExposition))
	}))
	defer srv.Close()
	var stderr bytes.Buffer
	s := Start(context.Background(), Target{URL: srv.URL + "/metrics", Interval: time.Hour, Client: srv.Client()}, &stderr)
	s.Abort()
	want := "stampede: server metrics: llama.cpp, 10 series recognised: llamacpp:n_decode_total, llamacpp:predicted_tokens_seconds, " +
		"llamacpp:prompt_seconds_total, llamacpp:prompt_tokens_cached_total, llamacpp:prompt_tokens_seconds, llamacpp:prompt_tokens_total, " +
		"llamacpp:requests_deferred, llamacpp:requests_processing, llamacpp:tokens_predicted_seconds_total, llamacpp:tokens_predicted_total; " +
		"2 ignored (llamacpp:n_busy_slots_per_decode, llamacpp:n_tokens_max)\n"
	if stderr.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), want)
	}
	m := s.result(time.Now(), 0, 0)
	if m.Scrapes != 1 || m.Server != "llama.cpp" || len(m.Recognised) != 10 || len(m.Ignored) != 2 {
		t.Errorf("result: scrapes %d server %q recognised %d ignored %d", m.Scrapes, m.Server, len(m.Recognised), len(m.Ignored))
	}

	stderr.Reset()
	s = Start(context.Background(), Target{URL: "http://127.0.0.1:1/metrics", Interval: time.Hour, Client: srv.Client()}, &stderr)
	s.Abort()
	if !strings.HasPrefix(stderr.String(), "stampede: server metrics: the first scrape of http://127.0.0.1:1/metrics failed (") {
		t.Errorf("stderr for a refused scrape: %q", stderr.String())
	}
}
