package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/internal/py"
)

// Config is one `stampede serve` run: every flag (Flags, with Python's
// post-parse rewriting applied: --input-len/--output-len copied, ignore_eos
// forced, self-timed resolved) and the values main_async derives before it
// needs the server. Where a derived field shares a flag's name (BaseURL),
// the flag as given stays reachable as cfg.Flags.BaseURL, as Python keeps
// args.base_url beside its local base_url.
type Config struct {
	Flags

	// APIURL is where benchmark requests go: base URL + --endpoint.
	APIURL string
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
	// APIKey is $OPENAI_API_KEY, sent as a Bearer token on benchmark
	// requests when non-empty.
	APIKey string
	// SaveToPyTorchFormat is $SAVE_TO_PYTORCH_BENCHMARK_FORMAT non-empty.
	SaveToPyTorchFormat bool

	// SelfTimed is true when requests are sent at the trace's timestamps
	// (timed_trace, unless --no-self-timed).
	SelfTimed bool
	// TaskType is pooling for the embeddings/pooling/rerank backends,
	// generation otherwise.
	TaskType TaskType
	// SamplingParams are the sampling flags given, in Python's order:
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
	// SelectedPercentiles are --metric-percentiles as numbers.
	SelectedPercentiles []float64
	// GoodputSLOs are the --goodput objectives in order; empty without it.
	GoodputSLOs []GoodputSLO
	// TimelineITLThresholdsMs are the two --timeline-itl-thresholds when
	// --plot-timeline is set.
	TimelineITLThresholdsMs []float64

	// Warnings are messages the command line produced (FlexibleArgument-
	// Parser's duplicate keys); the command prints them to stderr.
	Warnings []string

	given   map[string]bool
	backend *Backend // --backend's row; nil when it is not one of the choices
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

// TemperatureWarning is the line vllm bench serve prints when no
// --temperature is given for a generation backend.
const TemperatureWarning = "WARNING: vllm bench serve no longer sets temperature==0 (greedy) in requests by default. " +
	"The default will be determined on the server side and can be model/API specific. " +
	"For the old behavior, include --temperature=0."

// Given reports whether the option --long appeared on the command line.
func (c *Config) Given(long string) bool { return c.given[long] }

// WorkerProcesses is the number of workers the multi-process fork would
// start for n requests with --max-connections-per-worker K: ceil(n/K), at
// least 1; 0 when the flag was not given.
func (c *Config) WorkerProcesses(n int) int {
	if c.MaxConnectionsPerWorker == nil {
		return 0
	}
	k := *c.MaxConnectionsPerWorker
	m := (n + k - 1) / k
	return max(m, 1)
}

// UsageError is an argparse error: the command prints the usage line and
// "stampede serve: error: " + Msg to stderr and exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// ValidationError is an exception vllm bench serve raises after parsing
// (Python prints a traceback ending in "Type: Msg" and exits 1).
type ValidationError struct {
	Type string // Python exception class: ValueError, TypeError, ...
	Msg  string
}

func (e *ValidationError) Error() string { return e.Msg }

func valueErrorf(format string, args ...any) *ValidationError {
	return &ValidationError{Type: "ValueError", Msg: fmt.Sprintf(format, args...)}
}

// HelpRequested is returned for -h/--help: print WriteHelp and exit 0.
type HelpRequested struct {
	// Keyword is the filter of --help=keyword ("" for the whole help).
	Keyword string
}

func (e *HelpRequested) Error() string { return "help requested" }

// ProgramName is how usage and error lines name the command.
const ProgramName = "stampede serve"

// WriteUsageError prints err as argparse does: the usage line, then
// "stampede serve: error: ...".
func WriteUsageError(w io.Writer, err *UsageError) {
	fmt.Fprintf(w, "usage: %s [-h] [OPTIONS]\n%s: error: %s\n", ProgramName, ProgramName, err.Msg)
}

// Parse parses `vllm bench serve` arguments (without the "serve"
// subcommand) with Python's rules, then validates and rewrites them as
// main_async does before it contacts the server. backends are the
// --backend choices (bench's table). Errors are *UsageError (exit 2),
// *ValidationError (exit 1) or *HelpRequested (exit 0).
func Parse(args []string, backends []Backend) (*Config, error) {
	return ParseEnv(args, backends, os.Getenv)
}

// ParseEnv is Parse reading the environment ($OPENAI_API_KEY,
// $SAVE_TO_PYTORCH_BENCHMARK_FORMAT, $JOB_COMPLETION_INDEX) through getenv.
func ParseEnv(args []string, backends []Backend, getenv func(string) string) (*Config, error) {
	cfg, err := parseFlags(args, backends)
	if err != nil {
		return nil, err
	}
	cfg.APIKey = getenv("OPENAI_API_KEY")
	cfg.SaveToPyTorchFormat = getenv("SAVE_TO_PYTORCH_BENCHMARK_FORMAT") != ""
	if err := cfg.resolveCluster(getenv); err != nil {
		return nil, err
	}
	if err := checkSupported(cfg); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// parseFlags is the argparse step alone: args to Flags, with defaults.
func parseFlags(args []string, backends []Backend) (*Config, error) {
	cfg := &Config{}
	parser := newFlagParser(&cfg.Flags, backends)
	parsed, err := newActionTable(parser).parseArgv(args)
	if err != nil {
		return nil, err
	}
	if parsed.help {
		return nil, &HelpRequested{Keyword: parsed.helpKeyword}
	}
	if !parsed.given["request-id-prefix"] {
		parser.FindOptionByLongName("request-id-prefix").Default = []string{newRequestIDPrefix()}
	}
	// Defaults first, then the given values, through go-flags' Option.Set.
	// go-flags' own ParseArgs is not used: it would exit the process when
	// $GO_FLAGS_COMPLETION is set.
	for _, o := range registrationOrder(parser) {
		for i := range o.Default {
			if err := o.Set(&o.Default[i]); err != nil {
				return nil, fmt.Errorf("flag table: default of --%s: %v", o.LongName, err)
			}
		}
	}
	for _, as := range parsed.assignments {
		if err := as.store(); err != nil {
			// argv.go checked every value; go-flags refusing one is a
			// bug in the table, reported as what it is.
			return nil, fmt.Errorf("flag table rejected %s %q: %v", as.option, as.values, err)
		}
	}
	cfg.given = parsed.given
	cfg.backend = findBackend(backends, cfg.Backend)
	cfg.Warnings = parsed.warnings
	return cfg, nil
}

// newRequestIDPrefix is Python's default: "bench-" + 8 hex digits + "-",
// drawn once per process run.
func newRequestIDPrefix() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return "bench-" + hex.EncodeToString(b[:]) + "-"
}

// validate applies main_async's checks and rewrites that need no server,
// in Python's order, so the first error reported is Python's.
func (c *Config) validate() error {
	if c.MaxConcurrency != nil && *c.MaxConcurrency <= 0 {
		return valueErrorf("--max-concurrency must be greater than 0")
	}
	if c.PlotTimeline {
		var err error
		if c.TimelineITLThresholdsMs, err = parseFloatList(c.TimelineITLThresholds, true); err != nil {
			return valueErrorf("Invalid --timeline-itl-thresholds format: %v", err)
		}
		if n := len(c.TimelineITLThresholdsMs); n != 2 {
			return valueErrorf("Invalid --timeline-itl-thresholds format: Expected 2 ITL threshold values, got %d", n)
		}
	}
	// vLLM names the figure after the result file, which it computes only
	// for these flags; without one its run fails on an assertion after the
	// benchmark. Refusing here saves the run.
	if c.PlotDatasetStats && !(c.SaveResult || c.AppendResult || c.PlotTimeline) {
		return UsageErrorf("--plot-dataset-stats needs a result file name beside which to write its figure: add --save-result, --append-result or --plot-timeline")
	}
	if err := c.validateRampUp(); err != nil {
		return err
	}
	if err := c.buildURLs(); err != nil {
		return err
	}
	if err := c.parseHeaders(); err != nil {
		return err
	}
	if err := c.checkAuthorization(); err != nil {
		return err
	}
	// Request ids go out as x-request-id values.
	if err := httpwire.ValidateHeader("x-request-id", c.RequestIDPrefix); err != nil {
		return &UsageError{Msg: "argument --request-id-prefix: " + err.Error()}
	}
	if err := c.rewriteDataset(); err != nil {
		return err
	}
	var err error
	if c.GoodputSLOs, err = parseGoodput(c.Goodput); err != nil {
		return err
	}
	if err := c.buildRequestExtras(); err != nil {
		return err
	}
	names := c.PercentileMetrics
	if names == "" {
		names = "ttft,tpot,itl"
		if c.TaskType == Pooling {
			names = "e2el"
		}
	}
	c.SelectedPercentileMetrics = strings.Split(names, ",")
	if c.SelectedPercentiles, err = parseFloatList(c.MetricPercentiles, false); err != nil {
		return valueErrorf("%v", err)
	}
	return c.validateLimits()
}

// validateLimits checks stampede's own byte limits, which Python lacks.
func (c *Config) validateLimits() error {
	for _, l := range []struct {
		flag string
		v    int
	}{{"--max-response-bytes", c.MaxResponseBytes}, {"--max-buffered-bytes", c.MaxBufferedBytes}} {
		if l.v < 0 {
			return &UsageError{Msg: fmt.Sprintf("argument %s: invalid value %d: want a number of bytes, or 0 for no limit", l.flag, l.v)}
		}
	}
	if err := c.validatePerTokenITL(); err != nil {
		return err
	}
	return c.validateReportFlags()
}

func (c *Config) validateRampUp() error {
	if c.RampUpStrategy == "" {
		return nil
	}
	if !math.IsInf(c.RequestRate, 1) {
		return valueErrorf("When using ramp-up, do not specify --request-rate. " +
			"The request rate will be controlled by ramp-up parameters. " +
			"Please remove the --request-rate argument.")
	}
	if c.RampUpStartRPS == nil || c.RampUpEndRPS == nil {
		return valueErrorf("When using --ramp-up-strategy, both --ramp-up-start-rps and " +
			"--ramp-up-end-rps must be specified")
	}
	start, end := *c.RampUpStartRPS, *c.RampUpEndRPS
	switch {
	case start < 0 || end < 0:
		return valueErrorf("Ramp-up start and end RPS must be non-negative")
	case start > end:
		return valueErrorf("Ramp-up start RPS must be less than end RPS")
	case c.RampUpStrategy == "exponential" && start == 0:
		return valueErrorf("For exponential ramp-up, the start RPS cannot be 0.")
	}
	return nil
}

// buildURLs is Python's URL building: plain string concatenation, no
// slash normalisation; credentials in --base-url become URLAuthorization.
func (c *Config) buildURLs() error {
	if c.Given("base-url") {
		base, auth, err := splitURLCredentials(c.Flags.BaseURL)
		if err != nil {
			return &UsageError{Msg: err.Error()}
		}
		c.APIURL = base + c.Endpoint
		c.BaseURL = base
		c.URLAuthorization = auth
		return nil
	}
	hostPort := joinHostPort(c.Host, c.Port)
	c.APIURL = "http://" + hostPort + c.Endpoint
	c.BaseURL = "http://" + hostPort
	return nil
}

// checkAuthorization refuses what aiohttp refuses on every request: an
// explicit Authorization header ($OPENAI_API_KEY's Bearer token or a
// --header) beside credentials in the URL. Python's run would fail every
// request with this ValueError; stampede says so before it starts. It also
// checks $OPENAI_API_KEY as a header value.
func (c *Config) checkAuthorization() error {
	if c.APIKey != "" {
		if err := httpwire.ValidateHeader("Authorization", "Bearer "+c.APIKey); err != nil {
			return &UsageError{Msg: "environment variable OPENAI_API_KEY: " + err.Error()}
		}
	}
	if c.URLAuthorization == "" {
		return nil
	}
	source := ""
	switch {
	case c.APIKey != "":
		source = "$OPENAI_API_KEY sends one"
	default:
		for _, h := range c.Headers {
			if strings.EqualFold(h.Key, "Authorization") {
				source = "--header " + h.Key + "=... sends one"
			}
		}
	}
	if source == "" {
		return nil
	}
	return valueErrorf("Cannot combine AUTHORIZATION header with AUTH argument or credentials encoded in URL "+
		"(--base-url has user:password@, and %s; keep one of the two)", source)
}

// joinHostPort is vLLM's join_host_port: an IPv6 literal is bracketed.
func joinHostPort(host string, port int) string {
	if addr, err := netip.ParseAddr(host); err == nil && addr.Is6() {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

func (c *Config) parseHeaders() error {
	for _, item := range c.Header {
		key, value, ok := strings.Cut(item, "=")
		if !ok {
			return valueErrorf("Invalid header format. Please use KEY=VALUE format.")
		}
		key, value = pyStrip(key), pyStrip(value)
		if err := httpwire.ValidateHeader(key, value); err != nil {
			return &UsageError{Msg: "argument --header: " + err.Error()}
		}
		replaced := false
		for i := range c.Headers {
			if c.Headers[i].Key == key {
				c.Headers[i].Value = value
				replaced = true
			}
		}
		if !replaced {
			c.Headers = append(c.Headers, Header{Key: key, Value: value})
		}
	}
	return nil
}

// pyStrip is Python's str.strip() with no argument.
func pyStrip(s string) string { return strings.TrimFunc(s, py.IsSpace) }

// rewriteDataset is main_async's dataset checks and flag copying: the
// synthetic datasets refuse --dataset-path, --input-len/--output-len are
// copied into the per-dataset flags, random datasets and timed_trace force
// ignore_eos, and --self-timed is resolved.
func (c *Config) rewriteDataset() error {
	d := datasets.Lookup(c.DatasetName)
	if d == nil {
		return UsageErrorf("--dataset-name %s is not supported yet", c.DatasetName)
	}
	if d.Synthetic && c.Given("dataset-path") {
		return valueErrorf("Cannot use '%s' dataset with --dataset-path. "+
			"Please specify the appropriate --dataset-name (e.g., "+
			"'sharegpt', 'custom', 'hf') for your dataset file: %s", c.DatasetName, c.DatasetPath)
	}
	c.Flags.Flags.CopyLengths(c.InputLen, c.OutputLen)
	if d.ExactOutputLen && c.backend.OpenAICompatible {
		c.IgnoreEOS = true
	}
	selfTimedGiven := c.SelfTimedOn || c.SelfTimedOff
	if d.SelfTimed {
		if !c.backend.Completions {
			return valueErrorf("%s dataset passes pre-tokenized prompts (list[int])"+
				" and requires a completions backend ('vllm' or 'openai').", d.Name)
		}
		c.IgnoreEOS = true
		c.SelfTimed = !c.SelfTimedOff
		return nil
	}
	if selfTimedGiven {
		return valueErrorf("--self-timed/--no-self-timed is only supported with --dataset-name=timed_trace")
	}
	c.SelfTimed = false
	return nil
}

// buildRequestExtras collects the sampling parameters and merges
// --extra-body over them.
func (c *Config) buildRequestExtras() error {
	c.TaskType = Generation
	if c.backend.Pooling {
		c.TaskType = Pooling
	}
	if c.TaskType == Generation {
		floatParam := func(key string, v *float64) {
			if v != nil {
				c.SamplingParams.Set(key, py.AppendJSONFloat(nil, *v))
			}
		}
		floatParam("top_p", c.TopP)
		if c.TopK != nil {
			c.SamplingParams.Set("top_k", []byte(strconv.Itoa(*c.TopK)))
		}
		floatParam("min_p", c.MinP)
		floatParam("temperature", c.Temperature)
		floatParam("frequency_penalty", c.FrequencyPenalty)
		floatParam("presence_penalty", c.PresencePenalty)
		floatParam("repetition_penalty", c.RepetitionPenalty)
		if c.SamplingParams.Len() > 0 && !c.backend.OpenAICompatible {
			return valueErrorf("Sampling parameters are only supported by openai-compatible backends.")
		}
		c.WarnDefaultTemperature = c.Temperature == nil
	}
	c.RequestExtraBody = c.SamplingParams.Clone()
	if c.ExtraBody == nil {
		return nil
	}
	body, err := py.Loads(string(c.ExtraBody))
	if err != nil || !body.Truthy() {
		return nil
	}
	extra, ok := c.ExtraBody.Object()
	if !ok {
		return &ValidationError{Type: "TypeError", Msg: fmt.Sprintf("'%s' object is not a mapping", body.Kind.TypeName(body.Raw))}
	}
	c.RequestExtraBody.Merge(extra)
	return nil
}

// parseFloatList parses a comma-separated list with float() per item, as
// Python's [float(p) for p in s.split(",")]; strip applies str.strip()
// first. The error text is Python's ValueError message.
func parseFloatList(s string, strip bool) ([]float64, error) {
	parts := strings.Split(s, ",")
	out := make([]float64, len(parts))
	for i, p := range parts {
		if strip {
			p = pyStrip(p)
		}
		v, err := py.ParseFloat(p)
		if err != nil {
			return nil, fmt.Errorf("could not convert string to float: %s", py.StrRepr(p))
		}
		out[i] = v
	}
	return out, nil
}

var goodputMetrics = []string{"ttft", "tpot", "e2el"}

// parseGoodput is Python's check_goodput_args over the --goodput pairs.
func parseGoodput(pairs []string) ([]GoodputSLO, error) {
	var slos []GoodputSLO
	for _, pair := range pairs {
		parts := strings.Split(pair, ":")
		var v float64
		var err error
		if len(parts) == 2 {
			v, err = py.ParseFloat(parts[1])
		}
		if len(parts) != 2 || err != nil {
			return nil, &ValidationError{Type: "ArgumentTypeError", Msg: "Invalid format found for service level objectives. " +
				`Specify service level objectives for goodput as "KEY:VALUE" ` +
				"pairs, where the key is a metric name, and the value is a " +
				"number in milliseconds."}
		}
		replaced := false
		for i := range slos {
			if slos[i].Metric == parts[0] {
				slos[i].ValueMs = v
				replaced = true
			}
		}
		if !replaced {
			slos = append(slos, GoodputSLO{Metric: parts[0], ValueMs: v})
		}
	}
	for _, slo := range slos {
		if !contains(goodputMetrics, slo.Metric) {
			return nil, valueErrorf("Invalid metric name found, %s: %s. "+
				"The service level objective name should be one of ['ttft', 'tpot', 'e2el']. ",
				slo.Metric, py.FloatRepr(slo.ValueMs))
		}
		if slo.ValueMs < 0 {
			return nil, valueErrorf("Invalid value found, %s: %s. "+
				"The service level objective value should be non-negative.",
				slo.Metric, py.FloatRepr(slo.ValueMs))
		}
	}
	return slos, nil
}

// validatePerTokenITL refuses --per-token-itl where no token streams: the
// pooling backends answer once.
func (c *Config) validatePerTokenITL() error {
	if c.PerTokenITL && c.TaskType == Pooling {
		return &UsageError{Msg: fmt.Sprintf("argument --per-token-itl: backend %s returns one response, not a token stream; "+
			"use it with a completions or chat backend", c.Backend)}
	}
	return nil
}

// TrimsSteadyState reports whether the run asks for the trimmed block; the
// fork checks warmup_time > 0 or cooldown_time > 0.
func (c *Config) TrimsSteadyState() bool { return c.WarmupTime > 0 || c.CooldownTime > 0 }
