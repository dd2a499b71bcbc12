package cli

import (
	"fmt"

	flags "github.com/jessevdk/go-flags"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
)

// Flags is the `vllm bench serve` option table: one field per argparse
// destination, named after Python's dest in Go case, grouped as argparse
// groups them. go-flags reads the tags for the help text, the defaults and
// the choices; argv.go applies Python's command-line rules in front of it.
// The dataset option groups are declared by the datasets (datasets.Flags),
// and the --dataset-name and --backend choices come from their registries
// (datasets.Registry, bench's backend table).
//
// Each group but the datasets' is the tagged twin of a group of the plan
// (plan.Options, plan.Sampling, ...): the same fields in the same order,
// so that one converts to the other (Go ignores tags in a conversion) and
// an option added to one side alone does not compile.
//
// A pointer field is nil when Python's value would be None. A string field
// whose Python default is None is "" when not given.
type Flags struct {
	Help bool `short:"h" long:"help" description:"show this help message and exit"`

	CommonFlags

	// The dataset option groups, declared by the datasets that read them.
	datasets.Flags

	SamplingFlags `group:"sampling parameters"`
	WorkerFlags   `group:"multi-process client options"`
	StampedeFlags `group:"stampede options"`
	RustFlags     `group:"vllm-bench (Rust client) options"`
}

// CommonFlags are vLLM's options outside its groups (plan.Options).
type CommonFlags struct {
	TrustRemoteCode       bool          `long:"trust-remote-code" description:"Pass trust_remote_code when loading the tokenizer or a Hugging Face dataset."`
	Seed                  int           `long:"seed" default:"0" description:"Seed of the global and dataset random number generators."`
	NumPrompts            int           `long:"num-prompts" default:"1000" description:"Number of requests to send (custom datasets: 0 or less sends every row)."`
	DatasetName           string        `long:"dataset-name" default:"random" description:"Where prompts come from."`
	NoStream              bool          `long:"no-stream" description:"Load Hugging Face datasets without streaming."`
	DatasetPath           string        `long:"dataset-path" description:"Dataset file or directory, or a Hugging Face dataset id; not allowed with the synthetic datasets."`
	NoOversample          bool          `long:"no-oversample" description:"Do not repeat samples when the dataset has fewer than --num-prompts."`
	SkipChatTemplate      bool          `long:"skip-chat-template" description:"Do not apply the tokenizer's chat template to dataset prompts."`
	EnableMultimodalChat  bool          `long:"enable-multimodal-chat" description:"Send the prompt and its media as one chat message."`
	DisableShuffle        bool          `long:"disable-shuffle" description:"Keep the dataset's order instead of shuffling it."`
	Label                 *string       `long:"label" description:"Label of the result and prefix of its file name (default: the backend)."`
	Backend               string        `long:"backend" default:"openai" description:"Request protocol."`
	BaseURL               string        `long:"base-url" description:"Server base URL; replaces --host and --port."`
	Host                  string        `long:"host" default:"127.0.0.1" description:"Server host (IPv6 literals are bracketed)."`
	Port                  int           `long:"port" default:"8000" description:"Server port when --base-url is not given."`
	Endpoint              string        `long:"endpoint" default:"/v1/completions" description:"Path appended to the base URL."`
	Header                []string      `long:"header" nargs:"*" value-name:"KEY=VALUE" description:"Extra HTTP headers for every request; they override the backend's own and are overridden by the request id."`
	MaxConcurrency        *int          `long:"max-concurrency" description:"Most requests in flight at once (and the connection pool size); must be greater than 0."`
	Model                 string        `long:"model" description:"Model name (default: the first model of the server's /v1/models)."`
	InputLen              *int          `long:"input-len" description:"Input length; copied into --random-input-len."`
	OutputLen             *int          `long:"output-len" description:"Output length; copied into the random, sharegpt, custom, hf, spec_bench and prefix_repetition output lengths."`
	Tokenizer             string        `long:"tokenizer" description:"Tokenizer name or path (default: the model id)."`
	TokenizerMode         string        `long:"tokenizer-mode" default:"auto" description:"Tokenizer mode: auto (Mistral's tekken.json for a Mistral checkpoint, else tokenizer.json), hf, slow, mistral (tekken.json)."`
	UseBeamSearch         bool          `long:"use-beam-search" description:"Accepted for compatibility; has no effect."`
	Logprobs              *int          `long:"logprobs" description:"Logprobs per token requested from completions backends (null when not given)."`
	RequestRate           float64       `long:"request-rate" default:"inf" description:"Request arrivals per second; inf sends every request at once."`
	Burstiness            float64       `long:"burstiness" default:"1.0" description:"Gamma shape of the inter-arrival times; 1 is a Poisson process, lower is burstier."`
	ProbeRequestRate      float64       `long:"probe-request-rate" default:"0.0" description:"Side probe requests per second, reported apart from the main run."`
	DisableTqdm           bool          `long:"disable-tqdm" description:"Do not show progress bars."`
	NumWarmups            int           `long:"num-warmups" default:"0" description:"Warm-up requests sent before the measured run."`
	Profile               bool          `long:"profile" description:"Call the server's /start_profile and /stop_profile around the run."`
	SaveResult            bool          `long:"save-result" description:"Write the result JSON file."`
	SaveDetailed          bool          `long:"save-detailed" description:"Keep the per-request arrays in the result JSON."`
	AppendResult          bool          `long:"append-result" description:"Append the result to the JSON file, one JSON document per line."`
	Metadata              []string      `long:"metadata" nargs:"*" value-name:"KEY=VALUE" description:"Key-value pairs recorded in the result JSON."`
	ResultDir             string        `long:"result-dir" description:"Directory of the result file (created if missing)."`
	ResultFilename        string        `long:"result-filename" description:"Exact name of the result file."`
	IgnoreEOS             bool          `long:"ignore-eos" description:"Send ignore_eos with every request (always on for random datasets)."`
	SelfTimedOn           bool          `long:"self-timed" description:"timed_trace: send requests at the trace's timestamps (the default for timed_trace)."`
	SelfTimedOff          bool          `long:"no-self-timed" description:"timed_trace: ignore the trace's timestamps and use --request-rate."`
	PercentileMetrics     string        `long:"percentile-metrics" description:"Comma-separated metrics to report percentiles of: ttft, tpot, itl, e2el, client_queue_time, e2el_including_client_queue (default: ttft,tpot,itl; e2el for pooling backends)."`
	MetricPercentiles     string        `long:"metric-percentiles" default:"99" description:"Comma-separated percentiles to report."`
	Goodput               []string      `long:"goodput" nargs:"+" value-name:"KEY:VALUE" description:"Service level objectives in milliseconds for goodput; KEY is ttft, tpot or e2el."`
	RequestIDPrefix       string        `long:"request-id-prefix" default-mask:"bench-<8 random hex digits>-" description:"Prefix of the x-request-id of every request."`
	ServedModelName       string        `long:"served-model-name" description:"Model name sent in requests when --model is given."`
	LoraModules           []string      `long:"lora-modules" nargs:"+" description:"LoRA adapter names sent as the model of the requests."`
	LoraAssignment        string        `long:"lora-assignment" default:"random" choice:"random" choice:"round-robin" description:"How adapters are assigned to requests."`
	RampUpStrategy        string        `long:"ramp-up-strategy" choice:"linear" choice:"exponential" description:"Ramp the request rate from --ramp-up-start-rps to --ramp-up-end-rps over the run."`
	RampUpStartRPS        *int          `long:"ramp-up-start-rps" description:"Request rate at the start of the ramp."`
	RampUpEndRPS          *int          `long:"ramp-up-end-rps" description:"Request rate at the end of the ramp."`
	ReadyCheckTimeoutSec  int           `long:"ready-check-timeout-sec" default:"0" description:"Seconds to wait for the endpoint to answer before the run; 0 skips the check."`
	ChatTemplateKwargs    plan.JSONText `long:"chat-template-kwargs" description:"JSON object of keyword arguments for the client-side chat template."`
	ExtraBody             plan.JSONText `long:"extra-body" description:"JSON object merged into every request body (wins over the sampling parameters)."`
	SkipTokenizerInit     bool          `long:"skip-tokenizer-init" description:"Do not load a tokenizer."`
	Insecure              bool          `long:"insecure" description:"Do not verify TLS certificates."`
	PlotTimeline          bool          `long:"plot-timeline" description:"Write an HTML timeline of the requests next to the result file."`
	TimelineITLThresholds string        `long:"timeline-itl-thresholds" default:"25,50" description:"Two inter-token latency thresholds (ms) that colour the timeline."`
	PlotDatasetStats      bool          `long:"plot-dataset-stats" description:"Write a PNG of the dataset's token length distributions."`
}

// SamplingFlags are the sampling parameters added to generation requests
// (plan.Sampling).
type SamplingFlags struct {
	TopP              *float64 `long:"top-p" description:"Sent as top_p."`
	TopK              *int     `long:"top-k" description:"Sent as top_k."`
	MinP              *float64 `long:"min-p" description:"Sent as min_p."`
	Temperature       *float64 `long:"temperature" description:"Sent as temperature (the server's default when not given)."`
	FrequencyPenalty  *float64 `long:"frequency-penalty" description:"Sent as frequency_penalty."`
	PresencePenalty   *float64 `long:"presence-penalty" description:"Sent as presence_penalty."`
	RepetitionPenalty *float64 `long:"repetition-penalty" description:"Sent as repetition_penalty."`
}

// WorkerFlags come from the multi-process fork of `vllm bench serve`
// (moreh-dev/vllm); stampede accepts them so that fork's commands run
// (plan.Workers).
type WorkerFlags struct {
	MaxConnectionsPerWorker *int    `long:"max-connections-per-worker" description:"Requests per worker K; the run uses ceil(num_prompts / K) shards and reports them as worker processes."`
	WarmupTime              float64 `long:"warmup-time" default:"0.0" description:"Seconds trimmed from the start of the run for a second, steady-state result block (multi-process fork)."`
	CooldownTime            float64 `long:"cooldown-time" default:"0.0" description:"Seconds trimmed from the end of the run for a second, steady-state result block (multi-process fork)."`
}

// StampedeFlags are stampede's own options; none changes the meaning of a
// `vllm bench serve` option.
type StampedeFlags struct {
	ClientFlags
	// The server's metrics and the HTML report.
	ReportFlags
	// Running one benchmark from several hosts.
	ClusterFlags
}

// ClientFlags are stampede's options for its event loops, limits and the
// blocks it prints after Python's (plan.Client).
type ClientFlags struct {
	Shards             int           `long:"shards" default:"0" description:"Event-loop shards, each pinned to a CPU (0: one per usable core)."`
	NoKernelTimestamps bool          `long:"no-kernel-timestamps" description:"Timestamp tokens when read instead of with the kernel's receive time."`
	CPUs               plan.CPUList  `long:"cpus" value-name:"LIST" description:"CPUs the shards may run on, e.g. 0-3,6 (default: the process's affinity mask)."`
	SourceAddresses    plan.AddrList `long:"source-addresses" value-name:"LIST" description:"Local addresses to bind outgoing connections to, round-robin, e.g. 127.0.0.2-127.0.0.9 or 10.0.0.5,10.0.0.6; each gives its own ~28,000 ephemeral ports to each server address. An address this host cannot bind stops the run before it starts."`
	ServerURLs         CommaList     `long:"server-urls" value-name:"URL[,URL...]" description:"Base URLs of several front ends of one service (all http:// or all https://); request i goes to front end i mod their count, on connections of its own, with its Host header. --endpoint is appended to each. Other requests (models, /metrics, readiness) go to --base-url, or the first of these when --base-url is absent. The sidecar breaks every figure down per front end."`
	RequestTimeoutSec  float64       `long:"request-timeout-sec" default:"21600" description:"Seconds before a request is abandoned as failed (Python's aiohttp total timeout)."`
	ConnectTimeoutSec  float64       `long:"connect-timeout-sec" default:"30" description:"Seconds allowed for a TCP (and TLS) connect."`
	CancelGraceSec     float64       `long:"cancel-grace-sec" default:"5" description:"After Ctrl-C, seconds in-flight requests may finish before they are cancelled."`
	MaxResponseBytes   int           `long:"max-response-bytes" default:"1073741824" description:"Bytes one response may have before the request fails (0: no limit); stops a server that never ends an answer."`
	MaxBufferedBytes   int           `long:"max-buffered-bytes" default:"33554432" description:"Memory budget for response bytes held unparsed (unfinished SSE events, non-streaming bodies) over all requests in flight; a request that grows past it fails (0: no budget)."`
	SteadyState        bool          `long:"steady-state" description:"After the result block, print the metrics of the steady-state window: in-flight requests at 95% of --max-concurrency (or of the run's level for a rate)."`
	WarmConnections    bool          `long:"warm-connections" description:"Before the clock starts, open min(max-concurrency, num-prompts) keep-alive connections, paced so the server's accept queue keeps up; TTFT then holds no connect, as for a long-running client. Python opens connections as requests start."`
	Breakdown          bool          `long:"breakdown" description:"After the result block, print where TTFT went: queue wait, connect, send delay, server time to first byte, first token (always saved in the .stampede.json sidecar)."`
	ReasoningMetrics   bool          `long:"reasoning-metrics" description:"After the result block, print reasoning and tool-call metrics: time to the first answer token after reasoning, reasoning tokens, time to the first tool call (always saved in the .stampede.json sidecar)."`
	PerTokenITL        bool          `long:"per-token-itl" description:"Ask for the running usage in every chunk (the stream option continuous_usage_stats) and, after the result block, print ITL per token beside ITL per chunk and how many tokens each chunk carried (also saved in the .stampede.json sidecar); for servers that send several tokens per chunk (speculative decoding)."`
	FailOnError        bool          `long:"fail-on-error" description:"Exit with status 3 when any benchmark request failed, after the block, the result files and the report are written (Python exits 0)."`
}

// plan converts the option values to a plan's option groups; the derived
// values are left for validate.
func (f *Flags) plan() *plan.Plan {
	return &plan.Plan{
		Options:    plan.Options(f.CommonFlags),
		Flags:      f.Flags,
		Sampling:   plan.Sampling(f.SamplingFlags),
		Workers:    plan.Workers(f.WorkerFlags),
		Client:     plan.Client(f.ClientFlags),
		Reporting:  plan.Reporting(f.ReportFlags),
		Cluster:    plan.Cluster(f.ClusterFlags),
		RustClient: plan.RustClient(f.RustFlags),
	}
}

// flagsOf is the inverse of plan: the option values a plan holds, in the
// table's shape.
func flagsOf(p *plan.Plan) *Flags {
	return &Flags{
		CommonFlags:   CommonFlags(p.Options),
		Flags:         p.Flags,
		SamplingFlags: SamplingFlags(p.Sampling),
		WorkerFlags:   WorkerFlags(p.Workers),
		StampedeFlags: StampedeFlags{
			ClientFlags:  ClientFlags(p.Client),
			ReportFlags:  ReportFlags(p.Reporting),
			ClusterFlags: ClusterFlags(p.Cluster),
		},
		RustFlags: RustFlags(p.RustClient),
	}
}

// CommaList is a comma-separated flag value (Python's --bfcl-categories).
type CommaList = datasets.CommaList

// BucketConfig is --random-mm-bucket-config, parsed as a Python dict.
type BucketConfig = datasets.MMBucketConfig

// MMBucket is one entry of --random-mm-bucket-config.
type MMBucket = datasets.MMBucket

// newFlagParser builds the go-flags parser over f: the option table used
// for help and for storing values once argv.go has checked them. The
// --backend choices are the names of backends.
func newFlagParser(f *Flags, backends []plan.Backend) *flags.Parser {
	p := flags.NewNamedParser("stampede serve", flags.None)
	p.Usage = "[OPTIONS]"
	if _, err := p.AddGroup("options", "", f); err != nil {
		// The table is static; a malformed tag is a programming error.
		panic(fmt.Sprintf("flag table: %v", err))
	}
	p.FindOptionByLongName("dataset-name").Choices = datasets.Names()
	p.FindOptionByLongName("backend").Choices = backendNames(backends)
	return p
}
