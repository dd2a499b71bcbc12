// Package cluster runs one benchmark over several agents (spec §j, the
// Kubernetes Indexed Job): registration with agent 0 (authenticated by
// the cluster token, checked against the run's digests), clock offsets,
// one announced start, the partial results and their exact merge; the
// launcher of --cluster-local's agents on one host (Local), and the
// bundle that carries a run's saved files through a log (WriteBundle,
// ReadBundles). Its control plane uses sockets of its own, never a shard.
package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// clusterStartLead is how far ahead agent 0 announces the start: time for
// the announcement to reach every agent and for each to be waiting.
const clusterStartLead = time.Second

// WarmLeadPerConn is added to the lead per warm connection of an agent's
// share (--warm-connections): agents open them before they wait for the
// start, paced, so that they all are up when it comes.
const WarmLeadPerConn = 2 * time.Millisecond

// Session is one agent's place in a cluster run, from its registration
// to the delivery of its partial.
type Session struct {
	size, index int
	timeout     time.Duration
	coord       *coordinator // agent 0's
	link        *agentLink   // every other agent's
	start       clusterStart
}

// Auth is what an agent proves at registration: that it holds the
// cluster's token, and runs the same requests, schedule and statistics as
// agent 0.
type Auth struct {
	// Token is the shared secret; "" on loopback alone.
	Token string
	// Digest is RunDigest's, Statistics StatisticsDigest's.
	Digest, Statistics string
	// From names where the coordinator's address came from, for the
	// error of an agent that cannot reach it: "" is --coordinator; an
	// agent of --cluster-local has it in $STAMPEDE_CLUSTER_LOCAL_COORDINATOR.
	From string
}

// Join registers this agent (index of size) for the run of numRequests
// requests that auth identifies, once its open-files limit holds the
// streams (ShareStreams) its share opens at most. Agent 0 listens where coordinator points
// on this host, registers the others, measures their clocks and announces
// a start far enough ahead (plus extraLead); every other agent connects
// to it and receives that start. Progress, and every connection agent 0
// drops, go to stderr.
func Join(ctx context.Context, coordinator string, size, index int, auth Auth, numRequests, streams int, timeout, extraLead time.Duration, stderr io.Writer) (*Session, error) {
	if coordinator == "" {
		// The command line gives every agent one (bench/cli); the
		// commands that cannot run agents refuse them when they parse it
		// (cli.RefuseAgents).
		return nil, errors.New("cluster: an agent without a coordinator to join")
	}
	// Each agent holds its share of the streams in its own open-files
	// limit, which Go's runtime raised to the hard one as it started. A
	// share that does not fit fails here, before registering (agent 0 is
	// told why), rather than as refused connections in the middle of the
	// run.
	if soft, hard, err := OpenFilesLimit(); err != nil {
		return nil, err
	} else if err := checkShareOpenFiles(size, index, streams, soft, hard); err != nil {
		return nil, refuse(ctx, coordinator, auth, size, index, timeout, err, stderr)
	}
	s := &Session{size: size, index: index, timeout: timeout}
	hello := clusterHello{Protocol: clusterProtocol, Size: size, Index: index, Digest: auth.Digest, Statistics: auth.Statistics}
	var err error
	if index == 0 {
		shares := make([]int, size)
		for k := range shares {
			shares[k] = (numRequests - k + size - 1) / size
		}
		logf := func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
		if s.coord, err = listenCoordinator(ctx, coordinator, auth, size, shares, timeout, logf); err != nil {
			return nil, err
		}
		fmt.Fprintf(stderr, "stampede: agent 0 of %d waits for the other agents on %s\n", size, s.coord.ln.Addr())
		if err := s.coord.register(ctx); err != nil {
			s.Close()
			return nil, err
		}
		if err := s.coord.probeClocks(); err != nil {
			s.Close()
			return nil, err
		}
		lead := clusterStartLead + 4*s.coord.maxRTT() + extraLead
		s.start.StartUnixNs = time.Now().Add(lead).UnixNano()
		if err := s.coord.announce(s.start.StartUnixNs); err != nil {
			s.Close()
			return nil, err
		}
	} else if s.link, s.start, err = joinCluster(ctx, coordinator, auth.Token, hello, timeout); err != nil {
		return nil, namedFrom(err, auth.From)
	}
	clock := s.start.Clock
	fmt.Fprintf(stderr, "stampede: agent %d of %d: clock offset %s ± %s against agent 0; the run starts at %s\n",
		index, size, time.Duration(clock.OffsetNs), time.Duration(clock.ErrorBoundNs),
		time.Unix(0, s.start.StartUnixNs).Format(time.RFC3339Nano))
	return s, nil
}

// refusalWait bounds how long an agent that cannot take part tries to
// tell agent 0: agent 0 builds the same requests, so it listens about
// when the agent would have joined; one that does not within this has
// most likely failed too, and the agent need not wait out
// --cluster-timeout-sec for it.
const refusalWait = 30 * time.Second

// refuse tells agent 0 at coordinator that agent index of size cannot
// take part in the run because of cause (refuseCluster), and returns
// cause; for agent 0, or once ctx is done (the run was stopped), it
// returns cause alone. stderr hears when agent 0 could not be told, or
// answered with another reason (its own text, such as a run already
// stopped or a hello not keyed by its token).
func refuse(ctx context.Context, coordinator string, auth Auth, size, index int, timeout time.Duration, cause error, stderr io.Writer) error {
	if index == 0 || ctx.Err() != nil {
		return cause
	}
	hello := clusterHello{Protocol: clusterProtocol, Size: size, Index: index, Refusal: cause.Error()}
	fmt.Fprintf(stderr, "stampede: agent %d cannot take part in the run; telling agent 0 at %s why\n", index, coordinator)
	err := namedFrom(refuseCluster(ctx, coordinator, auth.Token, hello, min(timeout, refusalWait)), auth.From)
	var fail *FailError
	switch {
	case err == nil: // agent 0 stops the run with cause
	case errors.As(err, &fail):
		fmt.Fprintf(stderr, "stampede: agent %d: agent 0 did not take its reason: %s\n", index, fail.Text)
	default:
		fmt.Fprintf(stderr, "stampede: agent %d could not tell agent 0 why it stops: %v\n", index, err)
	}
	return cause
}

// StartAt is the announced start on this agent's clock: agent = agent 0
// + offset.
func (s *Session) StartAt() time.Time {
	return time.Unix(0, s.start.StartUnixNs+s.start.Clock.OffsetNs)
}

// StartUnixNs is the announced start on agent 0's clock.
func (s *Session) StartUnixNs() int64 { return s.start.StartUnixNs }

// Fail tells the other agents why the run ends (agent 0 only), and
// returns err.
func (s *Session) Fail(err error) error {
	if s.coord != nil {
		return s.coord.fail(err)
	}
	return err
}

// Close ends the session's connections.
func (s *Session) Close() {
	if s.coord != nil {
		s.coord.Close()
	}
	if s.link != nil {
		s.link.Close()
	}
}

// Gather delivers this agent's partial: an agent other than 0 streams it
// to agent 0 and returns nil; agent 0 streams its own share and the
// others' into one spool as they arrive (even after an interrupt, so
// that what they measured is kept) and returns the merged run. An agent
// whose partial did not arrive whole is named on stderr with why, and
// left out of the run (MergedRun.Missing).
func (s *Session) Gather(ctx context.Context, part *Partial, stderr io.Writer) (*MergedRun, error) {
	if s.link != nil {
		records, err := s.link.sendPartial(part, s.timeout)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stderr, "stampede: agent %d sent its partial result (%d requests) to agent 0, which prints and saves the run\n",
			s.index, records)
		return nil, nil
	}
	m, err := newMerger(&part.Header)
	if err != nil {
		return nil, err
	}
	own, err := m.admit(&part.Header)
	if err != nil {
		m.abandon()
		return nil, err
	}
	m.probes = part.Probes
	var ownErr error
	var wg sync.WaitGroup
	wg.Go(func() { ownErr = own.addRecords(part) })
	missing := s.coord.collect(context.WithoutCancel(ctx), m)
	wg.Wait()
	if ownErr != nil {
		m.abandon()
		return nil, ownErr
	}
	for k := range s.size {
		if err := missing[k]; err != nil {
			fmt.Fprintf(stderr, "stampede: %v; the run is saved without the %d requests of its share\n", err, s.coord.shares[k])
		}
	}
	return m.finish(missing)
}

// GlobalSchedule is the arrival schedule of every one of the run's n
// requests, as a single host computes it (engine.ArrivalSchedule with the
// same gap source and seed, or a timed trace's own times, traceOffsetsNs,
// with selfTimed), in run nanoseconds from the start, with the rate that
// applied to each under a ramp-up (nil without one).
func GlobalSchedule(n int, traceOffsetsNs []int64, selfTimed bool, rate, burstiness float64, ramp *engine.RampUp, gaps engine.GapSource) (offsetsNs []int64, rates []float64, err error) {
	offsetsNs = make([]int64, n)
	if selfTimed {
		for i := range offsetsNs {
			if i < len(traceOffsetsNs) {
				offsetsNs[i] = max(traceOffsetsNs[i], 0)
			}
		}
		return offsetsNs, nil, nil
	}
	s, err := engine.ArrivalSchedule(n, rate, burstiness, ramp, gaps)
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

// digestFlags name the settings RunDigest covers, for its refusal.
const digestFlags = "--backend, --model, --num-prompts, --request-rate, --burstiness, --max-concurrency, --ramp-up-*"

// statisticsFlags name the settings StatisticsDigest covers beside them.
const statisticsFlags = "--percentile-metrics, --metric-percentiles, --goodput, --breakdown, --save-detailed, --server-urls, --per-token-itl"

// RunDigest identifies a run for the agents' registration by what changes
// its requests or their schedule, and nothing else: the backend, the
// model, the tokenizer's name, the number of prompts, the request rate,
// the burstiness, --max-concurrency, the ramp-up, whether a trace times
// itself, pooling, and every request's prompt length and input count
// (requests, which carry the dataset and the seed) and place on the
// global schedule. Request ids are left out (each agent draws its own
// --request-id-prefix unless given), and so are the output flags
// (--result-dir and the like).
func RunDigest(settings PartialSettings, requests *RequestsDigest, offsets []int64) string {
	h := sha256.New()
	p := settings.Params
	s, _ := json.Marshal(struct {
		Backend, Model, Tokenizer, RequestRate, Burstiness string
		NumPrompts, MaxConcurrency, Requests               int
		RampUp                                             string
		RampUpStart, RampUpEnd                             int
		SelfTimed, Pooling                                 bool
	}{
		p.Backend, p.ModelID, p.TokenizerID, settings.RequestRate, settings.Burstiness,
		p.NumPrompts, p.MaxConcurrency, requests.n,
		p.RampUpStrategy, p.RampUpStartRPS, p.RampUpEndRPS,
		p.SelfTimed, settings.Pooling,
	})
	h.Write(s)
	h.Write(requests.h.Sum(nil))
	var b [8]byte
	for _, o := range offsets {
		binary.LittleEndian.PutUint64(b[:], uint64(o))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// RequestsDigest is what every request of a run brings to RunDigest, taken
// request by request as they are built: every agent builds every request,
// though it keeps only its share.
type RequestsDigest struct {
	h hash.Hash
	n int
}

// NewRequestsDigest returns the digest of no request.
func NewRequestsDigest() *RequestsDigest { return &RequestsDigest{h: sha256.New()} }

// Add takes the next request's prompt length and input count.
func (d *RequestsDigest) Add(promptLen, numInputSequences int) {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(promptLen))
	binary.LittleEndian.PutUint64(b[8:], uint64(numInputSequences))
	d.h.Write(b[:])
	d.n++
}

// StatisticsDigest identifies what the merge computes: the settings of
// the partials less the output-only ones (the merge takes agent 0's
// --result-dir, --save-detailed and the like).
func StatisticsDigest(settings PartialSettings) string {
	key, _ := settings.statisticsKey()
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:])
}

// agentPartial is this agent's share of the run (res, its unsent
// requests already dropped) with every time moved onto the shared clock:
// run time 0 is the announced start on agent 0's clock. A time t of this
// agent's run is at wall time Start + t here, so at Start + t − offset on
// agent 0's clock. options gives the metric settings of the shifted
// results, facts each request's id and expected output length, idPrefix
// the --request-id-prefix those ids mostly are the index after. The
// records are read from res's log each time the partial is written.
func (s *Session) agentPartial(res *engine.Result, settings PartialSettings, numRequests int,
	options func() metrics.ComputeOptions, facts RequestFacts, idPrefix string) *Partial {
	memory := agentMemory(s.index, res.Data.Log) // on the run's own clock, before the shift
	start := s.start
	shift := res.Start.UnixNano() - start.Clock.OffsetNs - start.StartUnixNs
	move := func(rr *metrics.RequestResult) {
		if rr.ArrivalNs != 0 {
			rr.ArrivalNs += shift
		}
		if rr.StartNs != 0 {
			rr.StartNs += shift
		}
	}
	for i := range res.Probes {
		move(&res.Probes[i])
	}
	opts := options()
	clock := start.Clock
	clock.StartLateNs = res.ScheduleStartNs + shift
	h := PartialHeader{
		ClusterSize: s.size, ClusterIndex: s.index, NumRequests: numRequests,
		Settings: settings, DurationNs: res.ScheduleStartNs + shift + res.Data.DurationNs,
		Cancelled: res.Cancelled, Clock: clock, Health: report.NewSidecarHealth(res),
		RequestIDPrefix: idPrefix,
	}
	h.ServerMessages, h.ServerMessagesRest = res.Data.ServerMessages.Top(maxMessageTexts)
	for _, sh := range res.Health.Shards {
		h.RTTs = append(h.RTTs, sh.RTTs...)
	}
	p := &Partial{Header: h, Records: logRecords(res.Data.Log, opts.CountTokens, opts.InputAudioSeconds, facts, move), Probes: res.Probes}
	if p.Header.Memory = readRSS(memory); p.Header.Memory != nil {
		p.Header.Memory.Sampled = report.NewSidecarMemory(res.Health.Memory)
	}
	// The agent's own health leaves its memory to Memory.
	p.Header.Health.Memory = nil
	return p
}

// RampUpChanges are the ramp's whole-rate steps as a single host records
// them (rampUpEvents), as the result JSON writes them.
func RampUpChanges(startRPS int, startUnixNs int64, offsets []int64, rates []float64) []pyout.RPSChange {
	var out []pyout.RPSChange
	for _, ev := range rampUpEvents(startRPS, startUnixNs, offsets, rates) {
		out = append(out, pyout.RPSChange{RPS: ev.RPS, Timestamp: py.ISOFormat(ev.At)})
	}
	return out
}

// rampUpEvents are the ramp's whole-rate steps as a single host records
// them: the start rate at the start, then each whole rate at the release
// of the first request that reached it (on the schedule, agent 0's clock).
func rampUpEvents(startRPS int, startUnixNs int64, offsets []int64, rates []float64) []engine.RampUpEvent {
	at := func(ns int64) time.Time { return time.Unix(0, ns) }
	events := []engine.RampUpEvent{{RPS: startRPS, At: at(startUnixNs)}}
	last := startRPS
	for i, rate := range rates {
		for v := last + 1; v <= int(rate); v++ {
			events = append(events, engine.RampUpEvent{RPS: v, At: at(startUnixNs + offsets[i])})
		}
		last = max(last, int(rate))
	}
	return events
}

// PartialPath is where agent index of a cluster of size saves its
// partial for --save-partial path: path itself for a cluster of one, else
// path with ".agent-K" before its extension (partial.bin →
// partial.agent-2.bin), so that agents sharing a directory never
// overwrite each other's.
func PartialPath(path string, size, index int) string {
	if size <= 1 {
		return path
	}
	ext := filepath.Ext(path)
	if ext == filepath.Base(path) { // a name such as ".partial"
		ext = ""
	}
	return fmt.Sprintf("%s.agent-%d%s", strings.TrimSuffix(path, ext), index, ext)
}

// SavePartialFile writes p to path (--save-partial).
func SavePartialFile(path string, p *Partial) error {
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
