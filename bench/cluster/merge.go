package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
)

// MergedRun is a whole run put back together from its partials: what one
// host that had sent every request would have measured, or, when agents
// delivered nothing (Missing), what the others measured.
type MergedRun struct {
	Data    metrics.RunData
	Params  *pyout.ReportParams
	Options metrics.ComputeOptions
	// Breakdown asks for the --breakdown block, PerTokenITL for the
	// --per-token-itl block.
	Breakdown, PerTokenITL bool
	Cancelled              bool
	// Size is the cluster's size.
	Size int
	// Agents holds the header of each agent that delivered its partial,
	// by cluster index (agent 0's first).
	Agents []PartialHeader
	// Missing are the agents whose partial did not arrive whole, by
	// index: none of their requests are in Data.
	Missing []MissingAgent
	// Probes are agent 0's side probes, on the shared clock.
	Probes []metrics.RequestResult
	// Server is what agent 0 read from the server beside the run; nil
	// when its partial carries none (a version-2 one, or none read).
	Server *ServerReadings

	shares []*share // by cluster index
}

// MissingAgent is an agent whose partial result did not arrive whole:
// the requests of its share, and why.
type MissingAgent struct {
	Index    int
	Requests int
	Reason   string
}

// RequestID is the x-request-id request index was sent with, as its
// agent drew it.
func (m *MergedRun) RequestID(index int) string {
	s, pos := m.shareOf(index)
	if s == nil {
		return ""
	}
	return s.id(index, pos)
}

// RequestIDIs reports whether request index was sent as id, without
// making the id's string.
func (m *MergedRun) RequestIDIs(index int, id string) bool {
	s, pos := m.shareOf(index)
	if s == nil {
		return id == ""
	}
	return s.idIs(index, pos, id)
}

// ExpectedOutputLen is request index's expected output length, as the
// dataset of its agent gave it.
func (m *MergedRun) ExpectedOutputLen(index int) int {
	s, pos := m.shareOf(index)
	if s == nil {
		return 0
	}
	return s.expected.at(pos)
}

// Requests is the number of requests in the whole run.
func (m *MergedRun) Requests() int {
	if len(m.Agents) == 0 {
		return 0
	}
	return m.Agents[0].NumRequests
}

// shareOf is the share holding request index and its position there;
// nil for an index outside the run or of an agent that delivered nothing.
func (m *MergedRun) shareOf(index int) (*share, int) {
	if m.Size == 0 || index < 0 || index >= m.Requests() {
		return nil, 0
	}
	s := m.shares[index%m.Size]
	if s == nil || s.missing {
		return nil, 0
	}
	return s, index / m.Size
}

// A share is one agent's part of a merge: its header, the writer its
// records go to the merged spool by, which of its requests arrived, and
// the facts that travel beside its records. One goroutine feeds it.
type share struct {
	index, size int
	n           int // the requests of its share
	header      *PartialHeader
	writer      *metrics.LogWriter
	seen        []uint64 // by position in the share: request index·size + index
	count       int
	missing     bool
	prefix      string
	ids         map[int]string // ids that are not prefix + index, by request
	expected    outputLens
	audio       []float64 // by position, with Settings.AudioSeconds
	digits      []byte
}

// add takes one record of the share and its facts: its request id as
// tagged (idDerived, idNone, or an id of its own).
func (s *share) add(rec *PartialRecord, raw []byte, idTag uint64, idOwn []byte) error {
	i := rec.Index
	pos := i / s.size
	switch {
	case i%s.size != s.index:
		return fmt.Errorf("merge: agent %d holds request %d, which is agent %d's (request i goes to agent i mod %d)", s.index, i, i%s.size, s.size)
	case i < 0 || pos >= s.n:
		return fmt.Errorf("merge: agent %d holds request %d of a run of %d", s.index, i, s.n*s.size)
	case s.arrived(pos):
		return fmt.Errorf("merge: agent %d holds request %d twice", s.index, i)
	}
	s.seen[pos/64] |= 1 << (pos % 64)
	s.count++
	switch idTag {
	case idDerived:
	case idNone:
		s.setID(i, "")
	default:
		s.setID(i, string(idOwn))
	}
	s.expected.set(pos, rec.ExpectedOutputLen, s.n)
	if s.audio != nil {
		s.audio[pos] = rec.AudioSec
	}
	if raw != nil {
		s.writer.AppendEncoded(raw)
	} else {
		s.writer.Append(&rec.RequestResult)
	}
	return nil
}

func (s *share) setID(index int, id string) {
	if s.ids == nil {
		s.ids = make(map[int]string)
	}
	s.ids[index] = id
}

func (s *share) id(index, pos int) string {
	if id, ok := s.ids[index]; ok {
		return id
	}
	if !s.arrived(pos) || s.prefix == "" {
		return ""
	}
	return s.prefix + strconv.Itoa(index)
}

func (s *share) idIs(index, pos int, id string) bool {
	if own, ok := s.ids[index]; ok {
		return own == id
	}
	if !s.arrived(pos) || s.prefix == "" {
		return id == ""
	}
	if !strings.HasPrefix(id, s.prefix) {
		return false
	}
	s.digits = strconv.AppendInt(s.digits[:0], int64(index), 10)
	return id[len(s.prefix):] == string(s.digits)
}

func (s *share) arrived(pos int) bool {
	return pos/64 < len(s.seen) && s.seen[pos/64]&(1<<(pos%64)) != 0
}

// readFrom adds every record of p to the share.
func (s *share) readFrom(p *PartialReader) error {
	for {
		err := p.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		tag, own := p.idTag, p.idOwn
		if p.legacy != nil {
			tag, own = idOwn, []byte(p.rec.RequestID)
			if p.rec.RequestID == "" {
				tag = idNone
			}
		}
		if err := s.add(&p.rec, p.raw, tag, own); err != nil {
			return err
		}
	}
}

// addRecords adds the records of a partial held here (agent 0's own).
func (s *share) addRecords(p *Partial) error {
	if p.Records == nil {
		return nil
	}
	w := itemWriter{prefix: s.prefix}
	var addErr error
	err := p.Records(func(rec *PartialRecord) bool {
		tag, own := uint64(idOwn), []byte(nil)
		switch {
		case w.derived(rec.RequestID, rec.Index):
			tag = idDerived
		case rec.RequestID == "":
			tag = idNone
		default:
			own = []byte(rec.RequestID)
		}
		addErr = s.add(rec, nil, tag, own)
		return addErr == nil
	})
	if addErr != nil {
		return addErr
	}
	return err
}

// firstMissing is the first request of the share that did not arrive;
// -1 when all did.
func (s *share) firstMissing() int {
	for pos := range s.n {
		if !s.arrived(pos) {
			return pos*s.size + s.index
		}
	}
	return -1
}

// outputLens are a share's expected output lengths by position: one
// value while they all agree (a dataset of one output length, the usual
// case), an array of them once one differs. A position never set reads as
// the common value.
type outputLens struct {
	common int32
	any    bool
	all    []int32
}

func (l *outputLens) set(pos, v, n int) {
	switch {
	case l.all != nil:
		l.all[pos] = int32(v)
	case !l.any:
		l.common, l.any = int32(v), true
	case int32(v) != l.common:
		l.all = make([]int32, n)
		for i := range l.all {
			l.all[i] = l.common
		}
		l.all[pos] = int32(v)
	}
}

func (l *outputLens) at(pos int) int {
	if l.all != nil && pos < len(l.all) {
		return int(l.all[pos])
	}
	return int(l.common)
}

// A merger joins the partials of one run into one spool, as they arrive:
// each agent's records through a share of its own (shares may be fed
// from goroutines of their own), then one sort.
type merger struct {
	size, n int
	key     []byte // the statistics' settings every agent must share
	keyOf   int    // whose settings key is
	audio   bool
	spool   *metrics.Spool
	mu      sync.Mutex
	shares  []*share
	// probes are agent 0's side probes.
	probes []metrics.RequestResult
}

// newMerger starts the merge of the run first's header describes.
func newMerger(first *PartialHeader) (*merger, error) {
	key, err := first.Settings.statisticsKey()
	if err != nil {
		return nil, err
	}
	return &merger{size: first.ClusterSize, n: first.NumRequests, key: key, keyOf: first.ClusterIndex,
		audio: first.Settings.AudioSeconds, spool: metrics.NewSpool(metrics.LogConfig{}), shares: make([]*share, first.ClusterSize)}, nil
}

// admit checks that h is of this run and another agent's than those
// admitted, and returns its share.
func (m *merger) admit(h *PartialHeader) (*share, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h.ClusterSize != m.size || h.NumRequests != m.n {
		return nil, fmt.Errorf("merge: agent %d ran a cluster of %d over %d requests, agent %d one of %d over %d: the partials come from different runs",
			h.ClusterIndex, h.ClusterSize, h.NumRequests, m.keyOf, m.size, m.n)
	}
	if m.shares[h.ClusterIndex] != nil {
		return nil, fmt.Errorf("merge: two partials of agent %d", h.ClusterIndex)
	}
	key, err := h.Settings.statisticsKey()
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(key, m.key) {
		return nil, fmt.Errorf("merge: agent %d's settings differ from agent %d's (every agent must run the same flags; the output flags may differ, agent 0's apply):\n  %s\n  %s",
			h.ClusterIndex, m.keyOf, key, m.key)
	}
	k := h.ClusterIndex
	n := m.shareSize(k)
	s := &share{index: k, size: m.size, n: n, header: h, writer: m.spool.Writer(), seen: make([]uint64, (n+63)/64), prefix: h.RequestIDPrefix}
	if m.audio {
		s.audio = make([]float64, n)
	}
	m.shares[k] = s
	return s, nil
}

// shareSize is the number of requests of agent k's share.
func (m *merger) shareSize(k int) int { return (m.n - k + m.size - 1) / m.size }

// abandon ends a merge that failed: its spool's records go.
func (m *merger) abandon() {
	for _, s := range m.shares {
		if s != nil {
			s.writer.Flush()
		}
	}
	m.spool.Close()
	if log, err := m.spool.Sort(metrics.SortOptions{}); err == nil {
		log.Close()
	}
}

// finish sorts the merged records into the run, once every share has
// been fed; missing are the agents whose partials did not arrive whole
// (by index, each with its reason), left out of the run. Agent 0 must
// have delivered.
func (m *merger) finish(missing map[int]error) (*MergedRun, error) {
	for k, s := range m.shares {
		if s == nil && missing[k] == nil {
			missing[k] = errors.New("no partial result")
		}
	}
	for k := range missing {
		if s := m.shares[k]; s != nil {
			s.missing = true
		}
	}
	lead := m.shares[0]
	if lead == nil || lead.missing {
		m.abandon()
		return nil, fmt.Errorf("merge: agent 0's partial is missing: %v", missing[0])
	}
	params, err := lead.header.Settings.reportParams()
	if err != nil {
		m.abandon()
		return nil, err
	}
	params.RPSChangeEvents = lead.header.RPSChangeEvents
	mr := &MergedRun{Params: params, Size: m.size, shares: m.shares,
		Breakdown: lead.header.Settings.Breakdown, PerTokenITL: lead.header.Settings.PerTokenITL}
	settings := &lead.header.Settings
	mr.Options = metrics.ComputeOptions{
		Pooling: settings.Pooling, Percentiles: settings.Percentiles, Goodput: settings.Goodput,
		ClientQueue: settings.ClientQueue, QueueInclusiveE2EL: settings.QueueInclusiveE2EL,
	}
	if settings.AudioSeconds {
		mr.Options.InputAudioSeconds = func(index int) float64 {
			s, pos := mr.shareOf(index)
			if s == nil {
				return 0
			}
			return s.audio[pos]
		}
	}
	mr.Probes = m.probes
	params.Probe = metrics.ComputeProbes(mr.Probes)
	if mr.Server = lead.header.Server; mr.Server != nil {
		params.SpecDecode, params.Diffusion = mr.Server.SpecDecode, mr.Server.Diffusion
	}
	for k, s := range m.shares {
		if s == nil || s.missing {
			if s != nil {
				s.writer.Flush()
			}
			mr.Missing = append(mr.Missing, MissingAgent{Index: k, Requests: m.shareSize(k), Reason: missing[k].Error()})
			continue
		}
		s.writer.Flush()
		h := s.header
		mr.Agents = append(mr.Agents, *h)
		mr.Data.DurationNs = max(mr.Data.DurationNs, h.DurationNs)
		mr.Cancelled = mr.Cancelled || h.Cancelled
		mr.Data.ServerMessages.AddCounts(h.ServerMessages, h.ServerMessagesRest)
	}
	for _, s := range m.shares {
		if s == nil || s.missing {
			continue
		}
		if first := s.firstMissing(); first >= 0 && !mr.Cancelled {
			m.abandon()
			return nil, fmt.Errorf("merge: request %d is in no partial (agent %d's share)", first, s.index)
		}
	}
	log, err := m.spool.Sort(metrics.SortOptions{Requests: m.n, KeepText: true})
	if err != nil {
		return nil, err
	}
	if len(mr.Missing) > 0 {
		// The requests of an agent that delivered nothing whole are not
		// in the run: neither what arrived of them nor the sort's fill.
		size := m.size
		log = log.Where(func(r *metrics.RequestResult) bool { s := m.shares[r.Index%size]; return s != nil && !s.missing })
	}
	mr.Data.Log = log
	// An interrupted run leaves out the requests it never sent, as a
	// single host does.
	if mr.Cancelled {
		outcome.DropUnsent(&mr.Data)
	}
	return mr, nil
}

// MergePartials joins the partials of one run, read one record at a time
// from their readers (OpenPartial): one partial per cluster index, with
// equal settings, that together hold every request exactly once. Records
// are concatenated in request order (never averaged), the duration is the
// longest agent's, and the server messages add up.
func MergePartials(parts []*PartialReader) (*MergedRun, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("merge: no partial results given")
	}
	m, err := newMerger(&parts[0].Header)
	if err != nil {
		return nil, err
	}
	shares := make([]*share, len(parts))
	for i, p := range parts {
		if shares[i], err = m.admit(&p.Header); err != nil {
			m.abandon()
			return nil, err
		}
	}
	var absent []string
	for k, s := range m.shares {
		if s == nil {
			absent = append(absent, fmt.Sprint(k))
		}
	}
	if len(absent) > 0 {
		m.abandon()
		return nil, fmt.Errorf("merge: the partials of agent(s) %s of %d are missing", strings.Join(absent, ", "), m.size)
	}
	for i, p := range parts {
		if err := shares[i].readFrom(p); err != nil {
			m.abandon()
			if _, bad := errors.AsType[*PartialError](err); bad && p.path != "" {
				err = fmt.Errorf("%s: %w", p.path, err)
			}
			return nil, err
		}
		if p.Probes != nil && p.Header.ClusterIndex == 0 {
			m.probes = p.Probes
		}
	}
	return m.finish(map[int]error{})
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

// MergePartialFiles merges the partial files at paths
// (ExpandPartialPaths), reading each one record at a time.
func MergePartialFiles(paths []string) (*MergedRun, error) {
	paths, err := ExpandPartialPaths(paths)
	if err != nil {
		return nil, err
	}
	parts := make([]*PartialReader, 0, len(paths))
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		p, err := OpenPartial(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		p.path = path
		parts = append(parts, p)
	}
	return MergePartials(parts)
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
	sc.Cluster = newSidecarCluster(m.Size, m.Agents, m.Missing)
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

func newSidecarCluster(size int, agents []PartialHeader, missing []MissingAgent) *report.SidecarCluster {
	c := &report.SidecarCluster{Size: size}
	for _, m := range missing {
		c.MissingAgents = append(c.MissingAgents, report.SidecarMissingAgent{Index: m.Index, Requests: m.Requests, Reason: m.Reason})
	}
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
