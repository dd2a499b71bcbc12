package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/stampede-bench/stampede/bench/cluster"
	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// clusterBenchmark is benchmark for one agent of a cluster run: the same
// requests and global arrival schedule as every agent, this agent's share
// of them sent from one start announced by agent 0, the partials merged on
// agent 0, which prints and saves the whole run as one host would.
func (r *run) clusterBenchmark(ctx context.Context, model endpoint.Model, tok *endpoint.Tokenizer, ds *dataset, enc *encoded) (*outcome.Outcome, error) {
	c := r.cfg
	size, index := c.ClusterSize, c.AgentIndex
	fmt.Fprintln(r.stdout, "Starting main benchmark run...")
	params := &pyout.ReportParams{RunSettings: r.runSettings(model, tok, c.WorkerProcesses(len(enc.wire)))}
	if err := pyout.WriteBanner(r.stdout, &params.RunSettings); err != nil {
		return nil, err
	}
	if r.endpointErr != nil {
		return nil, r.endpointErr
	}
	if err := checkArrivals(c); err != nil {
		return nil, err
	}
	offsets, rates, err := cluster.GlobalSchedule(enc.wire, c.SelfTimed, c.RequestRate, c.Burstiness, rampUp(c), ds.globals.NumPy)
	if err != nil {
		return nil, &py.Error{Type: "ValueError", Msg: err.Error()}
	}
	var share []engine.Request
	for i := index; i < len(enc.wire); i += size {
		q := enc.wire[i]
		q.OffsetNs = offsets[i]
		share = append(share, q)
	}
	ec := r.server.EngineConfig(share)
	// The agent's share keeps the global schedule's times.
	ec.SelfTimed, ec.RequestRate = true, math.Inf(1)
	ec.MaxConcurrency = c.AgentConcurrency()
	ec.KeepDetail = c.SaveDetailed
	ec.KeepText = c.SaveDetailed
	ec.KeepUncountedText = tok != nil
	ec.WarmConnections = c.WarmConnections

	options := func(results []metrics.RequestResult) metrics.ComputeOptions {
		return r.computeOptions(results, tok, ds)
	}
	settings := cluster.NewPartialSettings(params, new(options(nil)), c.Breakdown)
	var warmLead time.Duration
	if ec.WarmConnections {
		warmLead = time.Duration(ec.MaxConcurrency+1) * cluster.WarmLeadPerConn
	}
	auth := cluster.Auth{Token: c.ClusterToken, Digest: cluster.RunDigest(settings, enc.wire, offsets), Statistics: cluster.StatisticsDigest(settings)}
	if c.ClusterTokenFile != "" {
		if auth.Token, err = cluster.ReadTokenFile(c.ClusterTokenFile); err != nil {
			return nil, err
		}
	}
	session, err := cluster.Join(ctx, c.Coordinator, size, index, auth, len(enc.wire),
		endpoint.Seconds(c.ClusterTimeoutSec), warmLead, r.stderr)
	if err != nil {
		return nil, err
	}
	defer session.Close()
	ec.StartAt = session.StartAt()

	runner, err := engine.Start(ctx, ec)
	if err != nil {
		return nil, session.Fail(err)
	}
	res, err := r.wait(ctx, runner, len(share))
	if err != nil {
		return nil, err
	}
	report.WriteHealth(r.stderr, res)

	if res.Cancelled {
		outcome.DropUnsent(&res.Data)
	}
	var rpsChanges []pyout.RPSChange
	if index == 0 && rates != nil {
		rpsChanges = cluster.RampUpChanges(*c.RampUpStartRPS, session.StartUnixNs(), offsets, rates)
	}
	part := session.AgentPartial(res, settings, len(enc.wire), options, rpsChanges)
	var saved []string
	if c.SavePartial != "" {
		path := cluster.PartialPath(c.SavePartial, size, index)
		if err := cluster.SavePartialFile(path, part); err != nil {
			return nil, err
		}
		saved = append(saved, path)
	}
	merged, err := session.Gather(ctx, part, r.stderr)
	if err != nil || merged == nil {
		if err == nil && c.ResultsToLog {
			// Agent 0's Run prints its files; this agent's partial is all
			// it saved.
			err = cluster.WriteBundle(r.stdout, r.stderr, saved)
		}
		return nil, err
	}
	o, err := cluster.WriteMerged(r.stdout, r.stderr, merged, time.Now())
	if o != nil {
		o.Files = append(saved, o.Files...)
	}
	return o, err
}
