package mock

import (
	"crypto/tls"
	"fmt"
	"io"
	"time"

	"github.com/stampede-bench/stampede/datasets"
)

// Mode selects the timing model of token generation.
type Mode int

const (
	// PerStream gives every stream its own schedule: the first token at
	// TTFT + prefill after the request arrived, then one token every ITL.
	PerStream Mode = iota
	// DecodeStep runs one global step clock, as a continuous-batching
	// engine does: every running stream gets its next token on the same
	// step, MaxNumSeqs streams run at most, and the rest wait FIFO.
	DecodeStep
)

// String returns the --mode spelling of m.
func (m Mode) String() string {
	switch m {
	case PerStream:
		return "per-stream"
	case DecodeStep:
		return "decode-step"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads a --mode value.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "per-stream":
		return PerStream, nil
	case "decode-step":
		return DecodeStep, nil
	}
	return 0, fmt.Errorf("--mode %q: want per-stream or decode-step", s)
}

// OutputLen selects how many tokens a generation request gets.
type OutputLen int

const (
	// OutputFixed generates exactly max_tokens tokens (finish_reason
	// "length"), as a model that never emits EOS.
	OutputFixed OutputLen = iota
	// OutputUniform draws the length uniformly from [min_tokens, max_tokens]
	// (seeded per request) unless the request sets ignore_eos; a draw below
	// max_tokens ends with finish_reason "stop".
	OutputUniform
)

// ParseOutputLen reads an --output-len value.
func ParseOutputLen(s string) (OutputLen, error) {
	switch s {
	case "fixed":
		return OutputFixed, nil
	case "uniform":
		return OutputUniform, nil
	}
	return 0, fmt.Errorf("--output-len %q: want fixed or uniform", s)
}

// Config is everything the mock server can be told. The zero value plus a
// Port is usable: Start fills the defaults documented on each field.
type Config struct {
	// Host is the address to bind; default 127.0.0.1.
	Host string
	// Port to listen on; 0 picks a free port (see Server.Addr).
	Port int
	// Model is the served model name; default "mock-llm".
	Model string
	// MaxModelLen is the context length reported by /v1/models and
	// /tokenize and enforced on prompt + max_tokens; default 4096.
	MaxModelLen int
	// Version is what /version reports; default "0.0.0-mockllm".
	Version string
	// Tokenizer counts prompt tokens and serves /tokenize and /detokenize;
	// nil uses the built-in reversible tokenizer (see NewMockTokenizer).
	Tokenizer datasets.Tokenizer

	// Mode is the timing model.
	Mode Mode
	// TTFT is the base time to first token.
	TTFT time.Duration
	// PrefillPerToken is added to TTFT once per prompt token.
	PrefillPerToken time.Duration
	// PrefixCache, when set (PrefixCacheGlobal or PrefixCacheSession),
	// models prefix caching of chat and completions prompts: cached tokens cost no
	// prefill (see prefixcache.go). PrefixCacheTokens is its capacity;
	// default 1,000,000.
	PrefixCache       string
	PrefixCacheTokens int
	// ITL is the gap between tokens (PerStream; 0 sends them back to back)
	// or the step period (DecodeStep, at least 10µs).
	ITL time.Duration
	// Jitter, when positive, adds a uniform [0, Jitter) delay to every TTFT
	// and token gap (PerStream) or step period (DecodeStep), seeded by Seed.
	Jitter time.Duration
	// TimerSlack (PerStream) lets the writer send a token up to this much
	// past its due time, so that tokens due close together go out in one
	// wake-up: at most one wake-up per TimerSlack while tokens are dense,
	// for up to TimerSlack more lateness. 0 wakes exactly on time for
	// every token. In DecodeStep mode a step's tokens share one wake-up
	// anyway, and steps start on time.
	TimerSlack time.Duration
	// MaxNumSeqs caps the streams generating at once; the rest wait FIFO.
	// 0 means no cap.
	MaxNumSeqs int
	// OutputLen chooses between exact and drawn output lengths.
	OutputLen OutputLen
	// DefaultMaxTokens is the output length of a request that sets neither
	// max_tokens nor max_completion_tokens. 0 means what vLLM does: the
	// rest of the context, MaxModelLen - prompt tokens.
	DefaultMaxTokens int
	// Seed makes every draw (output lengths, jitter, faults) repeatable.
	// Draws are keyed by the request's x-request-id when it has one, so a
	// rerun gives a request the same draws whatever its arrival order.
	Seed uint64

	// ReasoningTokens makes the first this many output tokens of a chat,
	// Responses or Messages stream reasoning (delta.reasoning;
	// reasoning_text deltas; a thinking block), the rest the answer.
	// ToolCalls, when positive, makes the answer that many tool calls
	// (delta.tool_calls; function_call items; tool_use blocks) instead of
	// text. See reasoning.go.
	ReasoningTokens int
	ToolCalls       int

	// EmbeddingDim is the length of /v1/embeddings and /pooling vectors;
	// default 16.
	EmbeddingDim int
	// SpecDecodeTokens, when positive, makes /metrics report speculative
	// decoding counters as if every decode step drafted this many tokens.
	SpecDecodeTokens int
	// SpecDecodeAcceptance is the per-position acceptance probability the
	// counters are derived from (position i is accepted at rate^(i+1));
	// default 0.7.
	SpecDecodeAcceptance float64
	// SpecDecodeStream makes the streams speculative too: each event of a
	// stream is a decode step carrying its accepted drafts plus one token,
	// drawn at SpecDecodeAcceptance, and the /metrics counters count
	// those drafts (chunks.go). Needs SpecDecodeTokens.
	SpecDecodeStream bool
	// TokensPerChunk, above 1, makes every stream event carry this many
	// tokens (the last one what is left); 0 and 1 send one.
	TokensPerChunk int

	// Faults are injected into generation requests; the first that matches
	// a request applies.
	Faults []Fault

	// TruthLog, when set, is the file the ground-truth log is written to.
	TruthLog string
	// OTLPTracesEndpoint, when set, receives one OpenTelemetry span per
	// finished generation request, as vLLM's --otlp-traces-endpoint does
	// (otlp.go), over OTLPTracesProtocol (OTLPGRPC, the default, or
	// OTLPHTTP); OTLPExportDelay holds every export back that long.
	OTLPTracesEndpoint string
	OTLPTracesProtocol string
	OTLPExportDelay    time.Duration
	// Summary, when set, receives the timing summary on Close.
	Summary io.Writer

	// ReusePort sets SO_REUSEPORT on the listening socket, so that
	// several mock processes serve one port (the kernel spreads the
	// connections): more sockets than one process's open-files limit.
	ReusePort bool

	// EventLoops is the number of gnet event loops that accept and parse
	// requests; default 1.
	EventLoops int

	// WriterFIFOPriority, 1 to 99, runs the token clock's goroutine on a
	// thread of its own at that SCHED_FIFO priority; 0 leaves it an
	// ordinary goroutine. On a host whose cores the clients share, each
	// write(2) wakes a reader that would otherwise preempt the writer in
	// the middle of a decode step, and a step of 17,000 streams then takes
	// most of a second to write; at FIFO priority the step goes out in one
	// stretch and the readers run when it is done (their kernel receive
	// stamps do not wait for them). Needs CAP_SYS_NICE or RLIMIT_RTPRIO.
	WriterFIFOPriority int

	// NoArrivalTap leaves the truth log without A records (no packet
	// socket). The tap's filter runs on every packet of the interface, in
	// every mock process that has one: several mocks on one host's
	// loopback each add their copy to the cost of every token's write.
	NoArrivalTap bool

	// TLS, when set, makes the server speak TLS 1.3 with
	// this configuration's certificates; see SelfSigned.
	TLS *tls.Config
}

func (c *Config) setDefaults() {
	if c.PrefixCacheTokens == 0 {
		c.PrefixCacheTokens = 1_000_000
	}
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.Model == "" {
		c.Model = "mock-llm"
	}
	if c.MaxModelLen == 0 {
		c.MaxModelLen = 4096
	}
	if c.Version == "" {
		c.Version = "0.0.0-mockllm"
	}
	if c.EmbeddingDim == 0 {
		c.EmbeddingDim = 16
	}
	if c.SpecDecodeAcceptance == 0 {
		c.SpecDecodeAcceptance = 0.7
	}
	if c.EventLoops == 0 {
		c.EventLoops = 1
	}
	if c.Tokenizer == nil {
		c.Tokenizer = NewMockTokenizer()
	}
}

func (c *Config) validate() error {
	switch {
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("--port %d: want 0..65535", c.Port)
	case c.MaxModelLen < 1:
		return fmt.Errorf("--max-model-len %d: want a positive token count", c.MaxModelLen)
	case c.TTFT < 0:
		return fmt.Errorf("--ttft-ms %v: want >= 0", c.TTFT)
	case c.PrefixCache != PrefixCacheOff && c.PrefixCache != PrefixCacheGlobal && c.PrefixCache != PrefixCacheSession:
		return fmt.Errorf("--prefix-cache %q: want off, global or session", c.PrefixCache)
	case c.PrefixCacheTokens < 0:
		return fmt.Errorf("--prefix-cache-tokens %d: want a positive token count", c.PrefixCacheTokens)
	case c.PrefillPerToken < 0:
		return fmt.Errorf("--prefill-us-per-token %v: want >= 0", c.PrefillPerToken)
	case c.ITL < 0:
		return fmt.Errorf("--itl-ms %v: want >= 0", c.ITL)
	case c.Mode == DecodeStep && c.ITL < 10*time.Microsecond:
		return fmt.Errorf("--itl-ms %v: decode-step mode needs a step period of at least 10µs", c.ITL)
	case c.Jitter < 0:
		return fmt.Errorf("--jitter-ms %v: want >= 0", c.Jitter)
	case c.TimerSlack < 0:
		return fmt.Errorf("--timer-slack-us %v: want >= 0", c.TimerSlack)
	case c.MaxNumSeqs < 0:
		return fmt.Errorf("--max-num-seqs %d: want >= 0 (0 = no cap)", c.MaxNumSeqs)
	case c.DefaultMaxTokens < 0:
		return fmt.Errorf("--default-max-tokens %d: want >= 0", c.DefaultMaxTokens)
	case c.ReasoningTokens < 0:
		return fmt.Errorf("--reasoning-tokens %d: want >= 0", c.ReasoningTokens)
	case c.ToolCalls < 0:
		return fmt.Errorf("--tool-calls %d: want >= 0", c.ToolCalls)
	case c.EmbeddingDim < 1:
		return fmt.Errorf("--embedding-dim %d: want >= 1", c.EmbeddingDim)
	case c.SpecDecodeTokens < 0:
		return fmt.Errorf("--spec-decode-tokens %d: want >= 0", c.SpecDecodeTokens)
	case c.SpecDecodeAcceptance < 0 || c.SpecDecodeAcceptance > 1:
		return fmt.Errorf("--spec-decode-acceptance %v: want 0..1", c.SpecDecodeAcceptance)
	case c.SpecDecodeStream && c.SpecDecodeTokens == 0:
		return fmt.Errorf("--spec-decode-stream: needs --spec-decode-tokens > 0, the drafts per step")
	case c.TokensPerChunk < 0:
		return fmt.Errorf("--tokens-per-chunk %d: want >= 0 (0 or 1: one token per chunk)", c.TokensPerChunk)
	case c.TokensPerChunk > 1 && c.SpecDecodeStream:
		return fmt.Errorf("--tokens-per-chunk %d with --spec-decode-stream: choose one way to size chunks", c.TokensPerChunk)
	case c.EventLoops < 1:
		return fmt.Errorf("--event-loops %d: want >= 1", c.EventLoops)
	case c.WriterFIFOPriority < 0 || c.WriterFIFOPriority > 99:
		return fmt.Errorf("--writer-fifo-priority %d: want 0 (an ordinary thread) or a SCHED_FIFO priority from 1 to 99", c.WriterFIFOPriority)
	case c.Mode != PerStream && c.Mode != DecodeStep:
		return fmt.Errorf("mode %v: want per-stream or decode-step", c.Mode)
	}
	return nil
}
