package scrape

import (
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// What each server's /metrics series mean, from the servers' own metric
// definitions: vLLM (vllm/v1/metrics/loggers.py), SGLang
// (sglang/srt/metrics/collector.py), llama.cpp (tools/server, the
// "llamacpp:" families of its /metrics) and TGI (the router's and
// backends' metrics::counter!/gauge!/histogram! calls; every "*duration"
// is a histogram in seconds). A series whose meaning matches another
// server's goes on the same report panel (report.ServerPanels).

// kind is how a series is read, which its exposition type must allow.
type kind uint8

const (
	// level is a value as it stands (a gauge).
	level kind = iota
	// total only grows (a counter); the report draws its rate.
	total
	// distribution is a histogram with buckets.
	distribution
)

// seriesRule is one metric family stampede recognises.
type seriesRule struct {
	server string
	// name is the family's name, a counter's without "_total".
	name  string
	kind  kind
	panel string // a report.ServerPanels ID
	// vsClient is the client metric ("ttft", "itl", "tpot", "e2el") the
	// histogram measures on the server's side; the first rule of the
	// table the server has wins.
	vsClient string
}

var seriesRules = []seriesRule{
	// vLLM; "gpu_" and time_per_output_token_seconds are older spellings.
	{server: "vLLM", name: "vllm:num_requests_running", kind: level, panel: "requests"},
	{server: "vLLM", name: "vllm:num_requests_waiting", kind: level, panel: "requests"},
	{server: "vLLM", name: "vllm:kv_cache_usage_perc", kind: level, panel: "kv_cache_usage"},
	{server: "vLLM", name: "vllm:gpu_cache_usage_perc", kind: level, panel: "kv_cache_usage"},
	{server: "vLLM", name: "vllm:prompt_tokens", kind: total, panel: "tokens"},
	{server: "vLLM", name: "vllm:generation_tokens", kind: total, panel: "tokens"},
	{server: "vLLM", name: "vllm:prefix_cache_queries", kind: total, panel: "prefix_cache"},
	{server: "vLLM", name: "vllm:prefix_cache_hits", kind: total, panel: "prefix_cache"},
	{server: "vLLM", name: "vllm:gpu_prefix_cache_queries", kind: total, panel: "prefix_cache"},
	{server: "vLLM", name: "vllm:gpu_prefix_cache_hits", kind: total, panel: "prefix_cache"},
	{server: "vLLM", name: "vllm:request_success", kind: total, panel: "request_rate"},
	{server: "vLLM", name: "vllm:num_preemptions", kind: total, panel: "preemptions"},
	{server: "vLLM", name: "vllm:time_to_first_token_seconds", kind: distribution, panel: "ttft", vsClient: "ttft"},
	{server: "vLLM", name: "vllm:inter_token_latency_seconds", kind: distribution, panel: "itl", vsClient: "itl"},
	{server: "vLLM", name: "vllm:time_per_output_token_seconds", kind: distribution, panel: "itl", vsClient: "itl"},
	{server: "vLLM", name: "vllm:request_time_per_output_token_seconds", kind: distribution, panel: "tpot", vsClient: "tpot"},
	{server: "vLLM", name: "vllm:e2e_request_latency_seconds", kind: distribution, panel: "e2el", vsClient: "e2el"},
	{server: "vLLM", name: "vllm:request_queue_time_seconds", kind: distribution, panel: "queue"},
	{server: "vLLM", name: "vllm:request_prefill_time_seconds", kind: distribution, panel: "inference"},
	{server: "vLLM", name: "vllm:request_decode_time_seconds", kind: distribution, panel: "inference"},
	{server: "vLLM", name: "vllm:request_inference_time_seconds", kind: distribution, panel: "inference"},
	{server: "vLLM", name: "vllm:request_prompt_tokens", kind: distribution, panel: "request_tokens"},
	{server: "vLLM", name: "vllm:request_generation_tokens", kind: distribution, panel: "request_tokens"},

	// SGLang; time_per_output_token_seconds (per request) is an older one.
	{server: "SGLang", name: "sglang:num_running_reqs", kind: level, panel: "requests"},
	{server: "SGLang", name: "sglang:num_queue_reqs", kind: level, panel: "requests"},
	{server: "SGLang", name: "sglang:token_usage", kind: level, panel: "kv_cache_usage"},
	{server: "SGLang", name: "sglang:num_used_tokens", kind: level, panel: "kv_cache_tokens"},
	{server: "SGLang", name: "sglang:max_total_num_tokens", kind: level, panel: "kv_cache_tokens"},
	{server: "SGLang", name: "sglang:cache_hit_rate", kind: level, panel: "cache_hit_rate"},
	{server: "SGLang", name: "sglang:gen_throughput", kind: level, panel: "throughput"},
	{server: "SGLang", name: "sglang:prompt_tokens", kind: total, panel: "tokens"},
	{server: "SGLang", name: "sglang:generation_tokens", kind: total, panel: "tokens"},
	{server: "SGLang", name: "sglang:cached_tokens", kind: total, panel: "prefix_cache"},
	{server: "SGLang", name: "sglang:num_requests", kind: total, panel: "request_rate"},
	{server: "SGLang", name: "sglang:num_aborted_requests", kind: total, panel: "request_rate"},
	{server: "SGLang", name: "sglang:num_retracted_requests", kind: total, panel: "preemptions"},
	{server: "SGLang", name: "sglang:gpu_execution_seconds", kind: total, panel: "busy"},
	{server: "SGLang", name: "sglang:time_to_first_token_seconds", kind: distribution, panel: "ttft", vsClient: "ttft"},
	{server: "SGLang", name: "sglang:inter_token_latency_seconds", kind: distribution, panel: "itl", vsClient: "itl"},
	{server: "SGLang", name: "sglang:time_per_output_token_seconds", kind: distribution, panel: "tpot", vsClient: "tpot"},
	{server: "SGLang", name: "sglang:e2e_request_latency_seconds", kind: distribution, panel: "e2el", vsClient: "e2el"},
	{server: "SGLang", name: "sglang:queue_time_seconds", kind: distribution, panel: "queue"},
	{server: "SGLang", name: "sglang:prompt_tokens_histogram", kind: distribution, panel: "request_tokens"},
	{server: "SGLang", name: "sglang:generation_tokens_histogram", kind: distribution, panel: "request_tokens"},

	// llama.cpp: no histograms. prompt_tokens counts the tokens it
	// processed, the cached ones apart; the *_seconds counters are time
	// spent; kv_cache_* are older builds'. n_busy_slots_per_decode is a
	// mean since the server started, not a level, and is left out.
	{server: "llama.cpp", name: "llamacpp:requests_processing", kind: level, panel: "requests"},
	{server: "llama.cpp", name: "llamacpp:requests_deferred", kind: level, panel: "requests"},
	{server: "llama.cpp", name: "llamacpp:kv_cache_usage_ratio", kind: level, panel: "kv_cache_usage"},
	{server: "llama.cpp", name: "llamacpp:kv_cache_tokens", kind: level, panel: "kv_cache_tokens"},
	{server: "llama.cpp", name: "llamacpp:prompt_tokens_seconds", kind: level, panel: "throughput"},
	{server: "llama.cpp", name: "llamacpp:predicted_tokens_seconds", kind: level, panel: "throughput"},
	{server: "llama.cpp", name: "llamacpp:prompt_tokens", kind: total, panel: "tokens"},
	{server: "llama.cpp", name: "llamacpp:tokens_predicted", kind: total, panel: "tokens"},
	{server: "llama.cpp", name: "llamacpp:prompt_tokens_cached", kind: total, panel: "prefix_cache"},
	{server: "llama.cpp", name: "llamacpp:prompt_seconds", kind: total, panel: "busy"},
	{server: "llama.cpp", name: "llamacpp:tokens_predicted_seconds", kind: total, panel: "busy"},
	{server: "llama.cpp", name: "llamacpp:n_decode", kind: total, panel: "forward_passes"},

	// TGI: counters carry no "_total"; batch_current_size is the running
	// batch, queue_size the waiting requests, batch_current_max_tokens
	// the tokens the running batch holds room for. TGI has no TTFT or
	// per-token histogram: its mean time per token is per request (TPOT).
	{server: "TGI", name: "tgi_batch_current_size", kind: level, panel: "requests"},
	{server: "TGI", name: "tgi_queue_size", kind: level, panel: "requests"},
	{server: "TGI", name: "tgi_batch_current_max_tokens", kind: level, panel: "kv_cache_tokens"},
	{server: "TGI", name: "tgi_batch_max_total_tokens", kind: level, panel: "kv_cache_tokens"},
	{server: "TGI", name: "tgi_request_count", kind: total, panel: "request_rate"},
	{server: "TGI", name: "tgi_request_success", kind: total, panel: "request_rate"},
	{server: "TGI", name: "tgi_request_failure", kind: total, panel: "request_rate"},
	{server: "TGI", name: "tgi_batch_inference_count", kind: total, panel: "forward_passes"},
	{server: "TGI", name: "tgi_request_mean_time_per_token_duration", kind: distribution, panel: "tpot", vsClient: "tpot"},
	{server: "TGI", name: "tgi_request_duration", kind: distribution, panel: "e2el", vsClient: "e2el"},
	{server: "TGI", name: "tgi_request_queue_duration", kind: distribution, panel: "queue"},
	{server: "TGI", name: "tgi_request_inference_duration", kind: distribution, panel: "inference"},
	{server: "TGI", name: "tgi_batch_inference_duration", kind: distribution, panel: "step"},
	{server: "TGI", name: "tgi_request_input_length", kind: distribution, panel: "request_tokens"},
	{server: "TGI", name: "tgi_request_generated_tokens", kind: distribution, panel: "request_tokens"},
}

// rulesByName indexes seriesRules by name.
var rulesByName = func() map[string]*seriesRule {
	m := make(map[string]*seriesRule, len(seriesRules))
	for i := range seriesRules {
		m[seriesRules[i].name] = &seriesRules[i]
	}
	return m
}()

// ruleFor is the rule mf falls under, and the name its series are kept
// as (a counter's with "_total"); nil when stampede does not recognise
// it, or its type does not fit the rule: a level needs a gauge, a total a
// counter, a distribution a histogram; an untyped family (no TYPE line)
// passes for a level or a total.
func ruleFor(mf *dto.MetricFamily) (*seriesRule, string) {
	name := mf.GetName()
	base := strings.TrimSuffix(name, "_total")
	r := rulesByName[base]
	if r == nil {
		// A family named with "_total" that is no counter ("tgi_" has
		// none, but a level may end so), or an OpenMetrics counter whose
		// family is named without it.
		if r = rulesByName[name]; r == nil {
			return nil, ""
		}
		base = name
	}
	switch t := mf.GetType(); {
	case r.kind == level && (t == dto.MetricType_GAUGE || t == dto.MetricType_UNTYPED):
		return r, name
	case r.kind == total && t == dto.MetricType_COUNTER:
		if strings.HasPrefix(base, "tgi_") {
			return r, base
		}
		return r, base + "_total"
	case r.kind == total && t == dto.MetricType_UNTYPED:
		return r, name
	case r.kind == distribution && t == dto.MetricType_HISTOGRAM:
		return r, name
	}
	return nil, ""
}

// vsClientNames are the histograms that measure client metric m on the
// server's side, in the table's order of preference.
func vsClientNames(m string) []string {
	var names []string
	for _, r := range seriesRules {
		if r.vsClient == m {
			names = append(names, r.name)
		}
	}
	return names
}
