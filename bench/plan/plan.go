// Package plan is one `stampede serve` run as settings: the value of
// every option after Python's post-parse rewriting, and what vllm bench
// serve's main_async derives from them before it contacts the server (the
// URLs, the headers, the sampling parameters, the goodput objectives, the
// percentiles). The command line (bench/cli) fills a Plan; the run and its
// outputs read it. The package knows no argv rules.
package plan

import (
	"strings"
	"time"

	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/internal/py"
)

// Plan is one run's settings. The option groups are embedded, so that
// p.NumPrompts is --num-prompts; where a derived field shares an option's
// name (BaseURL), the option as given stays reachable as
// p.Options.BaseURL, as Python keeps args.base_url beside its local
// base_url.
type Plan struct {
	Options
	// The dataset option groups, declared by the datasets that read them.
	datasets.Flags
	Sampling
	Workers
	Client
	Reporting
	Cluster
	RustClient

	// APIURL is where benchmark requests go: base URL + --endpoint.
	APIURL string
	// FrontEndURLs, with --server-urls, are each front end's URL +
	// --endpoint, request i's the one at i mod their count (APIURL is
	// then the first); nil without them.
	FrontEndURLs []string
	// BaseURL is --base-url, or http://host:port (IPv6 hosts bracketed).
	// Credentials in --base-url (user:password@) are removed from BaseURL
	// and APIURL, so that no output shows them; URLAuthorization carries
	// them.
	BaseURL string
	// URLAuthorization is the "Basic ..." Authorization value of
	// --base-url's credentials, sent on every request as aiohttp does; ""
	// when the URL has none.
	URLAuthorization string
	// Headers are the --header pairs in order (a repeated key keeps its
	// first position and its last value); nil when none were given.
	Headers []Header
	// APIKey is $OPENAI_API_KEY (or the variables --backend's row names,
	// Backend.APIKeyEnv), sent on benchmark requests when non-empty: as a
	// Bearer token, or in the row's own header.
	APIKey string
	// ScrapeURL is where --server-metrics scrapes (<base-url>/metrics when
	// the option has no URL) with any user:password@ removed, so that no
	// output shows it; "" without --server-metrics. ScrapeAuthorization is
	// the Basic Authorization value of those credentials ("" without), and
	// ScrapeHeaders the --server-metrics-header pairs in order (a repeated
	// key keeps its last value). These go to the scrape alone: Headers,
	// APIKey and URLAuthorization are for the base URL's origin only.
	ScrapeURL           string
	ScrapeAuthorization string
	ScrapeHeaders       []Header
	// SaveToPyTorchFormat is $SAVE_TO_PYTORCH_BENCHMARK_FORMAT non-empty.
	SaveToPyTorchFormat bool

	// SelfTimed is true when requests are sent at the trace's timestamps
	// (timed_trace, unless --no-self-timed).
	SelfTimed bool
	// TaskType is pooling for the embeddings/pooling/rerank backends,
	// generation otherwise.
	TaskType TaskType
	// SamplingParams are the sampling options given, in Python's order:
	// top_p, top_k, min_p, temperature, frequency_penalty,
	// presence_penalty, repetition_penalty. Empty for pooling.
	SamplingParams JSONObject
	// RequestExtraBody is {**SamplingParams, **--extra-body}: merged into
	// every request body last, so it can override any field. Values are
	// JSON as Python's json module writes it, which allows NaN and
	// Infinity: append them to a body as bytes rather than through
	// encoding/json, which refuses those.
	RequestExtraBody JSONObject
	// WarnDefaultTemperature is set for generation runs without
	// --temperature; the run prints TemperatureWarning after sampling the
	// dataset, where Python prints it.
	WarnDefaultTemperature bool
	// SelectedPercentileMetrics are the metrics to report percentiles of
	// (--percentile-metrics split at commas, or the task's default);
	// unknown names are kept and ignored when printing, as in Python.
	SelectedPercentileMetrics []string
	// SelectedPercentiles are --metric-percentiles as numbers, followed by
	// those of SummaryPercentiles it lacks.
	SelectedPercentiles []float64
	// SummaryPercentiles are the Rust client's --sweep-summary-percentiles
	// as numbers: the sweep's table gets a TTFT, TPOT and E2EL column for
	// each; nil without the option.
	SummaryPercentiles []float64
	// GoodputSLOs are the --goodput objectives in order; empty without it.
	GoodputSLOs []GoodputSLO
	// TimelineITLThresholdsMs are the two --timeline-itl-thresholds when
	// --plot-timeline is set.
	TimelineITLThresholdsMs []float64

	// AgentIndex is this agent's index in a cluster run: --cluster-index,
	// or $JOB_COMPLETION_INDEX; 0 for a cluster of one.
	AgentIndex int

	// Args is Python's vars(args) for this run, for the outputs that
	// record it (the PyTorch benchmark file): every option under its
	// argparse dest (the long name with "-" turned into "_") with the
	// value the run uses, after Python's post-parse rewriting (--input-len
	// copied, ignore_eos forced, self_timed resolved; --self-timed and
	// --no-self-timed share the one dest self_timed). What differs from
	// Python's namespace: the keys follow the option table's order, not
	// argparse's registration order; the options stampede adds (--shards,
	// --cpus, the timeouts, ...) and the Rust client's are present; the CLI's own entries
	// (subcommand, dispatch function) are absent. The dict keys of
	// --random-mm-bucket-config are Python's str() of the tuple, as
	// write_to_json's encoder writes tuple keys. The command line fills it
	// last, from the values above.
	Args py.Object
	// Argv is the command line as given (without the "serve"
	// subcommand), its secrets redacted: the manifest `stampede rerun`
	// runs again.
	Argv []string

	// GivenOptions are the long names (without "--") of the options that
	// appeared on the command line.
	GivenOptions map[string]bool
	// Warnings are messages the command line produced (FlexibleArgument-
	// Parser's duplicate keys, unknown --percentile-metrics names); the
	// command prints them to stderr.
	Warnings []string
}

// Header is one --header pair.
type Header struct{ Key, Value string }

// GoodputSLO is one --goodput objective: Metric (ttft, tpot or e2el) at
// most ValueMs milliseconds.
type GoodputSLO struct {
	Metric  string
	ValueMs float64
}

// TaskType is what the backend measures.
type TaskType int

const (
	// Generation backends stream tokens (completions, chat, audio).
	Generation TaskType = iota
	// Pooling backends return one response (embeddings, pooling, rerank).
	Pooling
)

func (t TaskType) String() string {
	if t == Pooling {
		return "pooling"
	}
	return "generation"
}

// PercentileMetricNames are the metrics --percentile-metrics names, in the
// console block's order; pyout's latency sections carry these keys (its
// tests hold the two lists together). Python ignores any other name.
var PercentileMetricNames = []string{"ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue"}

// TemperatureWarning is the line vllm bench serve prints when no
// --temperature is given for a generation backend.
const TemperatureWarning = "WARNING: vllm bench serve no longer sets temperature==0 (greedy) in requests by default. " +
	"The default will be determined on the server side and can be model/API specific. " +
	"For the old behavior, include --temperature=0."

// DefaultServerMetricsURL is the value of --server-metrics given without a
// URL: the server's own /metrics.
const DefaultServerMetricsURL = "<base-url>/metrics"

// Given reports whether the option --long appeared on the command line.
func (p *Plan) Given(long string) bool { return p.GivenOptions[long] }

// WorkerProcesses is the number of workers the multi-process fork would
// start for n requests with --max-connections-per-worker K: ceil(n/K), at
// least 1; 0 when the option was not given.
func (p *Plan) WorkerProcesses(n int) int {
	if p.MaxConnectionsPerWorker == nil {
		return 0
	}
	k := *p.MaxConnectionsPerWorker
	m := (n + k - 1) / k
	return max(m, 1)
}

// TrimsSteadyState reports whether the run asks for the trimmed block; the
// fork checks warmup_time > 0 or cooldown_time > 0.
func (p *Plan) TrimsSteadyState() bool { return p.WarmupTime > 0 || p.CooldownTime > 0 }

// Clustered reports whether the run is one agent's share of a cluster run.
func (p *Plan) Clustered() bool { return p.ClusterSize > 1 }

// AgentConcurrency is this agent's share of --max-concurrency C over N
// agents: ⌊C/N⌋, one more for the first C mod N agents, so that the
// shares add up to C; 0 (no cap) without the option.
func (p *Plan) AgentConcurrency() int {
	if p.MaxConcurrency == nil {
		return 0
	}
	total, n := *p.MaxConcurrency, p.ClusterSize
	share := total / n
	if p.AgentIndex < total%n {
		share++
	}
	return share
}

// ServerMetricsURL is where --server-metrics scrapes, without
// credentials; "" when off.
func (p *Plan) ServerMetricsURL() string { return p.ScrapeURL }

// ServerMetricsTarget is --server-metrics' URL as the option has it:
// <base-url>/metrics for the option without a URL; "" when off.
func (p *Plan) ServerMetricsTarget() string {
	if p.ServerMetrics == DefaultServerMetricsURL {
		return strings.TrimSuffix(p.BaseURL, "/") + "/metrics"
	}
	return p.ServerMetrics
}

// ScrapeInterval is --server-metrics-interval as a duration.
func (p *Plan) ScrapeInterval() time.Duration {
	return time.Duration(p.ServerMetricsInterval * float64(time.Second))
}

// Backend is what the command line knows of one --backend: its name, for
// the choices, and the facts main_async's checks read. The rows come from
// the backend table (bench/backend), in its order, so that adding a
// backend stays one row there.
type Backend struct {
	Name string
	// OpenAICompatible backends accept sampling parameters and ignore_eos
	// (Python's OPENAI_COMPATIBLE_BACKENDS).
	OpenAICompatible bool
	// Pooling backends are measured as pooling tasks (Python's
	// POOLING_BACKENDS).
	Pooling bool
	// Completions backends post to the completions API, the one that
	// takes pre-tokenized prompts (timed_trace).
	Completions bool
	// Endpoint is the backend's --endpoint when the option is not given;
	// "" keeps Python's default, /v1/completions.
	Endpoint string
	// APIKeyEnv are the environment variables the API key is read from,
	// the first non-empty one winning; nil is Python's $OPENAI_API_KEY.
	APIKeyEnv []string
	// APIKeyHeader is the header the key is sent in; "" is Python's
	// "Authorization: Bearer <key>".
	APIKeyHeader string
}

// RegisteredTokenizerModes are the --tokenizer-mode values of vLLM's
// tokenizer registry that stampede does not build: each loads a tokenizer
// class of its own, so the command line refuses them.
var RegisteredTokenizerModes = []string{"deepseek_v32", "deepseek_v4", "fastokens", "grok2", "kimi_audio", "qwen_vl"}
