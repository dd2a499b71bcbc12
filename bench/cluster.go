package bench

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/progress"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/engine"
)

// clusterStartLead is how far ahead agent 0 announces the start: time for
// the announcement to reach every agent and for each to be waiting.
const clusterStartLead = time.Second

// warmLeadPerConn is added to the lead per warm connection of an agent's
// share (--warm-connections): agents open them before they wait for the
// start, paced, so that they all are up when it comes.
const warmLeadPerConn = 2 * time.Millisecond

// clusterBenchmark is benchmark for one agent of a cluster run: the same
// requests and global arrival schedule as every agent, this agent's share
// of them sent from one start announced by agent 0, the partials merged on
// agent 0, which prints and saves the whole run as one host would.
func (r *run) clusterBenchmark(ctx context.Context) error {
	c := r.cfg
	size, index := c.ClusterSize, c.AgentIndex()
	fmt.Fprintln(r.stdout, "Starting main benchmark run...")
	params := &pyout.ReportParams{RunSettings: r.runSettings(c.WorkerProcesses(len(r.wire)))}
	if err := pyout.WriteBanner(r.stdout, &params.RunSettings); err != nil {
		return err
	}
	if r.endpointErr != nil {
		return r.endpointErr
	}
	if err := checkArrivals(c); err != nil {
		return err
	}
	offsets, rates, err := r.globalSchedule()
	if err != nil {
		return &cli.ValidationError{Type: "ValueError", Msg: err.Error()}
	}
	var share []engine.Request
	for i := index; i < len(r.wire); i += size {
		q := r.wire[i]
		q.OffsetNs = offsets[i]
		share = append(share, q)
	}
	ec := r.engineConfig(share)
	// The agent's share keeps the global schedule's times.
	ec.SelfTimed, ec.RequestRate = true, math.Inf(1)
	ec.MaxConcurrency = c.AgentConcurrency()
	ec.KeepDetail = c.SaveDetailed
	ec.KeepText = c.SaveDetailed
	ec.KeepUncountedText = r.tok != nil
	ec.WarmConnections = c.WarmConnections

	timeout := seconds(c.ClusterTimeoutSec)
	settings := newPartialSettings(params, ptr(r.computeOptions(nil)), c.Breakdown)
	hello := clusterHello{Protocol: clusterProtocol, Size: size, Index: index, Digest: runDigest(settings, r.wire, offsets)}
	var coord *coordinator
	var link *agentLink
	var start clusterStart
	if index == 0 {
		if coord, err = listenCoordinator(c.Coordinator, size, hello.Digest, timeout); err != nil {
			return err
		}
		defer coord.Close()
		fmt.Fprintf(r.stderr, "stampede: agent 0 of %d waits for the other agents on %s\n", size, coord.ln.Addr())
		if err := coord.register(ctx); err != nil {
			return err
		}
		if err := coord.probeClocks(); err != nil {
			return err
		}
		lead := clusterStartLead + 4*coord.maxRTT()
		if ec.WarmConnections {
			lead += time.Duration(ec.MaxConcurrency+1) * warmLeadPerConn
		}
		start.StartUnixNs = time.Now().Add(lead).UnixNano()
		if err := coord.announce(start.StartUnixNs); err != nil {
			return err
		}
	} else {
		if link, start, err = joinCluster(ctx, c.Coordinator, hello, timeout); err != nil {
			return err
		}
		defer link.Close()
	}
	clock := start.Clock
	fmt.Fprintf(r.stderr, "stampede: agent %d of %d: clock offset %s ± %s against agent 0; the run starts at %s\n",
		index, size, time.Duration(clock.OffsetNs), time.Duration(clock.ErrorBoundNs),
		time.Unix(0, start.StartUnixNs).Format(time.RFC3339Nano))
	// Agent 0's instant on this agent's clock: agent = agent 0 + offset.
	ec.StartAt = time.Unix(0, start.StartUnixNs+clock.OffsetNs)

	runner, err := engine.Start(ctx, ec)
	if err != nil {
		if coord != nil {
			return coord.fail(err)
		}
		return err
	}
	bar := progress.New(r.stderr, len(share), c.DisableTqdm)
	stopBar := bar.Poll(func() int { done, failed, _ := runner.Progress(); return done + failed }, 100*time.Millisecond)
	res, err := waitRun(ctx, runner)
	stopBar()
	bar.Close()
	if err != nil {
		return err
	}
	report.WriteHealth(r.stderr, res)

	part := r.agentPartial(res, settings, start, offsets, rates)
	if c.SavePartial != "" {
		if err := savePartialFile(c.SavePartial, part); err != nil {
			return err
		}
	}
	if link != nil {
		if err := link.sendPartial(part, timeout); err != nil {
			return err
		}
		fmt.Fprintf(r.stderr, "stampede: agent %d sent its partial result (%d requests) to agent 0, which prints and saves the run\n",
			index, len(part.Records))
		return nil
	}
	// An interrupted agent 0 still gathers what the others measured.
	others, err := coord.collect(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	merged, err := MergePartials(append([]*Partial{part}, others...))
	if err != nil {
		return err
	}
	r.measured, err = WriteMerged(r.stdout, r.stderr, merged, time.Now())
	return err
}

func ptr[T any](v T) *T { return &v }

// globalSchedule is the arrival schedule of every request of the run, as
// a single host computes it (engine.ArrivalSchedule with the same gap
// source and seed, or a timed trace's own times), in run nanoseconds from
// the start, with the rate that applied to each.
func (r *run) globalSchedule() (offsetsNs []int64, rates []float64, err error) {
	c := r.cfg
	offsetsNs = make([]int64, len(r.wire))
	if c.SelfTimed {
		for i, q := range r.wire {
			offsetsNs[i] = max(q.OffsetNs, 0)
		}
		return offsetsNs, nil, nil
	}
	var ramp *engine.RampUp
	if c.RampUpStrategy != "" {
		ramp = &engine.RampUp{Strategy: c.RampUpStrategy, StartRPS: *c.RampUpStartRPS, EndRPS: *c.RampUpEndRPS}
	}
	s, err := engine.ArrivalSchedule(len(r.wire), c.RequestRate, c.Burstiness, ramp, r.globals.NumPy)
	if err != nil {
		return nil, nil, err
	}
	for i, sec := range s.OffsetsSec {
		offsetsNs[i] = int64(math.Round(sec * 1e9))
	}
	if ramp == nil {
		return offsetsNs, nil, nil
	}
	return offsetsNs, s.Rates, nil
}

// runDigest identifies a run for the agents' registration: the settings,
// every request's prompt length and the global schedule. Request ids are
// left out: each agent draws its own --request-id-prefix unless given.
func runDigest(settings PartialSettings, wire []engine.Request, offsets []int64) string {
	h := sha256.New()
	s, _ := json.Marshal(settings)
	h.Write(s)
	var b [8]byte
	for i, q := range wire {
		binary.LittleEndian.PutUint64(b[:], uint64(q.PromptLen))
		h.Write(b[:])
		binary.LittleEndian.PutUint64(b[:], uint64(offsets[i]))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// agentPartial is this agent's share of the run with every time moved
// onto the shared clock: run time 0 is the announced start on agent 0's
// clock. A time t of this agent's run is at wall time Start + t here, so
// at Start + t − offset on agent 0's clock.
func (r *run) agentPartial(res *engine.Result, settings PartialSettings, start clusterStart, offsets []int64, rates []float64) *Partial {
	c := r.cfg
	shift := res.Start.UnixNano() - start.Clock.OffsetNs - start.StartUnixNs
	results := res.Data.Results
	if res.Cancelled {
		dropUnsent(&res.Data)
		results = res.Data.Results
	}
	for i := range results {
		rr := &results[i]
		if rr.ArrivalNs != 0 {
			rr.ArrivalNs += shift
		}
		if rr.StartNs != 0 {
			rr.StartNs += shift
		}
	}
	opts := r.computeOptions(results)
	clock := start.Clock
	clock.StartLateNs = res.ScheduleStartNs + shift
	h := PartialHeader{
		ClusterSize: c.ClusterSize, ClusterIndex: c.AgentIndex(), NumRequests: len(r.wire),
		Settings: settings, DurationNs: res.ScheduleStartNs + shift + res.Data.DurationNs,
		Cancelled: res.Cancelled, Clock: clock, Health: report.NewSidecarHealth(res),
	}
	h.ServerMessages, h.ServerMessagesRest = res.Data.ServerMessages.Top(maxMessageTexts)
	if c.AgentIndex() == 0 && rates != nil {
		h.RPSChangeEvents = rampUpChanges(*c.RampUpStartRPS, start.StartUnixNs, offsets, rates)
	}
	return &Partial{Header: h, Records: newPartialRecords(results, opts.CountTokens, opts.InputAudioSeconds)}
}

// rampUpChanges are the ramp's whole-rate steps as a single host records
// them: the start rate at the start, then each whole rate at the release
// of the first request that reached it (on the schedule, agent 0's clock).
func rampUpChanges(startRPS int, startUnixNs int64, offsets []int64, rates []float64) []pyout.RPSChange {
	at := func(ns int64) string { return pyISOFormat(time.Unix(0, ns)) }
	events := []pyout.RPSChange{{RPS: startRPS, Timestamp: at(startUnixNs)}}
	last := startRPS
	for i, rate := range rates {
		for v := last + 1; v <= int(rate); v++ {
			events = append(events, pyout.RPSChange{RPS: v, Timestamp: at(startUnixNs + offsets[i])})
		}
		last = max(last, int(rate))
	}
	return events
}

// savePartialFile writes p to path (--save-partial).
func savePartialFile(path string, p *Partial) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--save-partial: %w", err)
	}
	err = WritePartial(f, p)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--save-partial %s: %w", path, err)
	}
	return nil
}

// savePartial saves a single-host run as the one partial of a cluster of
// one (--save-partial without --cluster-size).
func (r *run) savePartial(o *outcome.Outcome) error {
	if r.cfg.SavePartial == "" || o == nil {
		return nil
	}
	var health report.SidecarHealth
	if r.sidecar != nil {
		health = r.sidecar.Health
	}
	return savePartialFile(r.cfg.SavePartial, SplitOutcome(o, r.cfg.Breakdown, health, 1)[0])
}
