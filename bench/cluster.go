package bench

import (
	"context"
	"io"
	"time"

	"github.com/stampede-bench/stampede/bench/cluster"
	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/metrics"
)

// clusterBenchmark is benchmark for one agent of a cluster run: the same
// requests and global arrival schedule as every agent, this agent's share
// of them sent from one start announced by agent 0 (cluster.Agent), the
// partials merged on agent 0, which then prints and saves the whole run
// through the single host's own phases, extras and all.
func (r *run) clusterBenchmark(ctx context.Context, model endpoint.Model, tok *endpoint.Tokenizer, ds *dataset, enc *encoded) (*outcome.Outcome, error) {
	fingerprint := &report.Fingerprint{Client: report.ClientFacts("", "")}
	if r.cfg.AgentIndex == 0 {
		r.fingerprint(ctx, model, tok)
		fingerprint = r.fingerprintFacts
	}
	r.cfg = cluster.AgentPlan(r.cfg)
	r.agent = &cluster.Agent{
		Plan: r.cfg, Requests: enc.requests, Share: enc.store, Digest: enc.digest, TraceOffsetsNs: enc.traceOffsetsNs,
		Gaps: ds.globals.NumPy, RampUp: rampUp(r.cfg),
		Options:     func() metrics.ComputeOptions { return r.computeOptions(tok, ds) },
		Facts:       func(i int) (string, int) { return ds.table.RequestID(i), ds.table.ExpectedOutputLen(i) },
		Fingerprint: fingerprint,
		SentAs:      ds.table.SentAs,
		Stdout:      r.stdout,
		Stderr:      r.stderr,
	}
	defer r.agent.Close()
	o, err := r.benchmark(ctx, model, tok, ds, enc)
	if err == nil && o != nil {
		// Printed and saved, but without the requests of agents whose
		// partials did not arrive: the run ends with its own status.
		err = r.agent.Incomplete()
	}
	if !r.cfg.ResultsToLog {
		return o, err
	}
	if o == nil && err == nil {
		// An agent other than 0 prints nothing of the run; its partial is
		// all it saved, and Run prints agent 0's files.
		return nil, cluster.WriteBundle(r.stdout, r.stderr, r.agent.Saved)
	}
	if o != nil {
		o.Files = append(r.agent.Saved, o.Files...)
	}
	return o, err
}

// WriteMerged prints and saves a run merged from its saved partials after
// it ended (`stampede merge`) through the phases agent 0 prints and saves
// its own merged run with: the same blocks, warnings and notes on stderr,
// result JSON and sidecar, from the settings the partials carry
// (MergedRun.Plan), and what agent 0 read from the server beside the
// requests (its /metrics, prefix cache and spans), which its partial
// carries. The manifest of agent 0's command line is in its own sidecar
// alone: merge was not given that command line.
func WriteMerged(m *cluster.MergedRun, stdout, stderr io.Writer) (*outcome.Outcome, error) {
	r := &run{cfg: m.Plan(), stdout: stdout, stderr: stderr, agent: cluster.MergedAgent(m)}
	// What the errors and the usage check read of each request.
	ds := &dataset{table: datasets.TableFrom(m.Requests(), m.RequestID, m.ExpectedOutputLen)}
	meas := &measurement{res: m.Result(time.Time{}), params: m.Params}
	if s := m.Server; s != nil {
		meas.serverMetrics, meas.prefixCache, meas.serverSpans = s.Metrics, s.PrefixCache, s.Spans
	}
	o, sidecar, err := r.summarize(meas, m.Options, ds)
	if err != nil {
		return o, err
	}
	return o, r.saveOutputs(endpoint.Model{ID: m.Params.ModelID}, o, sidecar)
}

// readings are what m read from the server beside the requests, as a
// partial carries them.
func (m *measurement) readings() *cluster.ServerReadings {
	return &cluster.ServerReadings{Metrics: m.serverMetrics, PrefixCache: m.prefixCache, Spans: m.serverSpans,
		SpecDecode: m.params.SpecDecode, Diffusion: m.params.Diffusion}
}
