// Command mockllm is a vLLM-compatible mock server for benchmarking
// benchmark clients: the OpenAI completions and chat endpoints stream
// deterministic tokens on a configurable timing model, with fault
// injection and a log of when every token really left.
//
//	mockllm --port 8000 --ttft-ms 50 --itl-ms 20 --mode decode-step
//
// It prints "mockllm listening on http://HOST:PORT" once ready, and a
// timing summary on stderr when stopped with SIGINT or SIGTERM.
package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/datasets/tokenizer"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// faultFlags collects repeated --fault values.
type faultFlags []mock.Fault

func (f *faultFlags) String() string {
	parts := make([]string, len(*f))
	for i, x := range *f {
		parts[i] = x.String()
	}
	return strings.Join(parts, " ")
}

func (f *faultFlags) Set(s string) error {
	x, err := mock.ParseFault(s)
	if err != nil {
		return err
	}
	*f = append(*f, x)
	return nil
}

// defaultTimerSlackUs bounds the token clock to 5,000 wake-ups a second
// however many streams are due: at 10,000 streams × 5 tokens/s it cuts
// the server's CPU per token by about a fifth against exact wake-ups, for
// a median lateness of about 100 µs instead of 40 µs.
const defaultTimerSlackUs = 200

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mockllm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg              mock.Config
		faults           faultFlags
		mode, outputLen  string
		tokenizerPath    string
		ttftMs, itlMs    float64
		jitterMs         float64
		timerSlackUs     float64
		prefillUsPerTok  float64
		specDecodeTokens int
		useTLS           bool
		tlsCert, tlsKey  string
	)
	fs.StringVar(&cfg.Host, "host", "127.0.0.1", "address to bind")
	fs.IntVar(&cfg.Port, "port", 8000, "port to listen on (0 picks a free one)")
	fs.StringVar(&cfg.Model, "model", "mock-llm", "served model name")
	fs.IntVar(&cfg.MaxModelLen, "max-model-len", 4096, "context length, reported and enforced on prompt + max_tokens")
	fs.StringVar(&tokenizerPath, "tokenizer", "", "tokenizer.json to count and (de)tokenize with (default: the built-in reversible tokenizer)")
	fs.StringVar(&mode, "mode", "per-stream", "timing model: per-stream (own schedule per stream) or decode-step (one global step clock)")
	fs.Float64Var(&ttftMs, "ttft-ms", 50, "base time to first token, ms")
	fs.Float64Var(&prefillUsPerTok, "prefill-us-per-token", 0, "added to TTFT per prompt token, µs")
	prefixCache := fs.String("prefix-cache", "off", "prefix caching of chat and completions prompts: off, global, or session (keyed by X-Session-ID); cached tokens skip --prefill-us-per-token")
	fs.IntVar(&cfg.PrefixCacheTokens, "prefix-cache-tokens", 1_000_000, "prefix cache capacity in tokens (least recently used first out)")
	fs.Float64Var(&itlMs, "itl-ms", 20, "gap between tokens (per-stream) or decode step period (decode-step), ms")
	fs.Float64Var(&jitterMs, "jitter-ms", 0, "uniform [0, J) ms added to every TTFT and token gap (per-stream) or step (decode-step)")
	fs.Float64Var(&timerSlackUs, "timer-slack-us", defaultTimerSlackUs, "per-stream: send a token up to this long past its due time, so tokens due together share one wake-up, µs (0 = exact)")
	fs.IntVar(&cfg.MaxNumSeqs, "max-num-seqs", 0, "streams generating at once; the rest wait FIFO (0 = no cap)")
	fs.StringVar(&outputLen, "output-len", "fixed", "fixed: exactly max_tokens; uniform: drawn in [min_tokens, max_tokens] unless ignore_eos")
	fs.IntVar(&cfg.DefaultMaxTokens, "default-max-tokens", 0, "output length when a request sets no max_tokens (0 = max-model-len - prompt, as vLLM)")
	fs.IntVar(&cfg.ReasoningTokens, "reasoning-tokens", 0, "the first N output tokens of a chat, Responses or Messages stream are reasoning (delta.reasoning; reasoning_text deltas; a thinking block)")
	fs.IntVar(&cfg.ToolCalls, "tool-calls", 0, "the answer of a chat, Responses or Messages stream is N tool calls (delta.tool_calls; function_call items; tool_use blocks) instead of text")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed for output lengths, jitter and faults")
	fs.IntVar(&cfg.EmbeddingDim, "embedding-dim", 16, "length of embedding and pooling vectors")
	fs.IntVar(&specDecodeTokens, "spec-decode-tokens", 0, "report speculative-decoding counters on /metrics for this many draft tokens (0 = off)")
	fs.Float64Var(&cfg.SpecDecodeAcceptance, "spec-decode-acceptance", 0.7, "per-position acceptance rate behind the spec-decode counters")
	fs.BoolVar(&cfg.SpecDecodeStream, "spec-decode-stream", false, "make the streams speculative too: each chunk carries its step's accepted drafts plus one token, and the counters count them")
	fs.IntVar(&cfg.TokensPerChunk, "tokens-per-chunk", 1, "tokens every stream chunk carries (the last one what is left)")
	fs.Var(&faults, "fault", "inject a fault, repeatable: KIND:prob=P|every=N[,at=TOKEN][,ms=MS]; kinds: http500 http429 http503 reset-before-headers reset-mid-stream stall malformed-chunk error-event slow-headers close, and the never-ending flood endless-line huge-headers (alone: every request)")
	fs.StringVar(&cfg.TruthLog, "truth-log", "", "write the ground-truth log (request arrivals, token send times) to this file")
	fs.StringVar(&cfg.OTLPTracesEndpoint, "otlp-traces-endpoint", "", "export one OpenTelemetry span per finished request (vLLM's llm_request, with the truth log's times) to this OTLP endpoint: host:port or http://host:4317 for gRPC, http://host:4318/v1/traces for --otlp-traces-protocol http/protobuf; every export carries the headers of $OTEL_EXPORTER_OTLP_TRACES_HEADERS or $OTEL_EXPORTER_OTLP_HEADERS (name=value,...), a receiver's token among them")
	fs.StringVar(&cfg.OTLPTracesProtocol, "otlp-traces-protocol", "grpc", "protocol of --otlp-traces-endpoint: grpc or http/protobuf (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL's values)")
	fs.DurationVar(&cfg.OTLPExportDelay, "otlp-export-delay", 0, "hold every span export back this long (a slow collector)")
	fs.IntVar(&cfg.EventLoops, "event-loops", 1, "gnet event loops accepting and parsing requests")
	fs.IntVar(&cfg.WriterFIFOPriority, "writer-fifo-priority", 0, "run the token clock on a thread of its own at this SCHED_FIFO priority, 1-99 (0 = an ordinary thread): decode steps go out whole on a host whose cores the clients share (needs CAP_SYS_NICE)")
	arrivalStamps := fs.Bool("arrival-stamps", true, "with --truth-log, record each request's kernel receive stamp (A records) through a packet socket that sees every packet of the interface; false spares each token's write that cost when several mocks share one host")
	fs.BoolVar(&cfg.ReusePort, "reuse-port", false, "listen with SO_REUSEPORT, so that several mock processes share the port (each with its own --truth-log)")
	fs.BoolVar(&useTLS, "tls", false, "serve https:// (TLS 1.3) with a generated self-signed ECDSA P-256 certificate")
	fs.StringVar(&tlsCert, "tls-cert", "", "serve https:// with this PEM certificate chain (with --tls-key)")
	fs.StringVar(&tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mockllm: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg.NoArrivalTap = !*arrivalStamps
	var err error
	if cfg.Mode, err = mock.ParseMode(mode); err != nil {
		fmt.Fprintln(stderr, "mockllm:", err)
		return 2
	}
	if cfg.OutputLen, err = mock.ParseOutputLen(outputLen); err != nil {
		fmt.Fprintln(stderr, "mockllm:", err)
		return 2
	}
	if tokenizerPath != "" {
		if cfg.Tokenizer, err = loadTokenizer(tokenizerPath); err != nil {
			fmt.Fprintln(stderr, "mockllm:", err)
			return 2
		}
	}
	if cfg.TLS, err = tlsConfig(useTLS, tlsCert, tlsKey); err != nil {
		fmt.Fprintln(stderr, "mockllm:", err)
		return 2
	}
	cfg.TTFT = msDuration(ttftMs)
	cfg.ITL = msDuration(itlMs)
	cfg.Jitter = msDuration(jitterMs)
	cfg.PrefillPerToken = time.Duration(prefillUsPerTok * float64(time.Microsecond))
	if cfg.PrefixCache, err = mock.ParsePrefixCache(*prefixCache); err != nil {
		fmt.Fprintln(stderr, "mockllm:", err)
		return 2
	}
	cfg.TimerSlack = time.Duration(timerSlackUs * float64(time.Microsecond))
	cfg.SpecDecodeTokens = specDecodeTokens
	cfg.Faults = faults
	cfg.Summary = stderr

	// The token writer (in read(2) of its timerfd) and every event loop
	// (in epoll_wait) spend their idle time blocked, each holding a P.
	// With GOMAXPROCS = 1 (what Go picks under `taskset -c 0`) a thread
	// returning from that wait must wait for sysmon to take the P back
	// from the other, which costs up to 10 ms of lateness; one P each
	// keeps wake-ups immediate, while the kernel still runs them all on
	// the allowed CPUs.
	if need := cfg.EventLoops + 2; runtime.GOMAXPROCS(0) < need {
		runtime.GOMAXPROCS(need)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	srv, err := mock.Start(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "mockllm:", err)
		return 1
	}
	scheme := "http"
	if cfg.TLS != nil {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "mockllm listening on %s://%s\n", scheme, srv.Addr())
	<-sigs
	if err := srv.Close(); err != nil {
		fmt.Fprintln(stderr, "mockllm:", err)
		return 1
	}
	st := srv.Stats()
	fmt.Fprintf(stderr, "mockllm: %d requests, %d scheduled, %d tokens, %d faults, %d error responses\n",
		st.Requests, st.Scheduled, st.Tokens, st.Faults, st.Errors)
	return 0
}

// tlsConfig reads --tls, --tls-cert and --tls-key: nil for plain HTTP.
func tlsConfig(selfSigned bool, certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		if !selfSigned {
			return nil, nil
		}
		cert, err := mock.SelfSigned()
		if err != nil {
			return nil, fmt.Errorf("--tls: %w", err)
		}
		return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
	case certFile == "" || keyFile == "":
		return nil, errors.New("--tls-cert and --tls-key: give both, or --tls alone for a self-signed certificate")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
}

// loadTokenizer loads a tokenizer.json, .tiktoken file, or a directory
// holding one, for --tokenizer: the server then counts, tokenizes and
// detokenizes as the real model's server would.
func loadTokenizer(path string) (datasets.Tokenizer, error) {
	tok, err := tokenizer.Load(path)
	if err != nil {
		return nil, fmt.Errorf("--tokenizer %s: %w", path, err)
	}
	return tok, nil
}
