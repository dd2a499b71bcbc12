package cli

// RustFlags are the options the Rust client of vLLM's benchmark
// (`vllm-bench`, vLLM's rust/src/bench) adds to `vllm bench serve`'s, with
// its defaults (plan.RustClient). They sit in an own group: an
// abbreviation reaches them only when it matches none of Python's options,
// and none of them changes what a Python command line does.
type RustFlags struct {
	DryRun                           bool     `long:"dry-run" description:"Sample the dataset, print its statistics and send nothing (the engine of stampede dataset)."`
	PromptTokenIDs                   bool     `long:"prompt-token-ids" description:"Send the random dataset's prompts as token-id arrays, so the server does not tokenize them again and input counts are exact."`
	SweepMaxConcurrency              string   `long:"sweep-max-concurrency" value-name:"LIST" description:"Run once per comma-separated --max-concurrency value, then print the sweep's summary table (stampede sweep)."`
	SweepRequestRate                 string   `long:"sweep-request-rate" value-name:"LIST" description:"Run once per comma-separated --request-rate value (inf allowed), then print the sweep's summary table."`
	SweepNumPromptsFactor            *int     `long:"sweep-num-prompts-factor" value-name:"N" description:"With --sweep-max-concurrency: each point sends concurrency x N prompts."`
	SweepSummaryPercentiles          string   `long:"sweep-summary-percentiles" value-name:"LIST" description:"Extra TTFT/TPOT/E2EL percentile columns in the sweep's summary table."`
	ResetPrefixCache                 bool     `long:"reset-prefix-cache" description:"POST the server's /reset_prefix_cache before each sweep point (vLLM needs VLLM_SERVER_DEV_MODE=1)."`
	Compare                          []string `long:"compare" nargs:"+" value-name:"FILE" description:"Compare two result JSON files side by side and exit, without a server (stampede compare)."`
	OutputJSON                       string   `long:"output-json" value-name:"FILE" description:"Write the result JSON to this exact path (--save-result with its directory and file name)."`
	NumRuns                          int      `long:"num-runs" default:"1" description:"Run the benchmark N times and report mean, std, min, max and the coefficient of variation."`
	MultiTurn                        bool     `long:"multi-turn" description:"Multi-turn conversations: --num-prompts conversations, each turn sending the history so far (needs --backend openai-chat)."`
	MultiTurnNumTurns                int      `long:"multi-turn-num-turns" default:"3" description:"Turns per synthetic conversation."`
	MultiTurnMinTurns                int      `long:"multi-turn-min-turns" default:"0" description:"Fewest turns per conversation (0: --multi-turn-num-turns)."`
	MultiTurnMaxTurns                int      `long:"multi-turn-max-turns" default:"0" description:"Most turns per conversation (0: --multi-turn-num-turns)."`
	MultiTurnConcurrency             *int     `long:"multi-turn-concurrency" description:"Conversations in flight at once (default: --max-concurrency, else --num-prompts)."`
	MultiTurnDelayMs                 int      `long:"multi-turn-delay-ms" default:"0" description:"Milliseconds between a turn's answer and the next turn (user think time)."`
	PerTurnInputLen                  int      `long:"per-turn-input-len" default:"0" description:"Input tokens of turns after the first (0: --random-input-len)."`
	MultiTurnPrefixGlobalRatio       float64  `long:"multi-turn-prefix-global-ratio" default:"0.0" description:"Fraction of each turn's input shared by all conversations (random dataset)."`
	MultiTurnPrefixConversationRatio float64  `long:"multi-turn-prefix-conversation-ratio" default:"0.0" description:"Fraction of each turn's input shared within a conversation (random dataset)."`
	NoSteadyState                    bool     `long:"no-steady-state" description:"No steady-state metrics (stampede prints them only with --steady-state or a --steady-state-* option)."`
	SteadyStateThreshold             float64  `long:"steady-state-threshold" default:"0.95" description:"Fraction of --max-concurrency at which the steady-state window opens, in (0, 1]; given, it prints the --steady-state block."`
	SteadyStateMinWindow             *float64 `long:"steady-state-min-window" value-name:"SEC" description:"Seconds below which the steady-state window is flagged as short (default: max(10, 0.1 x run duration))."`
	ProfileBatchThreshold            *int     `long:"profile-batch-threshold" value-name:"N" description:"With --profile: start profiling only once the server's /metrics reports N or more running requests."`
	ProfileDuration                  float64  `long:"profile-duration" default:"5.0" value-name:"SEC" description:"With --profile-batch-threshold: seconds to profile once the threshold is reached."`
	SpeedBenchConfig                 string   `long:"speed-bench-config" choice:"qualitative" choice:"throughput_1k" choice:"throughput_2k" choice:"throughput_8k" choice:"throughput_16k" choice:"throughput_32k" description:"The Rust client's name of --speed-bench-dataset-subset."`
	SpeedBenchMaxInputLen            *int     `long:"speed-bench-max-input-len" value-name:"N" description:"Truncate speed_bench prompts to at most N tokens."`
	HFTextColumn                     string   `long:"hf-text-column" value-name:"COLUMN" description:"Column of a Hugging Face dataset holding the prompt text (default: detected)."`
	MaxModelLen                      *int     `long:"max-model-len" value-name:"N" description:"Drop requests whose prompt and output tokens together exceed N."`
}
