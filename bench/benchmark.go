package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/progress"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/bench/scrape"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// benchmark is the measured part, Python's benchmark() coroutine: the
// main run, its figures, the blocks, the profiler's stop and the files.
func (r *run) benchmark(ctx context.Context, model endpoint.Model, tok *endpoint.Tokenizer, ds *dataset, enc *encoded) (*outcome.Outcome, error) {
	// The requests made once the measured part is over go out even after
	// a first Ctrl-C, as Python's would, within its grace period, but not
	// after a hard stop.
	after, cancelAfter := endpoint.AfterRunContext(ctx, endpoint.Seconds(r.cfg.CancelGraceSec))
	defer cancelAfter()
	m, err := r.measure(ctx, after, model, tok, ds, enc)
	if err != nil || m == nil { // nil: a cluster's agent other than 0, done
		return nil, err
	}
	o, sidecar, err := r.summarize(m, r.computeOptions(tok, ds), ds)
	if err != nil {
		return o, err
	}
	if r.cfg.Profile && r.cfg.ProfileBatchThreshold == nil {
		r.server.StopProfile(after, r.stdout)
	}
	if err := r.saveOutputs(model, o, sidecar); err != nil {
		return o, err
	}
	if err := m.res.LogError; err != nil {
		// Saved as after an interrupt; the run still did not do what it
		// was asked.
		return o, &py.Error{Type: "OSError", Msg: err.Error()}
	}
	return o, nil
}

// summarize computes the figures of a measured run with opts, prints its
// blocks and assembles its sidecar (writeBlocks). The outcome is nil when
// the figures cannot be computed.
func (r *run) summarize(m *measurement, opts metrics.ComputeOptions, ds *dataset) (*outcome.Outcome, *report.Sidecar, error) {
	summary, err := metrics.Compute(&m.res.Data, opts)
	if err != nil {
		return nil, nil, err
	}
	o := &outcome.Outcome{Summary: summary, Data: &m.res.Data, Params: m.params, Options: opts, Cancelled: m.res.Cancelled}
	sidecar, err := r.writeBlocks(o, m, ds)
	return o, sidecar, err
}

// measurement is what the main run gave: the engine's result, the
// parameters its block is printed with (filled with the probes, the
// /metrics deltas and the ramp's steps), and what --server-metrics
// scraped (nil without it).
type measurement struct {
	res           *engine.Result
	params        *pyout.ReportParams
	serverMetrics *report.ServerMetrics
	// prefixCache is the server's prefix-cache counters over the run; nil
	// when it exports none.
	prefixCache *report.PrefixCache
	// serverSpans is --otlp-receiver's join; nil without it.
	serverSpans *report.ServerSpans
	// interrupted is how a stop cut the run short; nil when it finished.
	interrupted *report.SidecarInterrupted
}

// measure starts the profiler, prints the banner, reads the server's
// counters, runs every request through the engine under the progress bar,
// and reads the counters again (with after, the context of the requests
// made once the run is over).
func (r *run) measure(ctx, after context.Context, model endpoint.Model, tok *endpoint.Tokenizer, ds *dataset, enc *encoded) (*measurement, error) {
	c := r.cfg
	fmt.Fprintln(r.stdout, "Starting main benchmark run...")
	if c.Profile && c.ProfileBatchThreshold == nil {
		r.server.StartProfile(ctx, r.stdout)
	}
	params := &pyout.ReportParams{RunSettings: r.runSettings(model, tok, c.WorkerProcesses(enc.requests))}
	if err := pyout.WriteBanner(r.stdout, &params.RunSettings); err != nil {
		return nil, err
	}
	metricsURL := c.BaseURL + "/metrics"
	before, beforeOK := scrape.ReadCounters(ctx, r.server.Control(), metricsURL, r.server.HeadersFor(metricsURL))

	ec := r.server.EngineConfig(nil)
	ec.Store = enc.store
	ec.RequestRate, ec.Burstiness = c.RequestRate, c.Burstiness
	ec.Gaps = ds.globals.NumPy
	ec.SelfTimed = c.SelfTimed
	ec.RampUp = rampUp(c)
	if c.MaxConnectionsPerWorker != nil {
		ec.MaxConnectionsPerWorker = *c.MaxConnectionsPerWorker
	}
	// Python re-tokenizes the text of a request whose usage gave no output
	// token count; kept only for those, it is counted once after the run,
	// as the record log is sorted, off the shards' threads.
	ec.KeepText = c.SaveDetailed
	ec.KeepUncountedText = tok != nil
	ec.CountTokens = r.computeOptions(tok, ds).CountTokens
	ec.Log = r.logConfig()
	ec.WarmConnections = c.WarmConnections
	ec.RunningUsage = c.PerTokenITL

	probe, err := r.newProbe(model, ds)
	if err != nil {
		return nil, err
	}
	ec.Probe = probe
	if r.endpointErr != nil {
		return nil, r.endpointErr
	}
	if err := checkArrivals(c); err != nil {
		return nil, err
	}
	if err := r.checkLogSpace(ds, ec.Log); err != nil {
		return nil, err
	}
	if err := r.agent.Join(ctx, &ec, params); err != nil {
		return nil, err
	}
	receiver, err := r.startSpans(enc.requests)
	if err != nil {
		return nil, err
	}
	scraper := scrape.Start(ctx, scrape.Target{URL: c.ServerMetricsURL(), Interval: c.ScrapeInterval(),
		Client: r.server.Control(), Headers: r.server.ScrapeHeaders()}, r.stderr)
	runner, err := engine.Start(ctx, ec)
	if err != nil {
		scraper.Abort()
		if receiver != nil {
			receiver.Close()
		}
		return nil, r.agent.Fail(err)
	}
	first := scrape.ReadAtFirstAnswer(ctx, r.server.Control(), metricsURL, r.server.HeadersFor(metricsURL), before,
		func() bool { done, _, _ := runner.Progress(); return done > 0 })
	stopProfile := func() {}
	if c.Profile && c.ProfileBatchThreshold != nil {
		url := c.BaseURL + "/metrics"
		stopProfile = scrape.DeferredProfile{
			Client: r.server.Control(), URL: url, Headers: r.server.HeadersFor(url),
			Threshold: *c.ProfileBatchThreshold, Duration: time.Duration(c.ProfileDuration * float64(time.Second)),
			Start:  func(ctx context.Context) { r.server.StartProfile(ctx, r.stdout) },
			Stop:   func(ctx context.Context) { r.server.StopProfile(ctx, r.stdout) },
			Stdout: r.stdout, Stderr: r.stderr,
		}.Run(ctx, after)
	}
	res, err := r.wait(ctx, runner, ec.Store.Len())
	stopProfile()
	atFirst, firstOK := first.Finish()
	if err != nil {
		return nil, err
	}
	if res, err = r.agent.Gather(ctx, res); res == nil {
		return nil, err
	}
	params.Probe = metrics.ComputeProbes(res.Probes)
	if res.LogError != nil {
		fmt.Fprintf(r.stderr, "stampede: the record log could not be written (%v); the run stopped as after Ctrl-C, and what it measured is kept in memory.\n", res.LogError)
	}
	var interrupted *report.SidecarInterrupted
	if res.Cancelled {
		interrupted = reportInterrupt(r.stderr, res, stopSignal(ctx))
	}
	m := &measurement{res: res, params: params, serverMetrics: scraper.Finish(after, res), interrupted: interrupted}
	m.serverSpans = r.joinSpans(after, receiver, res, ds)
	if after, ok := scrape.ReadCounters(after, r.server.Control(), metricsURL, r.server.HeadersFor(metricsURL)); ok && beforeOK {
		m.prefixCache = scrape.PrefixCacheOfRun(before, atFirst, firstOK, after, c.ColdPrefixCache || c.ResetPrefixCache)
		if sd := metrics.SpecDecodeDelta(before.Spec, after.Spec); sd != nil {
			params.SpecDecode = sd
		}
		if dd := metrics.DiffusionDelta(before.Diffusion, after.Diffusion, metrics.Seconds(res.Data.DurationNs)); dd != nil {
			params.Diffusion = dd
		}
	}
	for _, ev := range res.RampUpEvents {
		params.RPSChangeEvents = append(params.RPSChangeEvents, pyout.RPSChange{RPS: ev.RPS, Timestamp: py.ISOFormat(ev.At)})
	}
	if err := r.agent.SaveReadings(m.readings()); err != nil {
		return nil, err
	}
	return m, nil
}

// wait waits for a started run of n requests under the progress bar.
func (r *run) wait(ctx context.Context, runner *engine.Runner, n int) (*engine.Result, error) {
	bar := progress.New(r.stderr, n, r.cfg.DisableTqdm)
	stopBar := bar.Poll(func() int { done, failed, _ := runner.Progress(); return done + failed }, 100*time.Millisecond)
	res, err := endpoint.WaitRun(ctx, runner)
	stopBar()
	bar.Close()
	return res, err
}

// rampUp is --ramp-up-strategy's ramp; nil without one.
func rampUp(c *plan.Plan) *engine.RampUp {
	if c.RampUpStrategy == "" {
		return nil
	}
	return &engine.RampUp{Strategy: c.RampUpStrategy, StartRPS: *c.RampUpStartRPS, EndRPS: *c.RampUpEndRPS}
}

// checkArrivals makes the assertions Python's get_request makes when the
// main run starts, after the banner: a positive burstiness, and unless the
// trace times itself, a positive rate for every request. Rates never fall
// during a ramp-up (its start is at most its end), so the first request's
// rate is the one to check. The engine reads zero values as its defaults,
// so they must not reach it.
func checkArrivals(c *plan.Plan) error {
	if !(c.Burstiness > 0) {
		return &py.Error{Type: "AssertionError",
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
		return &py.Error{Type: "AssertionError",
			Msg: fmt.Sprintf("Obtained non-positive request rate %s.", py.FloatRepr(first))}
	}
	return nil
}

// reportInterrupt drops the requests an interrupt kept from being sent
// and says what the results cover; it returns the same account for the
// sidecar, with signal the stop's name ("" when unknown).
func reportInterrupt(w io.Writer, res *engine.Result, signal string) *report.SidecarInterrupted {
	unsent := outcome.DropUnsent(&res.Data)
	account := &report.SidecarInterrupted{Signal: signal, AtOnce: res.Aborted, Sent: res.Data.Log.Len(), Unsent: unsent}
	if !res.Aborted {
		fmt.Fprintf(w, "Interrupted: stopped sending; the results below cover the %d requests sent (%d never sent are left out).\n",
			res.Data.Log.Len(), unsent)
		return account
	}
	for _, rr := range res.Data.Log.All() {
		if !rr.Success && rr.Error == "cancelled" {
			account.CancelledInFlight++
		}
	}
	fmt.Fprintf(w, "Interrupted again: stopped at once; the results below cover the %d requests sent, "+
		"of which %d still in flight were failed \"cancelled\" (%d never sent are left out).\n",
		res.Data.Log.Len(), account.CancelledInFlight, unsent)
	return account
}

// stopSignal names the signal that cancelled ctx when its cause says
// (the command's cause does: "SIGINT"); "" otherwise.
func stopSignal(ctx context.Context) string {
	var stop interface{ StopSignal() string }
	if errors.As(context.Cause(ctx), &stop) {
		return stop.StopSignal()
	}
	return ""
}

// computeOptions are the run's metric settings.
func (r *run) computeOptions(tok *endpoint.Tokenizer, ds *dataset) metrics.ComputeOptions {
	c := r.cfg
	o := metrics.ComputeOptions{
		Pooling:     c.TaskType == plan.Pooling,
		Percentiles: c.SelectedPercentiles,
		ClientQueue: c.MaxConcurrency != nil,
	}
	o.QueueInclusiveE2EL = o.ClientQueue && !math.IsInf(c.RequestRate, 1)
	if backend.Of(c.Backend).Multipart() {
		o.InputAudioSeconds = ds.table.AudioSec
	}
	if len(c.GoodputSLOs) > 0 {
		o.Goodput = make(map[string]float64, len(c.GoodputSLOs))
		for _, s := range c.GoodputSLOs {
			o.Goodput[s.Metric] = s.ValueMs
		}
	}
	if tok != nil {
		t := tok.Tokenizer
		o.CountTokens = func(text string) int { return len(t.Encode(nil, text, false)) }
	}
	return o
}

// runSettings are the run's settings as the outputs read them; workers is
// the multi-process fork's worker count (0 hides its row).
func (r *run) runSettings(model endpoint.Model, tok *endpoint.Tokenizer, workers int) pyout.RunSettings {
	c := r.cfg
	p := pyout.RunSettings{
		Backend: c.Backend, ModelID: model.ID,
		NumPrompts: c.NumPrompts, RequestRate: c.RequestRate, Burstiness: c.Burstiness,
		RampUpStrategy: c.RampUpStrategy, Metadata: c.Metadata,
		PercentileMetrics: c.SelectedPercentileMetrics, Goodput: len(c.GoodputSLOs) > 0,
		SelfTimed: c.SelfTimed, ProbeRequestRate: c.ProbeRequestRate, Workers: workers,
		SaveResult: c.SaveResult, SaveDetailed: c.SaveDetailed, AppendResult: c.AppendResult,
		PlotTimeline: c.PlotTimeline, ResultDir: c.ResultDir, ResultFilename: c.ResultFilename,
	}
	if tok != nil {
		p.TokenizerID = tok.ID
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

// checkLogSpace refuses a run whose record log cannot fit where it goes,
// before the clock starts.
func (r *run) checkLogSpace(ds *dataset, cfg metrics.LogConfig) error {
	var tokens int64
	n := ds.table.Len()
	for i := range n {
		tokens += int64(max(ds.table.ExpectedOutputLen(i), 1))
	}
	where := "$TMPDIR"
	if r.cfg.SaveDetailed {
		where = "--result-dir"
	}
	need := metrics.EstimateLogBytes(n, tokens, r.cfg.SaveDetailed)
	if err := metrics.CheckLogSpace(cfg, need, where); err != nil {
		return &py.Error{Type: "OSError", Msg: err.Error()}
	}
	return nil
}

// logConfig is where the run's record log goes: the result directory
// with --save-detailed (the sorted log is saved there beside the result),
// else $TMPDIR.
func (r *run) logConfig() metrics.LogConfig {
	c := r.cfg
	if c.SaveDetailed {
		dir := c.ResultDir
		if dir == "" {
			dir = "."
		}
		return metrics.LogConfig{Dir: dir}
	}
	return metrics.LogConfig{}
}
