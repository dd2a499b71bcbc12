package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
)

// MergedRun is a whole run put back together from its partials: what one
// host that had sent every request would have measured.
type MergedRun struct {
	Data    metrics.RunData
	Params  *pyout.ReportParams
	Options metrics.ComputeOptions
	// Breakdown asks for the --breakdown block, PerTokenITL for the
	// --per-token-itl block.
	Breakdown, PerTokenITL bool
	Cancelled              bool
	// Agents holds each partial's header, by cluster index.
	Agents []PartialHeader
	// RequestIDs and ExpectedOutputLens are by request index: the
	// x-request-id each agent sent, the dataset's output length.
	RequestIDs         []string
	ExpectedOutputLens []int
	// Probes are agent 0's side probes, on the shared clock.
	Probes []metrics.RequestResult
	// Server is what agent 0 read from the server beside the run; nil
	// when its partial carries none (a version-2 one, or none read).
	Server *ServerReadings
}

// MergePartials joins the partials of one run: one partial per cluster
// index, with equal settings, that together hold every request exactly
// once. Records are concatenated in request order (never averaged), the
// duration is the longest agent's, and the server messages add up.
func MergePartials(parts []*Partial) (*MergedRun, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("merge: no partial results given")
	}
	first := &parts[0].Header
	size, n := first.ClusterSize, first.NumRequests
	byIndex := make([]*Partial, size)
	settings, err := first.Settings.statisticsKey()
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		h := &p.Header
		if h.ClusterSize != size || h.NumRequests != n {
			return nil, fmt.Errorf("merge: agent %d ran a cluster of %d over %d requests, agent %d one of %d over %d: the partials come from different runs",
				h.ClusterIndex, h.ClusterSize, h.NumRequests, first.ClusterIndex, size, n)
		}
		if byIndex[h.ClusterIndex] != nil {
			return nil, fmt.Errorf("merge: two partials of agent %d", h.ClusterIndex)
		}
		byIndex[h.ClusterIndex] = p
		s, err := h.Settings.statisticsKey()
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(s, settings) {
			return nil, fmt.Errorf("merge: agent %d's settings differ from agent %d's (every agent must run the same flags; the output flags may differ, agent 0's apply):\n  %s\n  %s",
				h.ClusterIndex, first.ClusterIndex, s, settings)
		}
	}
	var missing []string
	for i, p := range byIndex {
		if p == nil {
			missing = append(missing, fmt.Sprint(i))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("merge: the partials of agent(s) %s of %d are missing", strings.Join(missing, ", "), size)
	}

	lead := &byIndex[0].Header
	params, err := lead.Settings.reportParams()
	if err != nil {
		return nil, err
	}
	params.RPSChangeEvents = lead.RPSChangeEvents
	m := &MergedRun{Params: params, Breakdown: lead.Settings.Breakdown, PerTokenITL: lead.Settings.PerTokenITL}
	m.Options = metrics.ComputeOptions{
		Pooling: lead.Settings.Pooling, Percentiles: lead.Settings.Percentiles, Goodput: lead.Settings.Goodput,
		ClientQueue: lead.Settings.ClientQueue, QueueInclusiveE2EL: lead.Settings.QueueInclusiveE2EL,
	}
	var audio []float64
	if lead.Settings.AudioSeconds {
		audio = make([]float64, n)
		m.Options.InputAudioSeconds = func(index int) float64 {
			if index < 0 || index >= len(audio) {
				return 0
			}
			return audio[index]
		}
	}
	m.RequestIDs, m.ExpectedOutputLens = make([]string, n), make([]int, n)
	for i := range byIndex[0].Probes {
		m.Probes = append(m.Probes, byIndex[0].Probes[i].RequestResult)
	}
	params.Probe = metrics.ComputeProbes(m.Probes)
	if m.Server = lead.Server; m.Server != nil {
		params.SpecDecode, params.Diffusion = m.Server.SpecDecode, m.Server.Diffusion
	}
	// The records go through a spool, as a run's do, and are sorted by
	// request: the merged run is a log like a single host's.
	spool := metrics.NewSpool(metrics.LogConfig{})
	w := spool.Writer()
	seen := make([]bool, n)
	for _, p := range byIndex {
		h := &p.Header
		m.Agents = append(m.Agents, *h)
		m.Data.DurationNs = max(m.Data.DurationNs, h.DurationNs)
		m.Cancelled = m.Cancelled || h.Cancelled
		m.Data.ServerMessages.AddCounts(h.ServerMessages, h.ServerMessagesRest)
		for i := range p.Records {
			rec := &p.Records[i]
			switch {
			case rec.Index%size != h.ClusterIndex:
				w.Flush()
				spool.Close()
				return nil, fmt.Errorf("merge: agent %d holds request %d, which is agent %d's (request i goes to agent i mod %d)",
					h.ClusterIndex, rec.Index, rec.Index%size, size)
			case seen[rec.Index]:
				w.Flush()
				spool.Close()
				return nil, fmt.Errorf("merge: agent %d holds request %d twice", h.ClusterIndex, rec.Index)
			}
			seen[rec.Index] = true
			m.RequestIDs[rec.Index], m.ExpectedOutputLens[rec.Index] = rec.RequestID, rec.ExpectedOutputLen
			if audio != nil {
				audio[rec.Index] = rec.AudioSec
			}
			r := rec.RequestResult
			if rec.Counted >= 0 {
				// Counted where the agent's tokenizer ran: the output
				// length of a success whose usage gave none.
				r.TextCounted, r.TextTokens = true, rec.Counted
			}
			w.Append(&r)
		}
	}
	w.Flush()
	for i, ok := range seen {
		if !ok && !m.Cancelled {
			spool.Close()
			return nil, fmt.Errorf("merge: request %d is in no partial (agent %d's share)", i, i%size)
		}
	}
	log, err := spool.Sort(metrics.SortOptions{Requests: n, KeepText: true})
	if err != nil {
		return nil, err
	}
	m.Data.Log = log
	// An interrupted run leaves out the requests it never sent, as a
	// single host does.
	if m.Cancelled {
		outcome.DropUnsent(&m.Data)
	}
	return m, nil
}

// MergedOutputs are the settings of what agent 0 computes from the
// merged records alone beside the result (the steady state, the trimmed
// block, the reasoning block), which the records themselves do not tell.
type MergedOutputs struct {
	SteadyState          bool     `json:"steady_state,omitempty"`
	SteadyStateThreshold float64  `json:"steady_state_threshold"`
	SteadyStateMinWindow *float64 `json:"steady_state_min_window,omitempty"`
	WarmupTime           float64  `json:"warmup_time,omitempty"`
	CooldownTime         float64  `json:"cooldown_time,omitempty"`
	ReasoningMetrics     bool     `json:"reasoning_metrics,omitempty"`
}

// OutputsOf is c's MergedOutputs.
func OutputsOf(c *plan.Plan) *MergedOutputs {
	return &MergedOutputs{
		SteadyState: c.SteadyState, SteadyStateThreshold: c.SteadyStateThreshold, SteadyStateMinWindow: c.SteadyStateMinWindow,
		WarmupTime: c.WarmupTime, CooldownTime: c.CooldownTime, ReasoningMetrics: c.ReasoningMetrics,
	}
}

// defaultSteadyStateThreshold is --steady-state-threshold's default, for
// a partial saved without its outputs' settings.
const defaultSteadyStateThreshold = 0.95

// Plan is the settings of the merged run's outputs, as agent 0 held them:
// what bench's phases read once the run is measured (the blocks, the
// sidecar, the result's name). Nothing in it can send a request.
func (m *MergedRun) Plan() *plan.Plan {
	lead := &m.Agents[0]
	p, c := m.Params, &plan.Plan{}
	c.SelectedPercentiles, c.SelectedPercentileMetrics = m.Options.Percentiles, p.PercentileMetrics
	c.Breakdown, c.PerTokenITL = m.Breakdown, m.PerTokenITL
	c.SaveResult, c.AppendResult, c.SaveDetailed = p.SaveResult, p.AppendResult, p.SaveDetailed
	c.ResultDir, c.ResultFilename, c.Label = p.ResultDir, p.ResultFilename, p.Label
	c.RequestRate, c.Burstiness, c.SelfTimed = p.RequestRate, p.Burstiness, p.SelfTimed
	if m.Options.ClientQueue {
		c.MaxConcurrency = &p.MaxConcurrency
	}
	c.RampUpStrategy = p.RampUpStrategy
	c.APIURL, c.FrontEndURLs = lead.URL, lead.Settings.FrontEnds
	c.SteadyStateThreshold = defaultSteadyStateThreshold
	if o := lead.Settings.Outputs; o != nil {
		c.SteadyState, c.SteadyStateThreshold, c.SteadyStateMinWindow = o.SteadyState, o.SteadyStateThreshold, o.SteadyStateMinWindow
		c.WarmupTime, c.CooldownTime, c.ReasoningMetrics = o.WarmupTime, o.CooldownTime, o.ReasoningMetrics
	}
	return c
}

// Result is the merged run as the result one engine would have given for
// the whole schedule: every request, time 0 the announced start (start,
// on agent 0's clock), agent 0's probes and every connection's RTTs.
func (m *MergedRun) Result(start time.Time) *engine.Result {
	whole := &engine.Result{Data: m.Data, Start: start, Cancelled: m.Cancelled, Probes: m.Probes}
	for _, h := range m.Agents {
		whole.Shards += h.Health.Shards
		whole.Health.Shards = append(whole.Health.Shards, engine.ShardHealth{RTTs: h.RTTs})
	}
	return whole
}

// ReadPartialFiles reads the partial files at paths (ExpandPartialPaths).
func ReadPartialFiles(paths []string) ([]*Partial, error) {
	paths, err := ExpandPartialPaths(paths)
	if err != nil {
		return nil, err
	}
	parts := make([]*Partial, 0, len(paths))
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		p, err := ReadPartial(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// ExpandPartialPaths replaces each path that names no file by the
// agents' files PartialPath made of it (partial.bin: partial.agent-0.bin,
// partial.agent-1.bin, …), so that a cluster's --save-partial is merged
// by the name it was given.
func ExpandPartialPaths(paths []string) ([]string, error) {
	var out []string
	for _, path := range paths {
		_, err := os.Stat(path)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			out = append(out, path)
			continue
		}
		ext := filepath.Ext(path)
		if ext == filepath.Base(path) {
			ext = ""
		}
		pattern := strings.TrimSuffix(path, ext) + ".agent-*" + ext
		found, _ := filepath.Glob(pattern)
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no such file, nor any agent's file %s", path, pattern)
		}
		out = append(out, found...)
	}
	return out, nil
}

// Account puts the cluster's own into a merged run's sidecar: the agents'
// health merged, agent 0's fingerprint, and each agent's clock, health
// and, where its build or host differs from agent 0's, its client.
func (m *MergedRun) Account(sc *report.Sidecar) {
	sc.Health = mergedHealth(m.Agents)
	sc.Cluster = newSidecarCluster(m.Agents)
	if sc.Fingerprint == nil {
		sc.Fingerprint = m.Agents[0].Fingerprint
	}
}

// mergedHealth is the agents' health merged (report.MergeHealth), with
// each agent's own memory where its partial carried it.
func mergedHealth(agents []PartialHeader) report.SidecarHealth {
	hs := make([]report.SidecarHealth, len(agents))
	var memory []report.SidecarAgentMemory
	for i, a := range agents {
		hs[i] = a.Health
		if a.Memory != nil {
			m := *a.Memory
			m.Index = a.ClusterIndex // the header's place, whatever the agent wrote
			memory = append(memory, m)
		}
	}
	h := report.MergeHealth(hs)
	h.Agents = memory
	return h
}

func newSidecarCluster(agents []PartialHeader) *report.SidecarCluster {
	c := &report.SidecarCluster{Size: len(agents)}
	lead := clientOf(agents[0])
	for _, h := range agents {
		a := report.SidecarAgent{Index: h.ClusterIndex, Requests: int(h.Health.RequestsSent), Clock: h.Clock, Health: h.Health}
		if client := clientOf(h); client["stampede"] != lead["stampede"] || client["host"] != lead["host"] {
			a.Client = client
		}
		c.Agents = append(c.Agents, a)
	}
	return c
}

// clientOf is an agent's client fingerprint; nil when it sent none.
func clientOf(h PartialHeader) map[string]string {
	if h.Fingerprint == nil {
		return nil
	}
	return h.Fingerprint.Client
}

// writeClusterClocks prints each agent's clock offset and its error bound
// on stderr, beside the health line; nothing for a one-agent run.
func writeClusterClocks(w io.Writer, agents []PartialHeader) {
	if len(agents) < 2 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "stampede: cluster of %d agents, clocks against agent 0:", len(agents))
	for _, a := range agents {
		c := a.Clock
		fmt.Fprintf(&b, " [%d] offset %s ± %s (min RTT %s, %d probes, started %s late)", a.ClusterIndex,
			time.Duration(c.OffsetNs), time.Duration(c.ErrorBoundNs), time.Duration(c.MinRTTNs), c.Probes, time.Duration(c.StartLateNs))
	}
	fmt.Fprintln(w, b.String())
}
