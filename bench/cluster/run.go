package cluster

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// Agent is one agent's part in the measured phase of a cluster run, the
// phase a single host runs alone: it turns the run's engine settings into
// this agent's share of the global schedule, joins the cluster before the
// start, and afterwards hands its partial over. Agent 0 gets back the
// whole run as one engine.Result, so that everything a single host does
// with its result (the blocks, the extras, the files) is done with the
// merged one by the same code. The methods of a nil *Agent are those of a
// single host.
type Agent struct {
	// Plan is this agent's settings (AgentPlan's).
	Plan *plan.Plan
	// Requests is how many requests the run has; Share holds this agent's
	// own, encoded: request i of the run for i mod size = index, on no
	// schedule yet. Digest is what every request brings to RunDigest;
	// TraceOffsetsNs are every request's trace times when the trace times
	// itself. Gaps and RampUp make the schedule as a single host makes it.
	Requests       int
	Share          *engine.Store
	Digest         *RequestsDigest
	TraceOffsetsNs []int64
	Gaps           engine.GapSource
	RampUp         *engine.RampUp
	// Options are the metric settings of results (bench's computeOptions).
	Options func() metrics.ComputeOptions
	// Facts give each request's x-request-id and expected output length.
	Facts RequestFacts
	// Fingerprint is this agent's (agent 0's with the server's side).
	Fingerprint *report.Fingerprint
	// SentAs is told, on agent 0 after the merge, the x-request-id each
	// request went out with (every agent draws its own prefix), so that
	// the errors' examples and the server's spans name the right ones.
	SentAs func(index int, id string)
	// Stdout hears, on agent 0, the warning that heads the block of a run
	// some agents' partials did not reach; Stderr every other line.
	Stdout io.Writer
	Stderr io.Writer
	// Saved is the partial this agent saved with --save-partial, for
	// --results-to-log's bundle.
	Saved []string

	offsets  []int64
	rates    []float64
	settings PartialSettings
	session  *Session
	merged   *MergedRun
	// lead is agent 0's partial, saved by SaveReadings once it carries
	// what agent 0 read from the server after the merge.
	lead *Partial
	// registering is set once Join is called: from there on agent 0
	// hears of this agent's failures through the protocol itself.
	registering bool
	// missing is set on agent 0 when agents delivered no partial result.
	missing *MissingAgentsError
}

// MissingAgentsError is the error of a cluster run some agents' partial
// results did not reach whole: agent 0 printed and saved the others' (the
// block headed by a warning, the sidecar's cluster.missing_agents saying
// why), and the command ends with a status of its own.
type MissingAgentsError struct {
	Size     int
	Missing  []MissingAgent
	Requests int // the whole run's
}

func (e *MissingAgentsError) Error() string {
	return fmt.Sprintf("cluster: %s delivered no partial result (cluster.missing_agents in the sidecar says why): "+
		"the result printed and saved covers the other agents' %d of the run's %d requests", e.agents(), e.covered(), e.Requests)
}

// Warning is the line that heads the block of such a run.
func (e *MissingAgentsError) Warning() string {
	return fmt.Sprintf("WARNING: %s delivered no partial result: the result below covers %d of the run's %d requests, not the whole run",
		e.agents(), e.covered(), e.Requests)
}

func (e *MissingAgentsError) agents() string {
	idx := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		idx[i] = strconv.Itoa(m.Index)
	}
	return fmt.Sprintf("agent(s) %s of %d", strings.Join(idx, ", "), e.Size)
}

func (e *MissingAgentsError) covered() int {
	n := e.Requests
	for _, m := range e.Missing {
		n -= m.Requests
	}
	return n
}

// Incomplete is agent 0's *MissingAgentsError once Gather merged a run
// some agents' partials did not reach; nil otherwise, and on every other
// agent and a single host.
func (a *Agent) Incomplete() error {
	if a == nil || a.missing == nil {
		return nil
	}
	return a.missing
}

// AgentPlan is c for agent index: agent 0 keeps every option; the others
// leave to it what one process does for the whole run beside the
// requests: the side probes (a single low-rate stream, sent by agent 0),
// the server's /metrics scrape, the profiler's start and stop, and the
// span receiver (the server exports every span to one address). The
// probe rate stays in the plan: it is one of the run's parameters.
func AgentPlan(c *plan.Plan) *plan.Plan {
	if c.AgentIndex == 0 {
		return c
	}
	p := *c
	p.ServerMetrics, p.ScrapeURL = "", ""
	p.Profile, p.ProfileBatchThreshold = false, nil
	p.OTLPReceiver = ""
	return &p
}

// SendsProbes reports whether this agent sends the side probes: agent 0
// alone, or a single host.
func (a *Agent) SendsProbes() bool { return a == nil || a.Plan.AgentIndex == 0 }

// Join makes ec this agent's share of the run: request i, with i mod
// size its index, at the time the global schedule gives it, under its
// share of --max-concurrency; then registers with the cluster and sets
// the start agent 0 announced. params are the run's report parameters.
func (a *Agent) Join(ctx context.Context, ec *engine.Config, params *pyout.ReportParams) error {
	if a == nil {
		return nil
	}
	c := a.Plan
	var err error
	a.offsets, a.rates, err = GlobalSchedule(a.Requests, a.TraceOffsetsNs, c.SelfTimed, c.RequestRate, c.Burstiness, a.RampUp, a.Gaps)
	if err != nil {
		return &py.Error{Type: "ValueError", Msg: err.Error()}
	}
	size, index := c.ClusterSize, c.AgentIndex
	// The agent's share keeps the global schedule's times.
	if err := a.Share.SetOffsetsNs(shareOf(a.offsets, size, index)); err != nil {
		return err
	}
	ec.Requests, ec.Store = nil, a.Share
	ec.SelfTimed, ec.RequestRate, ec.Gaps, ec.RampUp = true, math.Inf(1), nil, nil
	ec.MaxConcurrency = c.AgentConcurrency()

	a.settings = NewPartialSettings(params, new(a.Options()), c.Breakdown)
	a.settings.FrontEnds = c.FrontEndURLs
	a.settings.PerTokenITL = c.PerTokenITL
	a.settings.Outputs = OutputsOf(c)
	var warmLead time.Duration
	if ec.WarmConnections {
		warmLead = time.Duration(ec.MaxConcurrency+1) * WarmLeadPerConn
	}
	auth := Auth{Token: c.ClusterToken, Digest: RunDigest(a.settings, a.Digest, a.offsets), Statistics: StatisticsDigest(a.settings), From: coordinatorFrom(c)}
	if c.ClusterTokenFile != "" {
		if auth.Token, err = ReadTokenFile(c.ClusterTokenFile); err != nil {
			return err
		}
	}
	streams := ShareStreams(a.Share.Len(), ec.MaxConcurrency, c.RequestRate)
	a.registering = true
	if a.session, err = Join(ctx, c.Coordinator, size, index, auth, a.Requests, streams,
		endpoint.Seconds(c.ClusterTimeoutSec), warmLead, a.Stderr); err != nil {
		return err
	}
	ec.StartAt = a.session.StartAt()
	if index == 0 && !c.DisableTqdm {
		fmt.Fprintf(a.Stderr, "stampede: agent 0 sends %d of the run's %d requests; its progress bar counts those alone\n", a.Share.Len(), a.Requests)
	}
	return nil
}

// Refuse is err for agent c.AgentIndex of a cluster run that failed
// before it registered (a, nil before the measured phase, had not called
// Join): agent 0 is told err's text, so that the whole run stops at once
// rather than at --cluster-timeout-sec. Any other err comes back as it
// is, told to no one.
func Refuse(ctx context.Context, c *plan.Plan, a *Agent, err error, stderr io.Writer) error {
	if err == nil || !c.Clustered() || a != nil && a.registering {
		return err
	}
	token := c.ClusterToken
	if c.ClusterTokenFile != "" {
		var terr error
		if token, terr = ReadTokenFile(c.ClusterTokenFile); terr != nil {
			return err // no token, no word agent 0 would believe
		}
	}
	return refuse(ctx, c.Coordinator, Auth{Token: token, From: coordinatorFrom(c)}, c.ClusterSize, c.AgentIndex, endpoint.Seconds(c.ClusterTimeoutSec), err, stderr)
}

// coordinatorFrom names where c's coordinator came from (Auth.From): an
// agent of --cluster-local (the launcher never joins) has it from its
// launcher's environment.
func coordinatorFrom(c *plan.Plan) string {
	if c.ClusterLocal {
		return "$" + plan.LocalCoordinatorEnv
	}
	return ""
}

// shareOf is agent index's share of the run's offsets: request i's for
// i mod size = index.
func shareOf(offsets []int64, size, index int) []int64 {
	share := make([]int64, 0, (len(offsets)-index+size-1)/size)
	for i := index; i < len(offsets); i += size {
		share = append(share, offsets[i])
	}
	return share
}

// Shares reports whether request i of the run is agent index's of size.
func Shares(i, size, index int) bool { return i%size == index }

// Fail tells the other agents why the run ends (agent 0), and returns err.
func (a *Agent) Fail(err error) error {
	if a == nil || a.session == nil {
		return err
	}
	return a.session.Fail(err)
}

// Close ends the agent's connections.
func (a *Agent) Close() {
	if a != nil && a.session != nil {
		a.session.Close()
	}
}

// Gather hands this agent's share over once it ran (res): its health line
// on stderr, its partial saved with --save-partial (agent 0's later, by
// SaveReadings) and sent to agent 0.
// An agent other than 0 then returns nil: it prints nothing more. Agent 0
// returns the merged run as the result one engine would have given for
// the whole schedule: every request, time 0 the announced start (on its
// clock), its probes, the ramp's steps and every connection's RTTs. A
// single host's res comes back as it is.
func (a *Agent) Gather(ctx context.Context, res *engine.Result) (*engine.Result, error) {
	if a == nil {
		return res, nil
	}
	c := a.Plan
	report.WriteHealth(a.Stderr, res, nil)
	if res.Cancelled {
		outcome.DropUnsent(&res.Data)
	}
	part := a.session.agentPartial(res, a.settings, a.Requests, a.Options, a.Facts, c.RequestIDPrefix)
	part.Header.Fingerprint, part.Header.URL = a.Fingerprint, c.APIURL
	if c.AgentIndex == 0 && a.rates != nil {
		part.Header.RPSChangeEvents = RampUpChanges(*c.RampUpStartRPS, a.session.StartUnixNs(), a.offsets, a.rates)
	}
	if c.AgentIndex != 0 {
		if err := a.savePartial(part); err != nil {
			return nil, err
		}
	}
	merged, err := a.session.Gather(ctx, part, a.Stderr)
	if err != nil {
		if c.AgentIndex == 0 {
			// No merge, so no readings of the merged run: agent 0's own
			// share is still kept.
			if serr := a.savePartial(part); serr != nil {
				fmt.Fprintf(a.Stderr, "stampede: %v\n", serr)
			}
		}
		return nil, err
	}
	if merged == nil {
		return nil, nil
	}
	a.lead = part
	a.merged = merged
	if a.SentAs != nil {
		// Only the ids agent 0 did not send as its own dataset gives them
		// (another agent's prefix) take a string of their own here.
		for i := range merged.Requests() {
			if id, _ := a.Facts(i); !merged.RequestIDIs(i, id) {
				a.SentAs(i, merged.RequestID(i))
			}
		}
	}
	if len(merged.Missing) > 0 {
		a.missing = &MissingAgentsError{Size: merged.Size, Missing: merged.Missing, Requests: merged.Requests()}
		// The line heads Python's block, which follows on stdout.
		if a.Stdout != nil {
			fmt.Fprintln(a.Stdout, a.missing.Warning())
		}
	}
	whole := merged.Result(time.Unix(0, a.session.StartUnixNs()))
	whole.Aborted = res.Aborted
	if a.rates != nil {
		whole.RampUpEvents = rampUpEvents(*c.RampUpStartRPS, a.session.StartUnixNs(), a.offsets, a.rates)
	}
	return whole, nil
}

// SaveReadings saves agent 0's partial with --save-partial, carrying
// what it read from the server over the merged run (nil: nothing), so
// that `stampede merge` prints and saves what agent 0 did. It is called
// once those readings are made, after Gather (an interrupted run too);
// every other agent, and a single host, saved theirs already or save
// none.
func (a *Agent) SaveReadings(readings *ServerReadings) error {
	if a == nil || a.lead == nil {
		return nil
	}
	part := a.lead
	a.lead = nil
	if !readings.Empty() {
		part.Header.Server = readings
	}
	return a.savePartial(part)
}

// savePartial saves part with --save-partial at this agent's path.
func (a *Agent) savePartial(part *Partial) error {
	c := a.Plan
	if c.SavePartial == "" {
		return nil
	}
	path := PartialPath(c.SavePartial, c.ClusterSize, c.AgentIndex)
	if err := SavePartialFile(path, part); err != nil {
		return err
	}
	a.Saved = append(a.Saved, path)
	return nil
}

// MergedAgent is the agent 0 that merged m, for the phases that print and
// save a run merged after it ended (`stampede merge`): Account and
// WriteHealth are its methods of use; it joins no run.
func MergedAgent(m *MergedRun) *Agent { return &Agent{merged: m} }

// Account puts the cluster's own into agent 0's sidecar of the merged run
// (MergedRun.Account); nothing on a single host.
func (a *Agent) Account(sc *report.Sidecar) {
	if a != nil && a.merged != nil {
		a.merged.Account(sc)
	}
}

// WriteHealth prints the health line of a run on stderr: a single host's
// own; for a merged run the agents' clocks, each agent having printed its
// own health line when its share ended.
func (a *Agent) WriteHealth(w io.Writer, res *engine.Result, spans *report.ServerSpans) {
	if a == nil || a.merged == nil {
		report.WriteHealth(w, res, spans)
		return
	}
	writeClusterClocks(w, a.merged.Agents)
}
