package bench

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/progress"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/datasets/chattemplate"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// Run is one `vllm bench serve` run, in Python's order (spec §c): model
// discovery, tokenizer, dataset, the ready check (the test request is sent
// only with --ready-check-timeout-sec > 0, as in Python), warm-ups,
// profiler start, banner, /metrics before, the main run through the
// engine, /metrics after, the result block, profiler stop, and the result
// file. Lines Python prints go to stdout; the progress bar, log lines,
// warnings and stampede's own health line go to stderr. An exception
// Python raises during the run comes back as a *ValidationError of the
// same type, at the same point of the output.
//
// Cancelling ctx (Ctrl-C) during the main run stops sending; what was
// measured is still printed and saved, and Run returns nil. Cancelling it
// before the main run returns ctx's error.
func Run(ctx context.Context, cfg *cli.Config, stdout, stderr io.Writer) error {
	_, err := RunOnce(ctx, cfg, stdout, stderr)
	return err
}

// RunOnce is Run returning what the run measured: the one run behind
// serve, each repeat of --num-runs, each sweep point and each SLO probe.
// The outcome is nil when the run ended before its main part; it is set
// alongside an error raised after the measurement (a failed save).
func RunOnce(ctx context.Context, cfg *cli.Config, stdout, stderr io.Writer) (*outcome.Outcome, error) {
	r, err := newRun(cfg, stdout, stderr)
	if err != nil {
		return nil, err
	}
	if err := r.discoverModel(ctx); err != nil {
		return nil, err
	}
	if err := r.loadTokenizer(ctx); err != nil {
		return nil, err
	}
	if err := r.sampleDataset(ctx); err != nil {
		return nil, err
	}
	if err := r.encodeRequests(); err != nil {
		return nil, err
	}
	r.releaseLoadMemory()
	if err := r.initialTest(ctx); err != nil {
		return nil, err
	}
	if err := r.warmUp(ctx); err != nil {
		return nil, err
	}
	if cfg.Clustered() {
		err = r.clusterBenchmark(ctx)
	} else {
		err = r.benchmark(ctx)
	}
	return r.measured, err
}

// releaseLoadMemory gives back what loading the tokenizer and building the
// requests left behind before the streams start, so that the run's peak
// RSS is its own: the tokenizer's mapped tables and the freed heap.
func (r *run) releaseLoadMemory() {
	if t, ok := r.tok.(interface{ Trim() }); ok {
		t.Trim()
	}
	debug.FreeOSMemory()
}

// run carries one Run's state between its phases.
type run struct {
	cfg            *cli.Config
	stdout, stderr io.Writer

	target  target
	control *http.Client // /v1/models, /metrics, profiling, /tokenize

	modelID, modelName string
	tok                datasets.Tokenizer
	// chatTemplate renders a prompt as the tokenizer's chat template does;
	// nil when the tokenizer has none.
	chatTemplate datasets.ChatTemplate
	tokenizerID  string
	globals      datasets.PythonGlobals

	// chatRender renders whole conversations (MLPerf, BFCL) with the
	// chat template; nil when the tokenizer has none.
	chatRender func(messages, tools []byte) (string, error)

	requests []datasets.Request
	wire     []engine.Request
	testWire []byte // request #0 without an id, for the test run and warm-ups
	// testUsage is where the test request's pooling answer has its usage.
	testUsage poolingUsage

	// outcome is what the main run measured, once computed.
	measured *outcome.Outcome

	// endpointErr is the URL-suffix check's verdict on --endpoint for
	// --backend. Python makes that check inside each request function,
	// outside its error handling, so a mismatch ends the run at the first
	// request sent (ready check, warm-up or main run), after the lines
	// printed up to there; stampede reports it at the same point.
	endpointErr error
	// skipAlign leaves out the server-tokenizer alignment of sampled
	// prompts (`stampede dataset` without --base-url).
	skipAlign bool

	// sidecar is the main run's extras, saved beside its result.
	sidecar *report.Sidecar

	// serverMetrics is what --server-metrics scraped; nil without it.
	serverMetrics *report.ServerMetrics
}

// target is where benchmark requests go, split for the engine.
type target struct {
	network, address string // "tcp", "host:port"
	hostHeader       string
	path             string // request target of --endpoint
	tls              *tls.Config
}

func newRun(cfg *cli.Config, stdout, stderr io.Writer) (*run, error) {
	t, err := parseTarget(cfg.APIURL, cfg.Insecure)
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if t.tls != nil {
		transport.TLSClientConfig = t.tls
	}
	var rt http.RoundTripper = transport
	if cfg.URLAuthorization != "" {
		rt = basicAuthTransport{base: transport, authorization: cfg.URLAuthorization}
	}
	return &run{
		cfg: cfg, stdout: stdout, stderr: stderr,
		target:      t,
		control:     &http.Client{Transport: rt, Timeout: 5 * time.Minute},
		endpointErr: CheckEndpoint(cfg.Backend, cfg.APIURL),
	}, nil
}

// parseTarget splits an http:// or https:// URL into what the engine dials
// and what the request line and Host header carry.
func parseTarget(apiURL string, insecure bool) (target, error) {
	u, err := url.Parse(apiURL)
	if err != nil {
		return target{}, &cli.ValidationError{Type: "ValueError", Msg: fmt.Sprintf("invalid URL %q: %v", apiURL, err)}
	}
	var t target
	port := u.Port()
	switch u.Scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
		t.tls = &tls.Config{ServerName: u.Hostname(), InsecureSkipVerify: insecure}
	default:
		return target{}, &cli.ValidationError{Type: "ValueError",
			Msg: fmt.Sprintf("URL %q: scheme %q is not supported (use http:// or https://)", apiURL, u.Scheme)}
	}
	if u.Hostname() == "" {
		return target{}, &cli.ValidationError{Type: "ValueError", Msg: fmt.Sprintf("URL %q has no host", apiURL)}
	}
	t.network = "tcp"
	t.address = net.JoinHostPort(u.Hostname(), port)
	t.hostHeader = u.Host
	t.path = u.RequestURI()
	return t, nil
}

// discoverModel is spec §a step 9.
func (r *run) discoverModel(ctx context.Context) error {
	if r.cfg.Model != "" {
		r.modelID, r.modelName = r.cfg.Model, r.cfg.ServedModelName
		return nil
	}
	fmt.Fprintln(r.stdout, "Model not specified, fetching first model from server...")
	modelsURL := r.cfg.BaseURL + "/v1/models"
	name, root, err := fetchFirstModel(ctx, r.control, modelsURL, r.cfg.Headers)
	if err != nil {
		var empty errNoModels
		if errors.As(err, &empty) {
			return &cli.ValidationError{Type: "ValueError", Msg: fmt.Sprintf("No models found on the server at %s. "+
				"Make sure the server is running and has models loaded.", r.cfg.BaseURL)}
		}
		return &cli.ValidationError{Type: "RuntimeError", Msg: fmt.Sprintf("Failed to fetch models from server at %s. Check that:\n"+
			"1. The server is running\n2. The server URL is correct\nError: %v", modelsURL, err)}
	}
	r.modelName, r.modelID = name, root
	fmt.Fprintf(r.stdout, "First model name: %s, first model id: %s\n", pyout.TerminalText(name), pyout.TerminalText(root))
	return nil
}

// loadTokenizer is spec §a step 10: the pure-Go tokenizer from a local
// path, the Hugging Face cache or the hub; when none can be had, the
// server's /tokenize and /detokenize stand in, with a warning.
func (r *run) loadTokenizer(ctx context.Context) error {
	if r.cfg.SkipTokenizerInit {
		return nil
	}
	name := r.cfg.Tokenizer
	if name == "" {
		name = r.modelID
	}
	r.tokenizerID = name
	tok, path, err := loadTokenizerMode(r.cfg.TokenizerMode, name)
	var invalid *cli.ValidationError
	var usage *cli.UsageError
	if errors.As(err, &invalid) || errors.As(err, &usage) {
		return err
	}
	if err == nil {
		r.tok = tok
		// The chat template lives beside the tokenizer (tokenizer_config.json
		// or chat_template.jinja); a tokenizer without one leaves the
		// datasets that need it to say so.
		if tmpl, terr := chattemplate.Load(path); terr == nil {
			r.chatTemplate = tmpl.UserTurn
			r.chatRender = func(messages, tools []byte) (string, error) {
				return tmpl.RenderJSON(messages, tools, true, nil)
			}
		}
		return nil
	}
	fmt.Fprintf(r.stderr, "WARNING: tokenizer %s could not be loaded (%v); counting tokens with the server's /tokenize and /detokenize instead.\n", name, err)
	st := datasets.NewServerTokenizer(r.cfg.BaseURL, r.modelID, r.control)
	if perr := st.Probe(ctx); perr != nil {
		return &cli.ValidationError{Type: "OSError", Msg: fmt.Sprintf("tokenizer %s: %v; the server's /tokenize fallback failed too: %v", name, err, perr)}
	}
	r.tok = st
	return nil
}

// sampleDataset is spec §a steps 11–15 and §g.
func (r *run) sampleDataset(ctx context.Context) error {
	c := r.cfg
	var err error
	if r.globals, err = datasets.NewPythonGlobals(int64(c.Seed)); err != nil {
		return &cli.ValidationError{Type: "ValueError", Msg: err.Error()}
	}
	logf := func(format string, args ...any) { fmt.Fprintf(r.stderr, format+"\n", args...) }
	var tok datasets.Tokenizer
	if r.tok != nil {
		tok = r.tok
	}
	var kwargs map[string]any
	if len(c.ChatTemplateKwargs) > 0 {
		if err := json.Unmarshal([]byte(c.ChatTemplateKwargs), &kwargs); err != nil {
			return &cli.UsageError{Msg: "argument --chat-template-kwargs: " +
				datasets.JSONProblem([]byte(c.ChatTemplateKwargs), err, `a JSON object, such as {"enable_thinking": false}`)}
		}
	}
	d := datasets.Lookup(c.DatasetName)
	if d == nil || !d.Built() {
		return &cli.UsageError{Msg: fmt.Sprintf("--dataset-name %s is not supported yet", c.DatasetName)}
	}
	r.requests, err = d.Sample(&datasets.Env{
		Tokenizer: tok, ChatTemplate: r.chatTemplate, ChatTemplateKwargs: kwargs,
		ChatRender: r.chatRender, TokenizerName: r.tokenizerID, NoStream: c.NoStream,
		Globals: r.globals, Seed: int64(c.Seed), NumPrompts: c.NumPrompts,
		RequestIDPrefix: c.RequestIDPrefix, Logf: logf,
		Backend: c.Backend, ChatBackend: backendOf(c.Backend).api.kind == chatKind,
		Path: c.DatasetPath, DisableShuffle: c.DisableShuffle, NoOversample: c.NoOversample,
		SkipChatTemplate: c.SkipChatTemplate, EnableMultimodalChat: c.EnableMultimodalChat,
		Flags: &c.Flags.Flags,
	})
	if err != nil {
		return datasetError(c.DatasetName, err, c.DatasetPath)
	}
	if len(r.requests) == 0 {
		return &cli.ValidationError{Type: "ValueError", Msg: fmt.Sprintf("dataset %s produced no requests", c.DatasetName)}
	}
	if d.AlignWithServer && !r.skipAlign {
		datasets.AlignWithServer(ctx, r.control, c.BaseURL, r.modelID, r.requests, r.stdout)
	}
	if c.WarnDefaultTemperature {
		fmt.Fprintln(r.stdout, cli.TemperatureWarning)
	}
	return nil
}

// datasetError keeps a dataset's Python exception type for the exit path;
// a file that cannot be opened is named with the flag it came from.
func datasetError(name string, err error, path string) error {
	var pe *datasets.PythonError
	if errors.As(err, &pe) {
		return &cli.ValidationError{Type: pe.Type, Msg: pe.Msg}
	}
	var fe *fs.PathError
	if errors.As(err, &fe) {
		typ, where := "OSError", fe.Path
		if errors.Is(fe.Err, fs.ErrNotExist) {
			typ = "FileNotFoundError"
		}
		if fe.Path == path {
			where = "--dataset-path " + fe.Path
		}
		return &cli.ValidationError{Type: typ, Msg: fmt.Sprintf("dataset %s: %s: %v", name, where, fe.Err)}
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "dataset ") {
		msg = fmt.Sprintf("dataset %s: %s", name, msg)
	}
	return &cli.ValidationError{Type: "ValueError", Msg: msg}
}

// encodeRequests builds every request's HTTP bytes before the clock
// starts (DESIGN principle 1), and request #0 without an id for the test
// run and warm-ups.
func (r *run) encodeRequests() error {
	c := r.cfg
	adapters, err := LoRAAdapters(c.LoraModules, c.LoraAssignment, len(r.requests), r.globals.Random)
	if err != nil {
		return &cli.UsageError{Msg: err.Error()}
	}
	params := BodyParams{
		Model: r.modelID, ModelName: r.modelName, Logprobs: c.Logprobs,
		IgnoreEOS: c.IgnoreEOS, ExtraBody: c.RequestExtraBody,
		ContinuousUsage: c.PerTokenITL,
	}
	r.wire = make([]engine.Request, len(r.requests))
	for i := range r.requests {
		req := &r.requests[i]
		p := params
		if adapters != nil {
			p.ModelName = adapters[i]
		}
		wire, err := r.encode(req, p)
		if err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		usage, err := PoolingUsage(c.Backend, req, p)
		if err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		r.wire[i] = engine.Request{
			Index: i, Wire: wire, PromptLen: req.PromptLen,
			NumInputSequences: NumInputSequences(c.Backend, req),
			PoolingUsage:      usage,
			OffsetNs:          int64(req.TimestampSec * 1e9),
		}
	}
	test := r.requests[0]
	test.RequestID = ""
	if r.testWire, err = r.encode(&test, params); err != nil {
		return err
	}
	r.testUsage, err = PoolingUsage(c.Backend, &test, params)
	return err
}

func (r *run) encode(req *datasets.Request, p BodyParams) ([]byte, error) {
	// aiohttp's json= default; a backend's own Content-Type or a --header
	// replaces it.
	contentType := "application/json"
	var body []byte
	var err error
	if backendOf(r.cfg.Backend).multipart {
		contentType, body, err = BuildAudioRequest(req, req.Audio, p, NewAudioBoundary())
	} else {
		body, err = BuildRequestBody(r.cfg.Backend, req, p)
	}
	if err != nil {
		return nil, err
	}
	hs, err := RequestHeaders(r.cfg.Backend, req, r.cfg.APIKey, r.cfg.Headers)
	if err != nil {
		return nil, err
	}
	return r.frame(contentType, body, hs)
}

// frame puts body in an HTTP request to the target with headers hs.
func (r *run) frame(contentType string, body []byte, hs []cli.Header) ([]byte, error) {
	hreq := httpwire.Request{
		Method: "POST", Host: r.target.hostHeader, Path: r.target.path,
		ContentType: contentType,
		// aiohttp's Basic authentication from --base-url's credentials;
		// cli.Parse refuses them beside an Authorization header.
		Authorization: r.cfg.URLAuthorization,
		Body:          body,
	}
	for _, h := range hs {
		hreq.Headers = append(hreq.Headers, httpwire.Header{Key: h.Key, Value: h.Value})
	}
	if err := hreq.Validate(); err != nil {
		return nil, &cli.ValidationError{Type: "ValueError", Msg: err.Error()}
	}
	return httpwire.AppendRequest(nil, &hreq), nil
}

// engineConfig is the run-wide engine setting for requests.
func (r *run) engineConfig(reqs []engine.Request) engine.Config {
	c := r.cfg
	ec := engine.Config{
		Network: r.target.network, Address: r.target.address, TLS: r.target.tls,
		Kind:      backendOf(c.Backend).stream,
		Streaming: c.TaskType == cli.Generation,
		Requests:  reqs,
		// Test and warm-up requests all go at once.
		RequestRate: math.Inf(1), Burstiness: 1,
		Seed:             int64(c.Seed),
		Shards:           c.Shards,
		CPUs:             []int(c.CPUs),
		ConnectTimeout:   seconds(c.ConnectTimeoutSec),
		RequestTimeout:   seconds(c.RequestTimeoutSec),
		CancelGrace:      cancelGrace(c.CancelGraceSec),
		KernelTimestamps: !c.NoKernelTimestamps,
		MaxResponseBytes: int64(c.MaxResponseBytes),
		MaxBufferedBytes: int64(c.MaxBufferedBytes),
	}
	if c.MaxConcurrency != nil {
		ec.MaxConcurrency = *c.MaxConcurrency
	}
	return ec
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// cancelGrace is --cancel-grace-sec for the engine, which reads a zero
// grace as "use the default": 0 (or less) asks for in-flight requests to
// be cancelled at once, so it becomes the shortest grace there is.
func cancelGrace(sec float64) time.Duration {
	if sec <= 0 {
		return time.Nanosecond
	}
	return seconds(sec)
}

// sendCopies sends n copies of the test request at once (under the
// concurrency cap) and returns the first failure's text, "" if all
// succeeded.
func (r *run) sendCopies(ctx context.Context, n int, timeout time.Duration) (string, error) {
	if r.endpointErr != nil {
		return "", r.endpointErr
	}
	reqs := make([]engine.Request, n)
	for i := range reqs {
		reqs[i] = engine.Request{Index: i, Wire: r.testWire, PromptLen: r.requests[0].PromptLen, PoolingUsage: r.testUsage}
	}
	ec := r.engineConfig(reqs)
	if n == 1 {
		ec.Shards = 1
	}
	if timeout > 0 {
		ec.RequestTimeout = timeout
	}
	runner, err := engine.Start(ctx, ec)
	if err != nil {
		return "", err
	}
	res, err := waitRun(ctx, runner)
	if err != nil {
		return "", err
	}
	for _, rr := range res.Data.Results {
		if !rr.Success {
			return rr.Error, nil
		}
	}
	return "", nil
}

// readyCheckOverrun is how long a ready-check attempt may outlive the
// --ready-check-timeout-sec deadline before it is cut off; its outcome is
// discarded either way.
const readyCheckOverrun = 50 * time.Millisecond

// initialTest is spec §c "Ready check": with --ready-check-timeout-sec T >
// 0 the test request is retried until it succeeds or T runs out.
func (r *run) initialTest(ctx context.Context) error {
	fmt.Fprintln(r.stdout, "Starting initial single prompt test run...")
	timeoutSec := r.cfg.ReadyCheckTimeoutSec
	if timeoutSec <= 0 {
		fmt.Fprintln(r.stdout, "Skipping endpoint ready check.")
		return nil
	}
	fmt.Fprintf(r.stdout, "Waiting for endpoint to become up in %d seconds\n", timeoutSec)
	deadline := time.Now().Add(time.Duration(timeoutSec) * time.Second)
	lastErr := ""
	for {
		remaining := time.Until(deadline)
		if remaining <= 0 {
			break
		}
		// The attempt may run a little past the deadline, so that one
		// still running at the deadline always ends after it and is
		// recognised below, whatever the timer granularity.
		failure, err := r.sendCopies(ctx, 1, remaining+readyCheckOverrun)
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !time.Now().Before(deadline) {
			// The attempt was still running when the time ran out: Python
			// stops waiting for it without logging, and the error stays
			// the previous attempt's or the time-out message.
			break
		}
		if failure == "" {
			fmt.Fprintln(r.stdout, "Initial test run completed.")
			return nil
		}
		lastErr = failure
		fmt.Fprintf(r.stderr, "Endpoint is not ready. Error='%s'\n", pyout.TerminalText(lastErrorLine(failure)))
		wait := min(5*time.Second, time.Until(deadline))
		if wait <= 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	if lastErr == "" {
		lastErr = fmt.Sprintf("Endpoint readiness timed out after %ds.", timeoutSec)
	}
	return &cli.ValidationError{Type: "ValueError", Msg: "Initial test run failed - Please make sure benchmark " +
		"arguments are correctly specified. Error: " + lastErr}
}

// lastErrorLine is the line of a failure's text the ready check logs,
// Python's str(error).rstrip().rsplit("\n", 1)[-1]: for a traceback, the
// exception itself.
func lastErrorLine(failure string) string {
	failure = strings.TrimRightFunc(failure, py.IsSpace)
	return failure[strings.LastIndexByte(failure, '\n')+1:]
}

// warmUp is spec §c "Warm-up": the results are discarded.
func (r *run) warmUp(ctx context.Context) error {
	n := r.cfg.NumWarmups
	if n <= 0 {
		return nil
	}
	fmt.Fprintf(r.stdout, "Warming up with %d requests...\n", n)
	if _, err := r.sendCopies(ctx, n, 0); err != nil {
		return err
	}
	// Interrupted warm-ups end the run: there is nothing measured to
	// report yet.
	if err := ctx.Err(); err != nil {
		return err
	}
	fmt.Fprintln(r.stdout, "Warmup run completed.")
	return nil
}

// benchmark is the measured part: Python's benchmark() coroutine.
func (r *run) benchmark(ctx context.Context) error {
	c := r.cfg
	fmt.Fprintln(r.stdout, "Starting main benchmark run...")
	workers := c.WorkerProcesses(len(r.wire))

	if c.Profile {
		fmt.Fprintln(r.stdout, "Starting profiler...")
		if postProfile(ctx, r.control, c.BaseURL+"/start_profile", c.Headers) {
			fmt.Fprintln(r.stdout, "Profiler started")
		}
	}
	params := &pyout.ReportParams{RunSettings: r.runSettings(workers)}
	if err := pyout.WriteBanner(r.stdout, &params.RunSettings); err != nil {
		return err
	}
	before, beforeOK := scrapeServerMetrics(ctx, r.control, c.BaseURL+"/metrics", c.Headers)

	ec := r.engineConfig(r.wire)
	ec.RequestRate, ec.Burstiness = c.RequestRate, c.Burstiness
	ec.Gaps = r.globals.NumPy
	ec.SelfTimed = c.SelfTimed
	if c.RampUpStrategy != "" {
		ec.RampUp = &engine.RampUp{Strategy: c.RampUpStrategy, StartRPS: *c.RampUpStartRPS, EndRPS: *c.RampUpEndRPS}
	}
	if c.MaxConnectionsPerWorker != nil {
		ec.MaxConnectionsPerWorker = *c.MaxConnectionsPerWorker
	}
	ec.KeepDetail = c.SaveDetailed || c.TrimsSteadyState() || c.PlotTimeline || c.Report != ""
	// Python re-tokenizes the text of a request whose usage gave no output
	// token count; kept only for those, it is counted after the run, off
	// the shards' threads (metrics.Compute's CountTokens).
	ec.KeepText = c.SaveDetailed
	ec.KeepUncountedText = r.tok != nil
	ec.WarmConnections = c.WarmConnections
	ec.RunningUsage = c.PerTokenITL

	probe, err := r.newProbe()
	if err != nil {
		return err
	}
	ec.Probe = probe
	if r.endpointErr != nil {
		return r.endpointErr
	}
	if err := checkArrivals(c); err != nil {
		return err
	}
	scraper := r.startServerMetrics(ctx)
	runner, err := engine.Start(ctx, ec)
	if err != nil {
		scraper.abort()
		return err
	}
	bar := progress.New(r.stderr, len(r.wire), c.DisableTqdm)
	stopBar := bar.Poll(func() int { done, failed, _ := runner.Progress(); return done + failed }, 100*time.Millisecond)
	res, err := waitRun(ctx, runner)
	stopBar()
	bar.Close()
	if err != nil {
		return err
	}
	params.Probe = metrics.ComputeProbes(res.Probes)
	if res.Cancelled {
		reportInterrupt(r.stderr, res)
	}
	afterCtx, cancelAfter := afterRunContext(ctx)
	defer cancelAfter()
	r.serverMetrics = scraper.finish(afterCtx, res)

	if after, ok := scrapeServerMetrics(afterCtx, r.control, c.BaseURL+"/metrics", c.Headers); ok && beforeOK {
		if sd := metrics.SpecDecodeDelta(before.spec, after.spec); sd != nil {
			params.SpecDecode = sd
		}
		if dd := metrics.DiffusionDelta(before.diffusion, after.diffusion, metrics.Seconds(res.Data.DurationNs)); dd != nil {
			params.Diffusion = dd
		}
	}
	for _, ev := range res.RampUpEvents {
		params.RPSChangeEvents = append(params.RPSChangeEvents, pyout.RPSChange{RPS: ev.RPS, Timestamp: pyISOFormat(ev.At)})
	}

	opts := r.computeOptions(res.Data.Results)
	summary, err := metrics.Compute(&res.Data, opts)
	if err != nil {
		return err
	}
	r.measured = &outcome.Outcome{Summary: summary, Data: &res.Data, Params: params, Options: opts, Cancelled: res.Cancelled}
	if err := pyout.WriteWarnings(r.stderr, summary); err != nil {
		return err
	}
	if err := pyout.WriteResult(r.stdout, summary, params); err != nil {
		return err
	}
	if err := r.writeSteadyState(summary, &res.Data, params); err != nil {
		return err
	}
	breakdown := metrics.ComputeBreakdown(res.Data.Results, c.SelectedPercentiles)
	if c.Breakdown {
		if err := report.WriteBreakdown(r.stdout, breakdown); err != nil {
			return err
		}
	}
	r.sidecar = report.NewSidecar(res, breakdown, c.SaveDetailed)
	if err := r.reasoning(res.Data.Results); err != nil {
		return err
	}
	if err := r.perTokenReport(res.Data.Results, summary); err != nil {
		return err
	}
	r.steadyState(r.measured)
	r.sidecar.SteadyState = r.measured.SteadyState
	if err := r.writeSteadyStateBlock(r.measured); err != nil {
		return err
	}
	r.compareServerMetrics(summary)
	r.sidecar.ServerMetrics = r.serverMetrics
	report.WriteServerVsClient(r.stdout, r.serverMetrics)
	report.WriteHealth(r.stderr, res)
	report.WriteServerMessages(r.stderr, &res.Data.ServerMessages)

	if c.Profile {
		fmt.Fprintln(r.stdout, "Stopping profiler...")
		if postProfile(afterCtx, r.control, c.BaseURL+"/stop_profile", c.Headers) {
			fmt.Fprintln(r.stdout, "Profiler stopped")
		}
	}
	if err := r.save(summary, &res.Data, params); err != nil {
		return err
	}
	if err := r.savePartial(r.measured); err != nil {
		return err
	}
	return r.writeReport(summary, res, params)
}

// checkArrivals makes the assertions Python's get_request makes when the
// main run starts, after the banner: a positive burstiness, and unless the
// trace times itself, a positive rate for every request. Rates never fall
// during a ramp-up (its start is at most its end), so the first request's
// rate is the one to check. The engine reads zero values as its defaults,
// so they must not reach it.
func checkArrivals(c *cli.Config) error {
	if !(c.Burstiness > 0) {
		return &cli.ValidationError{Type: "AssertionError",
			Msg: fmt.Sprintf("A positive burstiness factor is expected, but given %s.", py.FloatRepr(c.Burstiness))}
	}
	if c.SelfTimed {
		return nil
	}
	first := c.RequestRate
	if c.RampUpStrategy != "" {
		first = float64(*c.RampUpStartRPS)
	}
	if !(first > 0) {
		return &cli.ValidationError{Type: "AssertionError",
			Msg: fmt.Sprintf("Obtained non-positive request rate %s.", py.FloatRepr(first))}
	}
	return nil
}

// reportInterrupt drops the requests an interrupt kept from being sent
// and says on stderr what the results cover.
func reportInterrupt(w io.Writer, res *engine.Result) {
	unsent := dropUnsent(&res.Data)
	if !res.Aborted {
		fmt.Fprintf(w, "Interrupted: stopped sending; the results below cover the %d requests sent (%d never sent are left out).\n",
			len(res.Data.Results), unsent)
		return
	}
	cut := 0
	for _, rr := range res.Data.Results {
		if !rr.Success && rr.Error == "cancelled" {
			cut++
		}
	}
	fmt.Fprintf(w, "Interrupted again: stopped at once; the results below cover the %d requests sent, "+
		"of which %d still in flight were failed \"cancelled\" (%d never sent are left out).\n",
		len(res.Data.Results), cut, unsent)
}

// dropUnsent removes the requests an interrupt kept from being sent: they
// measured nothing, and counting them as failures would bury the requests
// that did fail. It returns how many it removed.
func dropUnsent(d *metrics.RunData) int {
	kept := d.Results[:0]
	for _, rr := range d.Results {
		if rr.Sent() {
			kept = append(kept, rr)
		}
	}
	n := len(d.Results) - len(kept)
	d.Results = kept
	return n
}

// computeOptions are the metric settings for results (in request order,
// each carrying its dataset index).
func (r *run) computeOptions(results []metrics.RequestResult) metrics.ComputeOptions {
	c := r.cfg
	o := metrics.ComputeOptions{
		Pooling:     c.TaskType == cli.Pooling,
		Percentiles: c.SelectedPercentiles,
		ClientQueue: c.MaxConcurrency != nil,
	}
	o.QueueInclusiveE2EL = o.ClientQueue && !math.IsInf(c.RequestRate, 1)
	if backendOf(c.Backend).multipart {
		o.InputAudioSeconds = make([]float64, len(results))
		for i, rr := range results {
			if audio := r.requests[rr.Index].Audio; audio != nil {
				o.InputAudioSeconds[i] = audio.DurationSec
			}
		}
	}
	if len(c.GoodputSLOs) > 0 {
		o.Goodput = make(map[string]float64, len(c.GoodputSLOs))
		for _, s := range c.GoodputSLOs {
			o.Goodput[s.Metric] = s.ValueMs
		}
	}
	if tok := r.tok; tok != nil {
		o.CountTokens = func(text string) int { return len(tok.Encode(nil, text, false)) }
	}
	return o
}

// runSettings are the run's settings as the outputs read them; workers is
// the multi-process fork's worker count (0 hides its row).
func (r *run) runSettings(workers int) pyout.RunSettings {
	c := r.cfg
	p := pyout.RunSettings{
		Backend: c.Backend, ModelID: r.modelID, TokenizerID: r.tokenizerID,
		NumPrompts: c.NumPrompts, RequestRate: c.RequestRate, Burstiness: c.Burstiness,
		RampUpStrategy: c.RampUpStrategy, Metadata: c.Metadata,
		PercentileMetrics: c.SelectedPercentileMetrics, Goodput: len(c.GoodputSLOs) > 0,
		SelfTimed: c.SelfTimed, ProbeRequestRate: c.ProbeRequestRate, Workers: workers,
		SaveResult: c.SaveResult, SaveDetailed: c.SaveDetailed, AppendResult: c.AppendResult,
		PlotTimeline: c.PlotTimeline, ResultDir: c.ResultDir, ResultFilename: c.ResultFilename,
	}
	p.Label = c.Label
	if c.MaxConcurrency != nil {
		p.MaxConcurrency = *c.MaxConcurrency
	}
	if c.RampUpStrategy != "" {
		p.RampUpStartRPS, p.RampUpEndRPS = *c.RampUpStartRPS, *c.RampUpEndRPS
	}
	return p
}

// save writes the result JSON with --save-result or --append-result (and
// its PyTorch side file), the timeline with --plot-timeline and the
// dataset figure with --plot-dataset-stats.
func (r *run) save(s *metrics.Summary, d *metrics.RunData, p *pyout.ReportParams) error {
	if err := pyout.CheckMetadata(p.Metadata); err != nil {
		return err
	}
	if !p.SaveResult && !p.AppendResult && !p.PlotTimeline {
		return nil
	}
	res, err := pyout.BuildResult(s, d, p, time.Now())
	if err != nil {
		return err
	}
	name, err := pyout.ResultFilename(&p.RunSettings, res.Date)
	if err != nil {
		return err
	}
	if p.SaveResult || p.AppendResult {
		r.measured.ResultPath = name
		if err := pyout.SaveResult(name, res, p.AppendResult); err != nil {
			return fmt.Errorf("saving results to %s: %w", name, err)
		}
		if err := r.savePyTorch(name, res); err != nil {
			return err
		}
		if r.sidecar != nil {
			if err := report.SaveSidecar(report.SidecarPath(name), r.sidecar, p.AppendResult); err != nil {
				return err
			}
		}
	}
	r.plotTimeline(name, s, d)
	r.plotDatasetStats(name, s, d)
	return nil
}

// savePyTorch writes the side file of the result saved at resultPath when
// $SAVE_TO_PYTORCH_BENCHMARK_FORMAT is set.
func (r *run) savePyTorch(resultPath string, res *pyout.Result) error {
	if !r.cfg.SaveToPyTorchFormat {
		return nil
	}
	path := pyout.PyTorchPath(resultPath)
	if _, err := pyout.WritePyTorchBenchmark(path, r.cfg, res); err != nil {
		return fmt.Errorf("saving PyTorch benchmark records to %s: %w", path, err)
	}
	return nil
}
