package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cluster"
	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/internal/py"
)

// Run is one `vllm bench serve` run, in Python's order (spec §c): model
// discovery, tokenizer, dataset, the ready check (the test request is sent
// only with --ready-check-timeout-sec > 0, as in Python), warm-ups,
// --cold-prefix-cache's reset, profiler start, banner, /metrics before, the main run through the
// engine, /metrics after, the result block, profiler stop, and the result
// file. Lines Python prints go to stdout; the progress bar, log lines,
// warnings and stampede's own health line go to stderr. An exception
// Python raises during the run comes back as a *py.Error of the
// same type, at the same point of the output.
//
// Cancelling ctx (Ctrl-C) during the main run stops sending; what was
// measured is still printed and saved, and Run returns nil. Cancelling it
// before the main run returns ctx's error.
//
// With --fail-on-error, a run in which any benchmark request failed
// returns an *outcome.RequestsFailed once everything is printed and saved.
func Run(ctx context.Context, cfg *plan.Plan, stdout, stderr io.Writer) error {
	o, err := RunOnce(ctx, cfg, stdout, stderr)
	if cfg.ResultsToLog && o != nil {
		// After the block and the saves, failed or not: what was saved is
		// in the log even when a pod's volume goes with it.
		if berr := cluster.WriteBundle(stdout, stderr, o.Files); berr != nil && err == nil {
			err = berr
		}
	}
	if err == nil && cfg.FailOnError && o != nil && o.Summary.Failed > 0 {
		return &outcome.RequestsFailed{Failed: o.Summary.Failed, Requests: o.Data.Log.Len()}
	}
	return err
}

// RunOnce is Run returning what the run measured: the one run behind
// serve, each repeat of --num-runs, each sweep point and each SLO probe.
// The outcome is nil when the run ended before its main part; it is set
// alongside an error raised after the measurement (a failed save).
func RunOnce(ctx context.Context, cfg *plan.Plan, stdout, stderr io.Writer) (o *outcome.Outcome, err error) {
	r, err := newRun(cfg, stdout, stderr)
	if err != nil {
		return nil, cluster.Refuse(ctx, cfg, nil, err, stderr)
	}
	// A cluster's agent that fails before it registers tells agent 0 why.
	defer func() { err = cluster.Refuse(ctx, cfg, r.agent, err, stderr) }()
	model, err := r.server.DiscoverModel(ctx, stdout)
	if err != nil {
		return nil, err
	}
	if err := r.checkResultPath(model); err != nil {
		return nil, err
	}
	tok, err := r.loadTokenizer(ctx, model)
	if err != nil {
		return nil, err
	}
	ds, err := r.sampleDataset(ctx, model, tok, true)
	if err != nil {
		return nil, err
	}
	enc, err := r.encodeRequests(model, ds)
	if err != nil {
		return nil, err
	}
	releaseLoadMemory(tok)
	if err := r.readyCheck(ctx, enc); err != nil {
		return nil, err
	}
	if err := r.warmUp(ctx, enc); err != nil {
		return nil, err
	}
	if cfg.ColdPrefixCache {
		// After the warm-up, which would fill it again.
		if err := r.server.ResetPrefixCache(ctx, "--cold-prefix-cache"); err != nil {
			return nil, err
		}
	}
	if cfg.Clustered() {
		return r.clusterBenchmark(ctx, model, tok, ds, enc)
	}
	r.fingerprint(ctx, model, tok)
	return r.benchmark(ctx, model, tok, ds, enc)
}

// run is what every phase of one Run reads, set before the first: the
// settings, where the output goes, and the server. What a phase produces
// it returns to the next.
type run struct {
	cfg            *plan.Plan
	stdout, stderr io.Writer
	server         *endpoint.Server

	// endpointErr is the URL-suffix check's verdict on --endpoint for
	// --backend. Python makes that check inside each request function,
	// outside its error handling, so a mismatch ends the run at the first
	// request sent (ready check, warm-up or main run), after the lines
	// printed up to there; stampede reports it at the same point.
	endpointErr error
	// nameMax is the result directory's NAME_MAX, set by checkResultPath
	// before the clock starts; the save fits the result's name to it.
	nameMax int
	// fingerprintFacts and manifest are the fingerprint phase's, for the
	// sidecar.
	fingerprintFacts *report.Fingerprint
	manifest         *report.Manifest
	// agent is this process's part in a cluster run; nil on one host.
	agent *cluster.Agent
}

func newRun(cfg *plan.Plan, stdout, stderr io.Writer) (*run, error) {
	s, err := endpoint.New(cfg)
	if err != nil {
		return nil, err
	}
	return &run{cfg: cfg, stdout: stdout, stderr: stderr, server: s,
		endpointErr: backend.CheckEndpoint(cfg.Backend, cfg.APIURL)}, nil
}

// loadTokenizer is spec §a step 10 (endpoint.Server.LoadTokenizer); nil
// with --skip-tokenizer-init.
func (r *run) loadTokenizer(ctx context.Context, model endpoint.Model) (*endpoint.Tokenizer, error) {
	if r.cfg.SkipTokenizerInit {
		return nil, nil
	}
	return r.server.LoadTokenizer(ctx, model.ID, r.stderr)
}

// dataset is what sampling gave: the requests, and Python's process-wide
// generators as the sampling left them (LoRA's random choice and the
// arrival gaps draw from them next).
type dataset struct {
	requests []datasets.Request
	globals  datasets.PythonGlobals
}

// sampleDataset is spec §a steps 11–15 and §g. align runs the
// server-tokenizer alignment of the datasets that ask for it.
func (r *run) sampleDataset(ctx context.Context, model endpoint.Model, tok *endpoint.Tokenizer, align bool) (*dataset, error) {
	c := r.cfg
	globals, err := datasets.NewPythonGlobals(int64(c.Seed))
	if err != nil {
		return nil, &py.Error{Type: "ValueError", Msg: err.Error()}
	}
	logf := func(format string, args ...any) { fmt.Fprintf(r.stderr, format+"\n", args...) }
	var kwargs map[string]any
	if len(c.ChatTemplateKwargs) > 0 {
		if err := json.Unmarshal([]byte(c.ChatTemplateKwargs), &kwargs); err != nil {
			return nil, &py.UsageError{Msg: "argument --chat-template-kwargs: " +
				datasets.JSONProblem([]byte(c.ChatTemplateKwargs), err, `a JSON object, such as {"enable_thinking": false}`)}
		}
	}
	d := datasets.Lookup(c.DatasetName)
	if d == nil || !d.Built() {
		return nil, &py.UsageError{Msg: fmt.Sprintf("--dataset-name %s is not supported yet", c.DatasetName)}
	}
	env := &datasets.Env{
		ChatTemplateKwargs: kwargs, NoStream: c.NoStream,
		Globals: globals, Seed: int64(c.Seed), NumPrompts: c.NumPrompts,
		RequestIDPrefix: c.RequestIDPrefix, Logf: logf,
		Backend: backend.Of(c.Backend).Datasets(),
		Path:    c.DatasetPath, DisableShuffle: c.DisableShuffle, NoOversample: c.NoOversample,
		SkipChatTemplate: c.SkipChatTemplate, EnableMultimodalChat: c.EnableMultimodalChat,
		Flags: &c.Flags, HFTextColumn: c.HFTextColumn,
	}
	if c.SpeedBenchMaxInputLen != nil {
		env.SpeedBenchMaxInputLen = *c.SpeedBenchMaxInputLen
	}
	if tok != nil {
		env.Tokenizer, env.ChatTemplate, env.ChatRender, env.TokenizerName = tok.Tokenizer, tok.ChatTemplate, tok.ChatRender, tok.ID
	}
	requests, err := d.Sample(env)
	if err == nil && tok != nil {
		// A tokenizer cannot return errors through the Tokenizer
		// interface: the server's keeps the first failed call, a local
		// one the first split pattern that gave up.
		if failing, ok := tok.Tokenizer.(interface{ Err() error }); ok {
			err = failing.Err()
		}
	}
	if err != nil {
		return nil, datasets.RunError(c.DatasetName, err, c.DatasetPath)
	}
	if len(requests) == 0 {
		return nil, &py.Error{Type: "ValueError", Msg: fmt.Sprintf("dataset %s produced no requests", c.DatasetName)}
	}
	if d.AlignWithServer && align {
		if err := datasets.AlignWithServer(ctx, r.server.Control(), c.BaseURL, model.ID, requests, r.stdout); err != nil {
			return nil, &py.Error{Type: "RuntimeError", Msg: err.Error()}
		}
	}
	if c.PromptTokenIDs && tok != nil {
		datasets.PromptTokenIDs(requests, tok.Tokenizer)
	}
	if c.MaxModelLen != nil {
		if requests, err = datasets.FitModelLen(requests, *c.MaxModelLen, r.stderr); err != nil {
			return nil, err
		}
	}
	if c.WarnDefaultTemperature {
		fmt.Fprintln(r.stdout, plan.TemperatureWarning)
	}
	return &dataset{requests: requests, globals: globals}, nil
}

// encoded is every request's HTTP bytes, and the test request (request #0
// without an id) that the ready check and the warm-ups send.
type encoded struct {
	wire []engine.Request
	test engine.Request
}

// bodyParams are the run-wide inputs of every request body.
func (r *run) bodyParams(model endpoint.Model) backend.BodyParams {
	c := r.cfg
	return backend.BodyParams{
		Model: model.ID, ModelName: model.Name, Logprobs: c.Logprobs,
		IgnoreEOS: c.IgnoreEOS, ExtraBody: c.RequestExtraBody,
		ContinuousUsage: c.PerTokenITL,
	}
}

// encodeRequests builds every request's HTTP bytes before the clock
// starts (DESIGN principle 1), and the test request.
func (r *run) encodeRequests(model endpoint.Model, ds *dataset) (*encoded, error) {
	c := r.cfg
	adapters, err := backend.LoRAAdapters(c.LoraModules, c.LoraAssignment, len(ds.requests), ds.globals.Random)
	if err != nil {
		return nil, &py.UsageError{Msg: err.Error()}
	}
	params := r.bodyParams(model)
	enc := &encoded{wire: make([]engine.Request, len(ds.requests))}
	for i := range ds.requests {
		req := &ds.requests[i]
		p := params
		if adapters != nil {
			p.ModelName = adapters[i]
		}
		// The stated assignment: request i to front end i mod K, the
		// same on every agent of a cluster.
		q, err := r.server.EngineRequest(i%r.server.FrontEnds(), req, p)
		if err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		q.Index = i
		q.NumInputSequences = backend.NumInputSequences(c.Backend, req)
		q.OffsetNs = int64(req.TimestampSec * 1e9)
		enc.wire[i] = q
	}
	test := ds.requests[0]
	test.RequestID = ""
	if enc.test, err = r.server.EngineRequest(0, &test, params); err != nil {
		return nil, err
	}
	return enc, nil
}

// releaseLoadMemory gives back what loading the tokenizer and building the
// requests left behind before the streams start, so that the run's peak
// RSS is its own: the tokenizer's mapped tables and the freed heap.
func releaseLoadMemory(tok *endpoint.Tokenizer) {
	if tok != nil {
		if t, ok := tok.Tokenizer.(interface{ Trim() }); ok {
			t.Trim()
		}
	}
	debug.FreeOSMemory()
}

// sendCopies sends n copies of the test request at once (under the
// concurrency cap) and returns the first failure's text, "" if all
// succeeded.
func (r *run) sendCopies(ctx context.Context, enc *encoded, n int, timeout time.Duration) (string, error) {
	if r.endpointErr != nil {
		return "", r.endpointErr
	}
	return r.server.SendCopies(ctx, enc.test, n, timeout)
}

// readyCheckOverrun is how long a ready-check attempt may outlive the
// --ready-check-timeout-sec deadline before it is cut off; its outcome is
// discarded either way.
const readyCheckOverrun = 50 * time.Millisecond

// readyCheck is spec §c "Ready check": with --ready-check-timeout-sec T >
// 0 the test request is retried until it succeeds or T runs out.
func (r *run) readyCheck(ctx context.Context, enc *encoded) error {
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
		failure, err := r.sendCopies(ctx, enc, 1, remaining+readyCheckOverrun)
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
	return &py.Error{Type: "ValueError", Msg: "Initial test run failed - Please make sure benchmark " +
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
func (r *run) warmUp(ctx context.Context, enc *encoded) error {
	n := r.cfg.NumWarmups
	if n <= 0 {
		return nil
	}
	fmt.Fprintf(r.stdout, "Warming up with %d requests...\n", n)
	if _, err := r.sendCopies(ctx, enc, n, 0); err != nil {
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
