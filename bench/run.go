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
	ds, enc, err := r.encodeRequests(ctx, model, tok)
	if err != nil {
		return nil, err
	}
	// The spill goes with the run, also after Ctrl-C (it is unlinked
	// already: a kill leaves nothing either).
	defer enc.store.Close()
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

// dataset is what sampling gave: what the phases after the run read of
// each request (a compact table: the prompts are in the request store, or
// gone), request 0 (the test request's and the probe's model), and
// Python's process-wide generators as the sampling left them (the arrival
// gaps draw from them next).
type dataset struct {
	table   *datasets.Table
	first   datasets.Request
	globals datasets.PythonGlobals
}

// sampleDataset is spec §a steps 11–15 and §g: it samples with globals,
// and hands each batch of requests, in order, to use. align runs the
// server-tokenizer alignment of the datasets that ask for it. Python's
// lines about the sampling print before it returns.
func (r *run) sampleDataset(ctx context.Context, model endpoint.Model, tok *endpoint.Tokenizer, align bool,
	globals datasets.PythonGlobals, use datasets.Emit) error {
	c := r.cfg
	logf := func(format string, args ...any) { fmt.Fprintf(r.stderr, format+"\n", args...) }
	var kwargs map[string]any
	if len(c.ChatTemplateKwargs) > 0 {
		if err := json.Unmarshal([]byte(c.ChatTemplateKwargs), &kwargs); err != nil {
			return &py.UsageError{Msg: "argument --chat-template-kwargs: " +
				datasets.JSONProblem([]byte(c.ChatTemplateKwargs), err, `a JSON object, such as {"enable_thinking": false}`)}
		}
	}
	d := datasets.Lookup(c.DatasetName)
	if d == nil || !d.Built() {
		return &py.UsageError{Msg: fmt.Sprintf("--dataset-name %s is not supported yet", c.DatasetName)}
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
	// What follows the sampling, a batch at a time; its errors are not
	// the dataset's.
	var aligner *datasets.Aligner
	if d.AlignWithServer && align {
		aligner = &datasets.Aligner{Client: r.server.Control(), BaseURL: c.BaseURL, ModelID: model.ID, Out: r.stdout}
	}
	var fit *datasets.ModelLenFit
	if c.MaxModelLen != nil {
		fit = &datasets.ModelLenFit{MaxLen: *c.MaxModelLen}
	}
	sampled := 0
	var after error
	err := d.Stream(env, func(batch []datasets.Request) error {
		sampled += len(batch)
		if aligner != nil {
			if err := aligner.Align(ctx, batch); err != nil {
				after = &py.Error{Type: "RuntimeError", Msg: err.Error()}
				return after
			}
		}
		if c.PromptTokenIDs && tok != nil {
			datasets.PromptTokenIDs(batch, tok.Tokenizer)
		}
		if fit != nil {
			batch = fit.Keep(batch)
		}
		if after = use(batch); after != nil {
			return after
		}
		return nil
	})
	if after != nil {
		return after
	}
	if err == nil && tok != nil {
		// A tokenizer cannot return errors through the Tokenizer
		// interface: the server's keeps the first failed call, a local
		// one the first split pattern that gave up.
		if failing, ok := tok.Tokenizer.(interface{ Err() error }); ok {
			err = failing.Err()
		}
	}
	if err != nil {
		return datasets.RunError(c.DatasetName, err, c.DatasetPath)
	}
	if sampled == 0 {
		return &py.Error{Type: "ValueError", Msg: fmt.Sprintf("dataset %s produced no requests", c.DatasetName)}
	}
	if fit != nil {
		if err := fit.Finish(r.stderr); err != nil {
			return err
		}
	}
	if c.WarnDefaultTemperature {
		fmt.Fprintln(r.stdout, plan.TemperatureWarning)
	}
	return nil
}

// newGlobals is Python's random.seed and numpy.random.seed of --seed.
func (r *run) newGlobals() (datasets.PythonGlobals, error) {
	globals, err := datasets.NewPythonGlobals(int64(r.cfg.Seed))
	if err != nil {
		return globals, &py.Error{Type: "ValueError", Msg: err.Error()}
	}
	return globals, nil
}

// encoded is this host's requests' HTTP bytes (a cluster agent's share)
// in a store, the test request (request #0 without an id) that the ready
// check and the warm-ups send, and for a cluster what every request of
// the run brings to the schedule and the digest.
type encoded struct {
	store *engine.Store
	test  engine.Request
	// requests counts the run's requests, every agent's.
	requests int
	// digest and traceOffsetsNs are a cluster agent's (nil otherwise):
	// every request's contribution to the run's digest, and its trace
	// time when the trace times itself.
	digest         *cluster.RequestsDigest
	traceOffsetsNs []int64
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

// encodeRequests samples the dataset and builds each request's HTTP bytes
// as it comes, before the clock starts (DESIGN principle 1), into a
// request store that keeps them in memory up to a bound and spills the
// rest to a temporary file (engine.Store); what the phases after the run
// read of each request stays in the dataset's table. A cluster agent
// builds every request, in order (the random draws are the run's), but
// keeps only its share.
func (r *run) encodeRequests(ctx context.Context, model endpoint.Model, tok *endpoint.Tokenizer) (*dataset, *encoded, error) {
	c := r.cfg
	globals, err := r.newGlobals()
	if err != nil {
		return nil, nil, err
	}
	adapter, err := backend.LoRAPicker(c.LoraModules, c.LoraAssignment, globals.Random)
	if err != nil {
		return nil, nil, &py.UsageError{Msg: err.Error()}
	}
	size, index := 1, 0
	if c.Clustered() {
		size, index = c.ClusterSize, c.AgentIndex
	}
	ds := &dataset{table: datasets.NewTable(c.RequestIDPrefix), globals: globals}
	enc := &encoded{store: engine.NewStore(engine.StoreConfig{Expected: c.NumPrompts / size,
		FirstIndex: index, IndexStride: size})}
	if c.Clustered() {
		enc.digest = cluster.NewRequestsDigest()
	}
	params := r.bodyParams(model)
	err = r.sampleDataset(ctx, model, tok, true, globals, func(batch []datasets.Request) error {
		for k := range batch {
			req := &batch[k]
			i := enc.requests
			enc.requests++
			if i == 0 {
				ds.first = *req
				test := *req
				test.RequestID = ""
				var err error
				if enc.test, err = r.server.EngineRequest(0, &test, params); err != nil {
					return err
				}
			}
			ds.table.Add(req)
			p := params
			if adapter != nil {
				p.ModelName = adapter(i)
			}
			inputs := backend.NumInputSequences(c.Backend, req)
			if enc.digest != nil {
				enc.digest.Add(req.PromptLen, inputs)
				if c.SelfTimed {
					enc.traceOffsetsNs = append(enc.traceOffsetsNs, int64(req.TimestampSec*1e9))
				}
			}
			if !cluster.Shares(i, size, index) {
				continue
			}
			// The stated assignment: request i to front end i mod K, the
			// same on every agent of a cluster.
			q, err := r.server.EngineRequest(i%r.server.FrontEnds(), req, p)
			if err != nil {
				return fmt.Errorf("request %d: %w", i, err)
			}
			q.Index = i
			q.NumInputSequences = inputs
			q.OffsetNs = int64(req.TimestampSec * 1e9)
			if err := enc.store.Append(q); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = enc.store.Finish()
	}
	if err != nil {
		enc.store.Close()
		return nil, nil, err
	}
	// Request 0 keeps what the probe is built from, not its prompt.
	f := &ds.first
	f.Prompt, f.PromptIDs, f.PromptList, f.MultiModal, f.ChatMessages, f.Audio = "", nil, nil, nil, nil, nil
	return ds, enc, nil
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
