package plan

import "github.com/stampede-bench/stampede/datasets"

// The option groups below hold the value of every `vllm bench serve` and
// stampede option, after Python's post-parse rewriting; the comment on a
// field names its option, whose help (bench/cli) says what it means. The
// fields are named after Python's argparse dest in Go case, and each group
// lists its options in the command line's order.
//
// A pointer field is nil when Python's value would be None. A string field
// whose Python default is None is "" when not given.

// Options are `vllm bench serve`'s own options, outside its groups.
type Options struct {
	TrustRemoteCode       bool     // --trust-remote-code
	Seed                  int      // --seed
	NumPrompts            int      // --num-prompts
	DatasetName           string   // --dataset-name
	NoStream              bool     // --no-stream
	DatasetPath           string   // --dataset-path
	NoOversample          bool     // --no-oversample
	SkipChatTemplate      bool     // --skip-chat-template
	EnableMultimodalChat  bool     // --enable-multimodal-chat
	DisableShuffle        bool     // --disable-shuffle
	Label                 *string  // --label
	Backend               string   // --backend
	BaseURL               string   // --base-url
	Host                  string   // --host
	Port                  int      // --port
	Endpoint              string   // --endpoint
	Header                []string // --header
	MaxConcurrency        *int     // --max-concurrency
	Model                 string   // --model
	InputLen              *int     // --input-len
	OutputLen             *int     // --output-len
	Tokenizer             string   // --tokenizer
	TokenizerMode         string   // --tokenizer-mode
	UseBeamSearch         bool     // --use-beam-search
	Logprobs              *int     // --logprobs
	RequestRate           float64  // --request-rate
	Burstiness            float64  // --burstiness
	ProbeRequestRate      float64  // --probe-request-rate
	DisableTqdm           bool     // --disable-tqdm
	NumWarmups            int      // --num-warmups
	Profile               bool     // --profile
	SaveResult            bool     // --save-result
	SaveDetailed          bool     // --save-detailed
	AppendResult          bool     // --append-result
	Metadata              []string // --metadata
	ResultDir             string   // --result-dir
	ResultFilename        string   // --result-filename
	IgnoreEOS             bool     // --ignore-eos
	SelfTimedOn           bool     // --self-timed
	SelfTimedOff          bool     // --no-self-timed
	PercentileMetrics     string   // --percentile-metrics
	MetricPercentiles     string   // --metric-percentiles
	Goodput               []string // --goodput
	RequestIDPrefix       string   // --request-id-prefix
	ServedModelName       string   // --served-model-name
	LoraModules           []string // --lora-modules
	LoraAssignment        string   // --lora-assignment
	RampUpStrategy        string   // --ramp-up-strategy
	RampUpStartRPS        *int     // --ramp-up-start-rps
	RampUpEndRPS          *int     // --ramp-up-end-rps
	ReadyCheckTimeoutSec  int      // --ready-check-timeout-sec
	ChatTemplateKwargs    JSONText // --chat-template-kwargs
	ExtraBody             JSONText // --extra-body
	SkipTokenizerInit     bool     // --skip-tokenizer-init
	Insecure              bool     // --insecure
	PlotTimeline          bool     // --plot-timeline
	TimelineITLThresholds string   // --timeline-itl-thresholds
	PlotDatasetStats      bool     // --plot-dataset-stats
}

// Sampling are the sampling parameters added to generation requests.
type Sampling struct {
	TopP              *float64 // --top-p
	TopK              *int     // --top-k
	MinP              *float64 // --min-p
	Temperature       *float64 // --temperature
	FrequencyPenalty  *float64 // --frequency-penalty
	PresencePenalty   *float64 // --presence-penalty
	RepetitionPenalty *float64 // --repetition-penalty
}

// Workers are the options of the multi-process fork of `vllm bench serve`
// (moreh-dev/vllm), which stampede accepts so that the fork's commands run.
type Workers struct {
	MaxConnectionsPerWorker *int    // --max-connections-per-worker
	WarmupTime              float64 // --warmup-time
	CooldownTime            float64 // --cooldown-time
}

// Client are stampede's own options for its event loops, limits and the
// blocks it prints after Python's; none changes the meaning of a `vllm
// bench serve` option.
type Client struct {
	Shards             int                // --shards
	NoKernelTimestamps bool               // --no-kernel-timestamps
	CPUs               CPUList            // --cpus; nil: the process's affinity mask
	SourceAddresses    AddrList           // --source-addresses; nil: the kernel's choice
	ServerURLs         datasets.CommaList // --server-urls; nil: the base URL alone
	RequestTimeoutSec  float64            // --request-timeout-sec
	ConnectTimeoutSec  float64            // --connect-timeout-sec
	CancelGraceSec     float64            // --cancel-grace-sec
	MaxResponseBytes   int                // --max-response-bytes
	MaxBufferedBytes   int                // --max-buffered-bytes
	SteadyState        bool               // --steady-state
	WarmConnections    bool               // --warm-connections
	Breakdown          bool               // --breakdown
	ReasoningMetrics   bool               // --reasoning-metrics
	PerTokenITL        bool               // --per-token-itl
	FailOnError        bool               // --fail-on-error
}

// Reporting are stampede's options for the server's metrics (its prefix
// cache among them) and the HTML report.
type Reporting struct {
	ServerMetrics         string   // --server-metrics; DefaultServerMetricsURL when given without a URL
	ServerMetricsInterval float64  // --server-metrics-interval
	ServerMetricsHeader   []string // --server-metrics-header, as given
	ColdPrefixCache       bool     // --cold-prefix-cache
	Report                string   // --report
	// OTLPReceiver is --otlp-receiver's listen address: every request
	// carries a traceparent and the server's spans are joined to it
	// (bench/spans); "" sends Python's requests and receives nothing.
	OTLPReceiver string
	// OTLPReceiverToken is --otlp-receiver-token as given: the token or
	// header every export must carry (ReceiverTokenHeader); "" takes any.
	OTLPReceiverToken string
}

// Cluster are the options that run one benchmark from several hosts: every
// agent builds the same requests and arrival schedule from the same
// options and seed and sends request i when i mod ClusterSize is its index;
// agent 0 coordinates the start and merges the partial results.
type Cluster struct {
	ClusterSize       int     // --cluster-size
	ClusterIndex      *int    // --cluster-index as given; Plan.AgentIndex is the index in force
	Coordinator       string  // --coordinator
	ClusterTimeoutSec float64 // --cluster-timeout-sec
	SavePartial       string  // --save-partial; agent K of N saves PartialPath's name
	// ClusterToken is --cluster-token, else $STAMPEDE_CLUSTER_TOKEN when
	// no --cluster-token-file is given; "" runs on loopback alone.
	ClusterToken     string
	ClusterTokenFile string // --cluster-token-file, read when the run starts
	// ClusterLocal is --cluster-local: this command starts ClusterSize
	// agents on this host (bench/cluster.Local) instead of running one.
	ClusterLocal bool
	// ResultsToLog is --results-to-log: after the run, the files it saved
	// are printed on stdout as a bundle (bench/cluster.WriteBundle).
	ResultsToLog bool
}

// LocalAgentEnv is the variable --cluster-local's launcher sets, in the
// environment of each agent it starts, to that agent's index: that
// process is one of the launcher's agents, not a launcher of its own.
// LocalCoordinatorEnv holds where they meet (agent 0's loopback address).
// The launcher passes these (and ClusterTokenEnv) in the environment, so
// that every agent's command line is the user's.
const (
	LocalAgentEnv       = "STAMPEDE_CLUSTER_LOCAL_AGENT"
	LocalCoordinatorEnv = "STAMPEDE_CLUSTER_LOCAL_COORDINATOR"
)

// ClusterTokenEnv is the variable that holds the cluster's secret when no
// option gives it (one that ps does not show); --cluster-local's launcher
// hands its agents their fresh secret in it.
const ClusterTokenEnv = "STAMPEDE_CLUSTER_TOKEN"

// RustClient are the options the Rust client of vLLM's benchmark
// (`vllm-bench`, vLLM's rust/src/bench) adds to `vllm bench serve`'s,
// with its defaults. None changes what a Python command line does: each
// acts only when given.
type RustClient struct {
	DryRun                           bool     // --dry-run
	PromptTokenIDs                   bool     // --prompt-token-ids
	SweepMaxConcurrency              string   // --sweep-max-concurrency: comma-separated values
	SweepRequestRate                 string   // --sweep-request-rate: comma-separated values, inf allowed
	SweepNumPromptsFactor            *int     // --sweep-num-prompts-factor
	SweepSummaryPercentiles          string   // --sweep-summary-percentiles
	ResetPrefixCache                 bool     // --reset-prefix-cache
	Compare                          []string // --compare A.json B.json
	OutputJSON                       string   // --output-json
	NumRuns                          int      // --num-runs
	MultiTurn                        bool     // --multi-turn
	MultiTurnNumTurns                int      // --multi-turn-num-turns
	MultiTurnMinTurns                int      // --multi-turn-min-turns
	MultiTurnMaxTurns                int      // --multi-turn-max-turns
	MultiTurnConcurrency             *int     // --multi-turn-concurrency
	MultiTurnDelayMs                 int      // --multi-turn-delay-ms
	PerTurnInputLen                  int      // --per-turn-input-len
	MultiTurnPrefixGlobalRatio       float64  // --multi-turn-prefix-global-ratio
	MultiTurnPrefixConversationRatio float64  // --multi-turn-prefix-conversation-ratio
	NoSteadyState                    bool     // --no-steady-state
	SteadyStateThreshold             float64  // --steady-state-threshold
	SteadyStateMinWindow             *float64 // --steady-state-min-window
	ProfileBatchThreshold            *int     // --profile-batch-threshold
	ProfileDuration                  float64  // --profile-duration
	SpeedBenchConfig                 string   // --speed-bench-config: Python's --speed-bench-dataset-subset
	SpeedBenchMaxInputLen            *int     // --speed-bench-max-input-len
	HFTextColumn                     string   // --hf-text-column
	MaxModelLen                      *int     // --max-model-len
}
