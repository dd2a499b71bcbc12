package cli

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/internal/py"
)

// draft is a plan on its way from the command line: the options as
// parsed, checked and rewritten in place as main_async does, and the
// derived values filled in, beside what only the checks read.
type draft struct {
	*plan.Plan
	backend *plan.Backend // --backend's row; nil when it is not one of the choices
	// apiKeyEnv is the environment variable APIKey came from ("" when
	// none was set).
	apiKeyEnv string
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
func WriteUsageError(w io.Writer, err *py.UsageError) {
	fmt.Fprintf(w, "usage: %s [-h] [OPTIONS]\n%s: error: %s\n", ProgramName, ProgramName, err.Msg)
}

// Parse parses `vllm bench serve` arguments (without the "serve"
// subcommand) with Python's rules, then validates and rewrites them as
// main_async does before it contacts the server, into the run's plan.
// backends are the --backend choices (bench's table). Errors are
// *py.UsageError (exit 2), *py.Error (Python's exception: exit 1) or
// *HelpRequested (exit 0).
func Parse(args []string, backends []plan.Backend) (*plan.Plan, error) {
	return ParseEnv(args, backends, os.Getenv)
}

// ParseEnv is Parse reading the environment ($OPENAI_API_KEY, or the
// API key variables of --backend's row,
// $SAVE_TO_PYTORCH_BENCHMARK_FORMAT, $JOB_COMPLETION_INDEX) through getenv.
func ParseEnv(args []string, backends []plan.Backend, getenv func(string) string) (*plan.Plan, error) {
	cfg, err := parseFlags(args, backends)
	if err != nil {
		return nil, err
	}
	cfg.applyBackendRow(getenv)
	cfg.SaveToPyTorchFormat = getenv("SAVE_TO_PYTORCH_BENCHMARK_FORMAT") != ""
	if err := cfg.resolveCluster(getenv); err != nil {
		return nil, err
	}
	if err := cfg.applyRust(); err != nil {
		return nil, err
	}
	if err := refuseAgentCommands(cfg.Plan); err != nil {
		return nil, err
	}
	if err := checkSupported(cfg); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Args = namespace(cfg.Plan)
	cfg.Argv = recordArgv(args)
	return cfg.Plan, nil
}

// parseFlags is the argparse step alone: args to Flags, with defaults,
// then Flags to a plan.
func parseFlags(args []string, backends []plan.Backend) (*draft, error) {
	var f Flags
	parser := newFlagParser(&f, backends)
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
	cfg := &draft{Plan: f.plan(), backend: findBackend(backends, f.Backend)}
	cfg.GivenOptions = parsed.given
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
func (c *draft) validate() error {
	if c.MaxConcurrency != nil && *c.MaxConcurrency <= 0 {
		return py.ValueErrorf("--max-concurrency must be greater than 0")
	}
	if c.PlotTimeline {
		var err error
		if c.TimelineITLThresholdsMs, err = parseFloatList(c.TimelineITLThresholds, true); err != nil {
			return py.ValueErrorf("Invalid --timeline-itl-thresholds format: %v", err)
		}
		if n := len(c.TimelineITLThresholdsMs); n != 2 {
			return py.ValueErrorf("Invalid --timeline-itl-thresholds format: Expected 2 ITL threshold values, got %d", n)
		}
	}
	// vLLM names the figure after the result file, which it computes only
	// for these flags; without one its run fails on an assertion after the
	// benchmark. Refusing here saves the run.
	if c.PlotDatasetStats && !(c.SaveResult || c.AppendResult || c.PlotTimeline) {
		return py.UsageErrorf("--plot-dataset-stats needs a result file name beside which to write its figure: add --save-result, --append-result or --plot-timeline")
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
		return &py.UsageError{Msg: "argument --request-id-prefix: " + err.Error()}
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
		if c.TaskType == plan.Pooling {
			names = "e2el"
		}
	}
	c.SelectedPercentileMetrics = strings.Split(names, ",")
	c.warnUnknownPercentileMetrics()
	if c.SelectedPercentiles, err = parseFloatList(c.MetricPercentiles, false); err != nil {
		return py.ValueErrorf("%v", err)
	}
	c.SelectedPercentiles = withPercentiles(c.SelectedPercentiles, c.SummaryPercentiles)
	return c.validateLimits()
}

// warnUnknownPercentileMetrics warns of each --percentile-metrics name
// that selects nothing: Python ignores it silently, so that a typo
// ("e2e") drops a section without a word.
func (c *draft) warnUnknownPercentileMetrics() {
	for _, m := range c.SelectedPercentileMetrics {
		if !slices.Contains(plan.PercentileMetricNames, m) {
			c.Warnings = append(c.Warnings, fmt.Sprintf("--percentile-metrics: unknown metric %q is ignored (accepted: %s)",
				m, strings.Join(plan.PercentileMetricNames, ", ")))
		}
	}
}

// validateLimits checks stampede's own byte limits, which Python lacks.
func (c *draft) validateLimits() error {
	for _, l := range []struct {
		flag string
		v    int
	}{{"--max-response-bytes", c.MaxResponseBytes}, {"--max-buffered-bytes", c.MaxBufferedBytes}} {
		if l.v < 0 {
			return &py.UsageError{Msg: fmt.Sprintf("argument %s: invalid value %d: want a number of bytes, or 0 for no limit", l.flag, l.v)}
		}
	}
	if err := c.validatePerTokenITL(); err != nil {
		return err
	}
	return c.validateReportFlags()
}

func (c *draft) validateRampUp() error {
	if c.RampUpStrategy == "" {
		return nil
	}
	if !math.IsInf(c.RequestRate, 1) {
		return py.ValueErrorf("When using ramp-up, do not specify --request-rate. " +
			"The request rate will be controlled by ramp-up parameters. " +
			"Please remove the --request-rate argument.")
	}
	if c.RampUpStartRPS == nil || c.RampUpEndRPS == nil {
		return py.ValueErrorf("When using --ramp-up-strategy, both --ramp-up-start-rps and " +
			"--ramp-up-end-rps must be specified")
	}
	start, end := *c.RampUpStartRPS, *c.RampUpEndRPS
	switch {
	case start < 0 || end < 0:
		return py.ValueErrorf("Ramp-up start and end RPS must be non-negative")
	case start > end:
		return py.ValueErrorf("Ramp-up start RPS must be less than end RPS")
	case c.RampUpStrategy == "exponential" && start == 0:
		return py.ValueErrorf("For exponential ramp-up, the start RPS cannot be 0.")
	}
	return nil
}

// buildURLs is Python's URL building: plain string concatenation, no
// slash normalisation; credentials in --base-url become URLAuthorization.
func (c *draft) buildURLs() error {
	if err := c.buildFrontEndURLs(); err != nil {
		return err
	}
	if !c.Given("base-url") && len(c.FrontEndURLs) > 0 {
		// Python's --base-url is absent: the first front end stands in.
		c.BaseURL = strings.TrimSuffix(c.FrontEndURLs[0], c.Endpoint)
		c.APIURL = c.FrontEndURLs[0]
		return nil
	}
	if c.Given("base-url") {
		base, auth, err := splitURLCredentials("--base-url", c.Options.BaseURL)
		if err != nil {
			return &py.UsageError{Msg: err.Error()}
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

// applyBackendRow applies what --backend's row says beyond Python: the
// --endpoint it defaults to when the option is not given, and the
// environment variables its API key is read from (Python's
// $OPENAI_API_KEY when the row names none).
func (c *draft) applyBackendRow(getenv func(string) string) {
	vars := []string{"OPENAI_API_KEY"}
	if c.backend != nil {
		if c.backend.Endpoint != "" && !c.Given("endpoint") {
			c.Endpoint = c.backend.Endpoint
		}
		if len(c.backend.APIKeyEnv) > 0 {
			vars = c.backend.APIKeyEnv
		}
	}
	for _, name := range vars {
		if key := getenv(name); key != "" {
			c.APIKey, c.apiKeyEnv = key, name
			return
		}
	}
}

// apiKeyHeader is the header and value the API key is sent as.
func (c *draft) apiKeyHeader() (key, value string) {
	if c.backend != nil && c.backend.APIKeyHeader != "" {
		return c.backend.APIKeyHeader, c.APIKey
	}
	return "Authorization", "Bearer " + c.APIKey
}

// checkAuthorization refuses what aiohttp refuses on every request: an
// explicit Authorization header ($OPENAI_API_KEY's Bearer token or a
// --header) beside credentials in the URL. Python's run would fail every
// request with this ValueError; stampede says so before it starts. It also
// checks the API key as a header value.
func (c *draft) checkAuthorization() error {
	key, value := c.apiKeyHeader()
	if c.APIKey != "" {
		if err := httpwire.ValidateHeader(key, value); err != nil {
			return &py.UsageError{Msg: "environment variable " + c.apiKeyEnv + ": " + err.Error()}
		}
	}
	if c.URLAuthorization == "" {
		return nil
	}
	source := ""
	switch {
	case c.APIKey != "" && strings.EqualFold(key, "Authorization"):
		source = "$" + c.apiKeyEnv + " sends one"
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
	return py.ValueErrorf("Cannot combine AUTHORIZATION header with AUTH argument or credentials encoded in URL "+
		"(--base-url has user:password@, and %s; keep one of the two)", source)
}

// joinHostPort is vLLM's join_host_port: an IPv6 literal is bracketed.
func joinHostPort(host string, port int) string {
	if addr, err := netip.ParseAddr(host); err == nil && addr.Is6() {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

func (c *draft) parseHeaders() error {
	for _, item := range c.Header {
		key, value, ok, err := headerPair("--header", item)
		if !ok {
			return py.ValueErrorf("Invalid header format. Please use KEY=VALUE format.")
		}
		if err != nil {
			return err
		}
		c.Headers = setHeader(c.Headers, key, value)
	}
	return nil
}

// headerPair is one KEY=VALUE item of flag: split at the first "=" and
// stripped, as main_async splits --header, and checked as HTTP requires
// (a usage error naming flag); ok is false when item has no "=".
func headerPair(flag, item string) (key, value string, ok bool, err error) {
	key, value, ok = strings.Cut(item, "=")
	if !ok {
		return "", "", false, nil
	}
	key, value = pyStrip(key), pyStrip(value)
	if err := httpwire.ValidateHeader(key, value); err != nil {
		return "", "", true, &py.UsageError{Msg: "argument " + flag + ": " + err.Error()}
	}
	return key, value, true, nil
}

// setHeader sets key to value in hs: a key already there keeps its
// position and takes the new value, a new key goes last.
func setHeader(hs []plan.Header, key, value string) []plan.Header {
	for i := range hs {
		if hs[i].Key == key {
			hs[i].Value = value
			return hs
		}
	}
	return append(hs, plan.Header{Key: key, Value: value})
}

// pyStrip is Python's str.strip() with no argument.
func pyStrip(s string) string { return strings.TrimFunc(s, py.IsSpace) }

// rewriteDataset is main_async's dataset checks and flag copying: the
// synthetic datasets refuse --dataset-path, --input-len/--output-len are
// copied into the per-dataset flags, random datasets and timed_trace force
// ignore_eos, and --self-timed is resolved.
func (c *draft) rewriteDataset() error {
	d := datasets.Lookup(c.DatasetName)
	if d == nil {
		return py.UsageErrorf("--dataset-name %s is not supported yet", c.DatasetName)
	}
	if d.Synthetic && c.Given("dataset-path") {
		return py.ValueErrorf("Cannot use '%s' dataset with --dataset-path. "+
			"Please specify the appropriate --dataset-name (e.g., "+
			"'sharegpt', 'custom', 'hf') for your dataset file: %s", c.DatasetName, c.DatasetPath)
	}
	c.Flags.CopyLengths(c.InputLen, c.OutputLen)
	if d.ExactOutputLen && c.backend.OpenAICompatible {
		c.IgnoreEOS = true
	}
	selfTimedGiven := c.SelfTimedOn || c.SelfTimedOff
	if d.SelfTimed {
		if !c.backend.Completions {
			return py.ValueErrorf("%s dataset passes pre-tokenized prompts (list[int])"+
				" and requires a completions backend ('vllm' or 'openai').", d.Name)
		}
		c.IgnoreEOS = true
		c.SelfTimed = !c.SelfTimedOff
		return nil
	}
	if selfTimedGiven {
		return py.ValueErrorf("--self-timed/--no-self-timed is only supported with --dataset-name=timed_trace")
	}
	c.SelfTimed = false
	return nil
}

// buildRequestExtras collects the sampling parameters and merges
// --extra-body over them.
func (c *draft) buildRequestExtras() error {
	c.TaskType = plan.Generation
	if c.backend.Pooling {
		c.TaskType = plan.Pooling
	}
	if c.TaskType == plan.Generation {
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
			return py.ValueErrorf("Sampling parameters are only supported by openai-compatible backends.")
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
		return py.NewError("TypeError", fmt.Sprintf("'%s' object is not a mapping", body.Kind.TypeName(body.Raw)))
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
func parseGoodput(pairs []string) ([]plan.GoodputSLO, error) {
	var slos []plan.GoodputSLO
	for _, pair := range pairs {
		parts := strings.Split(pair, ":")
		var v float64
		var err error
		if len(parts) == 2 {
			v, err = py.ParseFloat(parts[1])
		}
		if len(parts) != 2 || err != nil {
			return nil, py.NewError("ArgumentTypeError", "Invalid format found for service level objectives. "+
				`Specify service level objectives for goodput as "KEY:VALUE" `+
				"pairs, where the key is a metric name, and the value is a "+
				"number in milliseconds.")
		}
		replaced := false
		for i := range slos {
			if slos[i].Metric == parts[0] {
				slos[i].ValueMs = v
				replaced = true
			}
		}
		if !replaced {
			slos = append(slos, plan.GoodputSLO{Metric: parts[0], ValueMs: v})
		}
	}
	for _, slo := range slos {
		if !contains(goodputMetrics, slo.Metric) {
			return nil, py.ValueErrorf("Invalid metric name found, %s: %s. "+
				"The service level objective name should be one of ['ttft', 'tpot', 'e2el']. ",
				slo.Metric, py.FloatRepr(slo.ValueMs))
		}
		if slo.ValueMs < 0 {
			return nil, py.ValueErrorf("Invalid value found, %s: %s. "+
				"The service level objective value should be non-negative.",
				slo.Metric, py.FloatRepr(slo.ValueMs))
		}
	}
	return slos, nil
}

// validatePerTokenITL refuses --per-token-itl where no token streams: the
// pooling backends answer once.
func (c *draft) validatePerTokenITL() error {
	if c.PerTokenITL && c.TaskType == plan.Pooling {
		return &py.UsageError{Msg: fmt.Sprintf("argument --per-token-itl: backend %s returns one response, not a token stream; "+
			"use it with a completions or chat backend", c.Backend)}
	}
	return nil
}

// buildFrontEndURLs checks --server-urls and appends --endpoint to each:
// absolute http:// or https:// URLs with a host and no credentials, of one
// scheme (the TLS settings are one server's for now), without repeats.
func (c *draft) buildFrontEndURLs() error {
	if len(c.ServerURLs) == 0 {
		return nil
	}
	bad := func(format string, a ...any) error {
		return &py.UsageError{Msg: "argument --server-urls: " + fmt.Sprintf(format, a...)}
	}
	scheme := ""
	seen := map[string]bool{}
	for _, raw := range c.ServerURLs {
		u, err := url.Parse(raw)
		switch {
		case err != nil || u.Host == "" || u.Hostname() == "":
			return bad("invalid URL %s: want a base URL such as http://10.0.0.5:8000", py.StrRepr(raw))
		case u.Scheme != "http" && u.Scheme != "https":
			return bad("URL %s: scheme %q is not supported (use http:// or https://)", py.StrRepr(raw), u.Scheme)
		case u.User != nil:
			return bad("URL %s: credentials in a front end's URL are not supported", py.StrRepr(raw))
		case scheme != "" && u.Scheme != scheme:
			return bad("URL %s is %s:// but the first is %s://: the front ends must all be http:// or all https://", py.StrRepr(raw), u.Scheme, scheme)
		case seen[raw]:
			return bad("URL %s is given twice", py.StrRepr(raw))
		}
		scheme = u.Scheme
		seen[raw] = true
		c.FrontEndURLs = append(c.FrontEndURLs, raw+c.Endpoint)
	}
	return nil
}
