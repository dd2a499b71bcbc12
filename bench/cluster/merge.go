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
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
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
	if lead.Settings.AudioSeconds {
		m.Options.InputAudioSeconds = make([]float64, n)
	}
	m.Data.Results = make([]metrics.RequestResult, n)
	m.RequestIDs, m.ExpectedOutputLens = make([]string, n), make([]int, n)
	for i := range byIndex[0].Probes {
		m.Probes = append(m.Probes, byIndex[0].Probes[i].RequestResult)
	}
	params.Probe = metrics.ComputeProbes(m.Probes)
	seen := make([]bool, n)
	var counted map[string]int
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
				return nil, fmt.Errorf("merge: agent %d holds request %d, which is agent %d's (request i goes to agent i mod %d)",
					h.ClusterIndex, rec.Index, rec.Index%size, size)
			case seen[rec.Index]:
				return nil, fmt.Errorf("merge: agent %d holds request %d twice", h.ClusterIndex, rec.Index)
			}
			seen[rec.Index] = true
			m.Data.Results[rec.Index] = rec.RequestResult
			m.RequestIDs[rec.Index], m.ExpectedOutputLens[rec.Index] = rec.RequestID, rec.ExpectedOutputLen
			if m.Options.InputAudioSeconds != nil {
				m.Options.InputAudioSeconds[rec.Index] = rec.AudioSec
			}
			if rec.Counted >= 0 {
				if counted == nil {
					counted = make(map[string]int)
				}
				counted[rec.GeneratedText] = rec.Counted
			}
		}
	}
	kept := m.Data.Results[:0]
	for i, ok := range seen {
		switch {
		case ok:
			kept = append(kept, m.Data.Results[i])
		case !m.Cancelled:
			return nil, fmt.Errorf("merge: request %d is in no partial (agent %d's share)", i, i%size)
		}
	}
	// An interrupted run leaves out the requests it never sent, as a
	// single host does.
	m.Data.Results = kept
	if m.Cancelled {
		outcome.DropUnsent(&m.Data)
		if byRequest := m.Options.InputAudioSeconds; byRequest != nil {
			m.Options.InputAudioSeconds = make([]float64, len(m.Data.Results))
			for i, r := range m.Data.Results {
				m.Options.InputAudioSeconds[i] = byRequest[r.Index]
			}
		}
	}
	if counted != nil {
		// Only texts the agents counted are asked for: a success whose
		// usage gave no output token count, counted with the tokenizer
		// where it ran.
		m.Options.CountTokens = func(text string) int { return counted[text] }
	}
	return m, nil
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

// WriteMerged prints a merged run as a single run prints it (warnings on
// stderr, Python's block, the --breakdown and --per-token-itl blocks) with the cluster's clock
// figures on stderr, and saves the result JSON and its sidecar as the
// run's flags asked; now gives the result's date.
func WriteMerged(stdout, stderr io.Writer, m *MergedRun, now time.Time) (*outcome.Outcome, error) {
	summary, err := metrics.Compute(&m.Data, m.Options)
	if err != nil {
		return nil, err
	}
	if err := pyout.WriteWarnings(stderr, summary); err != nil {
		return nil, err
	}
	if err := pyout.WriteResult(stdout, summary, m.Params); err != nil {
		return nil, err
	}
	breakdown := metrics.ComputeBreakdown(m.Data.Results, m.Options.Percentiles)
	if m.Breakdown {
		if err := report.WriteBreakdown(stdout, breakdown); err != nil {
			return nil, err
		}
	}
	var perToken *report.SidecarPerToken
	if m.PerTokenITL {
		if perToken, err = report.PerTokenOutputs(stdout, stderr, m.Data.Results, m.Options.Percentiles, summary.ITL, m.Params.SaveDetailed); err != nil {
			return nil, err
		}
	}
	writeClusterClocks(stderr, m.Agents)
	out := &outcome.Outcome{Summary: summary, Data: &m.Data, Params: m.Params, Options: m.Options, Cancelled: m.Cancelled}
	p := m.Params
	if err := pyout.CheckMetadata(p.Metadata); err != nil {
		return out, err
	}
	if !p.SaveResult && !p.AppendResult {
		return out, nil
	}
	res, err := pyout.BuildResult(summary, &m.Data, p, now)
	if err != nil {
		return out, err
	}
	name, err := pyout.ResultFilename(&p.RunSettings, res.Date)
	if err != nil {
		return out, err
	}
	out.ResultPath = name
	if err := pyout.SaveResult(name, res, p.AppendResult); err != nil {
		return out, fmt.Errorf("saving results to %s: %w", name, err)
	}
	out.Files = append(out.Files, name)
	sc := &report.Sidecar{Version: report.SidecarVersion, Breakdown: report.NewSidecarBreakdown(m.Data.Results, breakdown, p.SaveDetailed), PerToken: perToken}
	m.Account(sc)
	m.accountRequests(sc, summary)
	if err := report.SaveSidecar(report.SidecarPath(name), sc, p.AppendResult); err != nil {
		return out, err
	}
	out.Files = append(out.Files, report.SidecarPath(name))
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

// accountRequests is what `stampede merge` computes from the records
// alone, as a run computes it (bench's writeBlocks): the failed requests
// grouped, the server's token counts checked, the first tokens and the
// reasoning. What agent 0 read from the server beside the run (its
// /metrics, prefix cache and spans) is in agent 0's own sidecar only.
func (m *MergedRun) accountRequests(sc *report.Sidecar, s *metrics.Summary) {
	results := m.Data.Results
	at := func(i int) int { return min(max(i, 0), len(m.RequestIDs)-1) }
	sc.Errors = report.NewSidecarErrors(metrics.GroupErrors(results), m.Agents[0].URL,
		func(i int) string { return m.RequestIDs[at(i)] })
	if !s.Pooling {
		sc.Usage = report.NewSidecarUsage(metrics.CheckUsage(results, s.OutputLens,
			func(i int) int { return m.ExpectedOutputLens[at(i)] }))
	}
	pct, detailed := m.Options.Percentiles, m.Params.SaveDetailed
	sc.FirstTokens = report.NewSidecarFirstTokens(results, pct, detailed)
	sc.Reasoning = report.NewSidecarReasoning(results, metrics.ComputeReasoning(results, pct), detailed)
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
