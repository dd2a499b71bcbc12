package cluster

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
)

// TestMergeRefusesMismatchedPartials: a missing agent, a duplicate, a
// request on the wrong agent and differing settings are each named.
func TestMergeRefusesMismatchedPartials(t *testing.T) {
	base := func() []*Partial {
		recs := func(idx ...int) []PartialRecord {
			var out []PartialRecord
			for _, i := range idx {
				out = append(out, PartialRecord{RequestResult: metrics.RequestResult{Index: i, Success: true, NumInputSequences: 1}, Counted: -1})
			}
			return out
		}
		settings := NewPartialSettings(&pyout.ReportParams{RunSettings: pyout.RunSettings{Backend: "openai", RequestRate: 1, Burstiness: 1}}, &metrics.ComputeOptions{}, false)
		return []*Partial{
			{Header: PartialHeader{ClusterSize: 2, ClusterIndex: 0, NumRequests: 4, Settings: settings}, Records: recs(0, 2)},
			{Header: PartialHeader{ClusterSize: 2, ClusterIndex: 1, NumRequests: 4, Settings: settings}, Records: recs(1, 3)},
		}
	}
	if _, err := MergePartials(base()); err != nil {
		t.Fatalf("well-formed partials: %v", err)
	}
	for _, tc := range []struct {
		name  string
		spoil func([]*Partial) []*Partial
		want  string
	}{
		{"missing agent", func(p []*Partial) []*Partial { return p[:1] }, "agent(s) 1 of 2 are missing"},
		{"duplicate agent", func(p []*Partial) []*Partial { return []*Partial{p[0], p[0]} }, "two partials of agent 0"},
		{"wrong agent", func(p []*Partial) []*Partial { p[1].Records[0].Index = 2; return p }, "agent 1 holds request 2, which is agent 0's"},
		{"missing request", func(p []*Partial) []*Partial { p[1].Records = p[1].Records[:1]; return p }, "request 3 is in no partial"},
		{"other settings", func(p []*Partial) []*Partial { p[1].Header.Settings.Pooling = true; return p }, "settings differ"},
		{"other run", func(p []*Partial) []*Partial { p[1].Header.NumRequests = 5; return p }, "different runs"},
	} {
		_, err := MergePartials(tc.spoil(base()))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// FuzzParsePartial: partials travel over the network; malformed bytes are
// an error, never a crash or an allocation out of proportion to them.
func FuzzParsePartial(f *testing.F) {
	settings := NewPartialSettings(&pyout.ReportParams{RunSettings: pyout.RunSettings{Backend: "openai", RequestRate: 2, Burstiness: 1}}, &metrics.ComputeOptions{InputAudioSeconds: []float64{}}, true)
	p := &Partial{
		Header: PartialHeader{ClusterSize: 2, ClusterIndex: 1, NumRequests: 4, Settings: settings},
		Records: []PartialRecord{
			{RequestResult: metrics.RequestResult{Index: 1, Success: true, GeneratedText: "hi", ITLNs: []int64{5, -3, 1 << 40},
				Breakdown:   metrics.Breakdown{Known: true, NewConn: true, ConnectNs: 3},
				ChunkTokens: metrics.ChunkTokens{State: metrics.RunningMissing}}, Counted: 2, AudioSec: 1.5},
			{RequestResult: metrics.RequestResult{Index: 3, Error: "boom"}, Counted: -1},
		},
	}
	var buf bytes.Buffer
	if err := WritePartial(&buf, p); err != nil {
		f.Fatal(err)
	}
	raw, err := ReadPartialBytes(&buf)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add(raw[:len(raw)/2])
	f.Add([]byte(partialMagic))
	// Version 2's fields: what the server said, the reasoning, the
	// request's id, the probes, the fingerprint, the RTTs and the tokens
	// of each chunk; version 3's agent memory; and a version-2 file.
	buf.Reset()
	if err := WritePartial(&buf, richPartial()); err != nil {
		f.Fatal(err)
	}
	if raw, err = ReadPartialBytes(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add(raw[:len(raw)-3])
	v2, err := os.Open(filepath.Join("testdata", "partial-v2.bin"))
	if err != nil {
		f.Fatal(err)
	}
	defer v2.Close()
	if raw, err = ReadPartialBytes(v2); err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	// A stream of many chunks of three tokens and a short last one, as
	// runs: a long run from a few bytes, held to the gaps' count.
	gaps := make([]int64, 999)
	counts := make([]uint16, 1000)
	for i := range counts {
		counts[i] = 3
	}
	counts[999] = 1
	long := richPartial()
	long.Records[0].ITLNs, long.Records[0].ChunkTokens = gaps, metrics.CountedChunkTokens(counts)
	buf.Reset()
	if err := WritePartial(&buf, long); err != nil {
		f.Fatal(err)
	}
	if raw, err = ReadPartialBytes(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePartial(data)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := WritePartial(&out, p); err != nil {
			t.Fatalf("a parsed partial does not write back: %v", err)
		}
		if _, err := ReadPartial(&out); err != nil {
			t.Fatalf("a written partial does not read back: %v", err)
		}
	})
}

// TestOutputFlagsMayDiffer: agents given their own --result-dir,
// --result-filename, --save-result or --label build the same digests,
// and their partials merge with agent 0's output flags; a setting that
// changes the schedule or the statistics changes a digest.
func TestOutputFlagsMayDiffer(t *testing.T) {
	settings := func(edit func(*pyout.RunSettings), opts metrics.ComputeOptions) PartialSettings {
		rs := pyout.RunSettings{Backend: "openai", ModelID: "m", NumPrompts: 4, RequestRate: 2, Burstiness: 1, SaveResult: true, ResultDir: "/results"}
		if edit != nil {
			edit(&rs)
		}
		return NewPartialSettings(&pyout.ReportParams{RunSettings: rs}, &opts, false)
	}
	label := "agent 1"
	own := settings(func(s *pyout.RunSettings) {
		s.ResultDir, s.ResultFilename, s.SaveResult, s.Label = "/tmp/agent1", "mine.json", false, &label
	}, metrics.ComputeOptions{})
	lead := settings(nil, metrics.ComputeOptions{})
	digest := func(lens ...int) *RequestsDigest {
		d := NewRequestsDigest()
		for _, l := range lens {
			d.Add(l, 1)
		}
		return d
	}
	wire, one, other := digest(3, 5), digest(3), digest(3, 6)
	offsets := []int64{0, 500}
	if RunDigest(lead, wire, offsets) != RunDigest(own, wire, offsets) || StatisticsDigest(lead) != StatisticsDigest(own) {
		t.Errorf("output flags change the digests")
	}
	for name, other := range map[string]PartialSettings{
		"rate":  settings(func(s *pyout.RunSettings) { s.RequestRate = 3 }, metrics.ComputeOptions{}),
		"model": settings(func(s *pyout.RunSettings) { s.ModelID = "n" }, metrics.ComputeOptions{}),
	} {
		if RunDigest(lead, wire, offsets) == RunDigest(other, wire, offsets) {
			t.Errorf("another %s gives the same run digest", name)
		}
	}
	if RunDigest(lead, wire, offsets) == RunDigest(lead, wire, []int64{0, 501}) || RunDigest(lead, wire, offsets) == RunDigest(lead, one, offsets) ||
		RunDigest(lead, wire, offsets) == RunDigest(lead, other, offsets) {
		t.Errorf("another schedule, request count or prompt length gives the same run digest")
	}
	if StatisticsDigest(lead) == StatisticsDigest(settings(nil, metrics.ComputeOptions{Percentiles: []float64{50}})) {
		t.Errorf("other percentiles give the same statistics digest")
	}

	parts := []*Partial{
		{Header: PartialHeader{ClusterSize: 2, ClusterIndex: 1, NumRequests: 2, Settings: own},
			Records: []PartialRecord{{RequestResult: metrics.RequestResult{Index: 1, Success: true, NumInputSequences: 1}, Counted: -1}}},
		{Header: PartialHeader{ClusterSize: 2, ClusterIndex: 0, NumRequests: 2, Settings: lead},
			Records: []PartialRecord{{RequestResult: metrics.RequestResult{Index: 0, Success: true, NumInputSequences: 1}, Counted: -1}}},
	}
	m, err := MergePartials(parts)
	if err != nil {
		t.Fatalf("partials differing in output flags: %v", err)
	}
	if m.Params.ResultDir != "/results" || !m.Params.SaveResult || m.Params.Label != nil || m.Params.ResultFilename != "" {
		t.Errorf("merged output flags %+v, want agent 0's", m.Params.RunSettings)
	}
}

// TestPartialPaths: agents of one --save-partial name write files of their
// own, and merge finds them by that name.
func TestPartialPaths(t *testing.T) {
	for _, tc := range []struct {
		path        string
		size, index int
		want        string
	}{
		{"part/partial.bin", 1, 0, "part/partial.bin"},
		{"part/partial.bin", 3, 2, "part/partial.agent-2.bin"},
		{"partial", 2, 1, "partial.agent-1"},
		{"d.x/.partial", 2, 0, "d.x/.partial.agent-0"},
	} {
		if got := PartialPath(tc.path, tc.size, tc.index); got != tc.want {
			t.Errorf("PartialPath(%s, %d, %d) = %s, want %s", tc.path, tc.size, tc.index, got, tc.want)
		}
	}
	dir := t.TempDir()
	name := filepath.Join(dir, "partial.bin")
	for k := range 3 {
		if err := SavePartialFile(PartialPath(name, 3, k), testPartial(k%2)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ExpandPartialPaths([]string{name})
	if err != nil || len(got) != 3 || got[2] != filepath.Join(dir, "partial.agent-2.bin") {
		t.Fatalf("ExpandPartialPaths(%s) = %v, %v", name, got, err)
	}
	if _, err := ExpandPartialPaths([]string{filepath.Join(dir, "other.bin")}); err == nil || !strings.Contains(err.Error(), "other.agent-*.bin") {
		t.Errorf("a name no agent wrote: %v", err)
	}
}

// richPartial is a partial with every field of version 3 set.
func richPartial() *Partial {
	p := richPartialV2()
	open := 1
	p.Header.Memory = &report.SidecarAgentMemory{Index: 0, Requests: 2, PeakRSSBytes: 48 << 20, EndRSSBytes: 40 << 20, MaxOpenStreams: &open,
		Sampled: &report.SidecarMemory{Samples: 9, IntervalMs: 200, MostOpenStreams: 2, RSSAtMostOpenBytes: 30 << 20, PeakRSSBytes: 31 << 20, OpenAtPeak: 1}}
	return p
}

// richPartialV2 is a partial with every field of version 2 set, the one
// testdata/partial-v2.bin holds: that file is WritePartial(richPartialV2())
// of the version-2 writer, stampede at 02c5b8a.
func richPartialV2() *Partial {
	settings := NewPartialSettings(&pyout.ReportParams{RunSettings: pyout.RunSettings{Backend: "openai-chat", RequestRate: 2, Burstiness: 1}}, &metrics.ComputeOptions{}, false)
	settings.FrontEnds = []string{"http://a/v1/chat/completions", "http://b/v1/chat/completions"}
	settings.PerTokenITL = true
	return &Partial{
		Header: PartialHeader{ClusterSize: 2, ClusterIndex: 0, NumRequests: 4, Settings: settings, URL: "http://a/v1/chat/completions",
			Fingerprint: &report.Fingerprint{Server: map[string]string{"version": "0.11"}, Client: map[string]string{"host": "h0", "stampede": "v1"}},
			RTTs:        []engine.ConnRTT{{RTTUs: 120, MinRTTUs: 80}}},
		Records: []PartialRecord{
			{RequestResult: metrics.RequestResult{Index: 0, Success: true, OutputTokens: 3, ChunkEvents: 3, TTFTNs: 7, LatencyNs: 30,
				ITLNs: []int64{10, 13}, ServerTokens: 3, ServerUsage: metrics.UsageChunk, HTTPStatus: 200,
				ChunkTokens: metrics.CountedChunkTokens([]uint16{0, 2, 1}),
				Reasoning:   metrics.Reasoning{FirstAnswerNs: 20, ReasoningChunks: 2, ReasoningTokens: -1, FirstToolCallNs: 25, ToolCallChunks: 1, ToolCalls: 1}},
				Counted: -1, RequestID: "bench-0a1b2c3d-0", ExpectedOutputLen: 3},
			{RequestResult: metrics.RequestResult{Index: 2, Error: "Internal Server Error", HTTPStatus: 500, ServerMessage: "out of memory"},
				Counted: -1, RequestID: "bench-0a1b2c3d-2", ExpectedOutputLen: 9},
		},
		Probes: []PartialRecord{
			{RequestResult: metrics.RequestResult{Index: 0, Success: true, LatencyNs: 4e6, TTFTNs: 1e6}, Counted: -1},
			{RequestResult: metrics.RequestResult{Index: 0, Error: "timeout"}, Counted: -1},
		},
	}
}

// TestPartialRoundTrip: every field of version 3 reads back as written.
func TestPartialRoundTrip(t *testing.T) {
	want := richPartial()
	var buf bytes.Buffer
	if err := WritePartial(&buf, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPartial(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, want)
	}
}

// TestPartialChunkTokens: the tokens of each chunk travel as runs (a
// thousand events of one token take four bytes), and runs that do not
// add up to the record's token events, a run of none and an unknown
// state are each named.
func TestPartialChunkTokens(t *testing.T) {
	ones := make([]uint16, 1000)
	for i := range ones {
		ones[i] = 1
	}
	b := appendChunkTokens(nil, metrics.CountedChunkTokens(ones))
	if len(b) != 5 {
		t.Errorf("1,000 events of one token take %d bytes: % x", len(b), b)
	}
	pr := &partialReader{b: b, part: "record 0"}
	if got := readChunkTokens(pr, 1000); pr.err != nil || got.Len() != 1000 || slices.Max(got.Counts()) != 1 {
		t.Errorf("read back %d counts, %v", got.Len(), pr.err)
	}
	for _, tc := range []struct {
		name   string
		b      []byte
		events int
		want   string
	}{
		{"too few", appendChunkTokens(nil, metrics.CountedChunkTokens([]uint16{3, 3, 3})), 4, "tokens of 3 token events for 4"},
		{"too many", appendChunkTokens(nil, metrics.CountedChunkTokens([]uint16{3, 3, 3})), 2, "value 3 is above 2"},
		{"empty run", []byte{byte(metrics.RunningCounted), 1, 3, 0}, 1, "a run of no token events"},
		{"unknown state", []byte{9}, 1, "unknown running usage state 9"},
		{"count too large", []byte{byte(metrics.RunningCounted), 1, 0x80, 0x80, 0x04, 1}, 1, "value 65536 is above 65535"},
	} {
		pr := &partialReader{b: tc.b, part: "record 0"}
		readChunkTokens(pr, tc.events)
		if pr.err == nil || !strings.Contains(pr.err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, pr.err, tc.want)
		}
	}
}

// TestPartialOldVersionRefused: a partial of version 1 (an older
// stampede's) is refused, naming both versions and what to do.
func TestPartialOldVersionRefused(t *testing.T) {
	raw := binary.AppendUvarint([]byte(partialMagic), 1)
	raw = append(raw, 2, '{', '}', 0)
	_, err := ParsePartial(raw)
	if err == nil || !strings.Contains(err.Error(), "version 1; this stampede reads versions 2 to 3: merge it with the stampede that wrote it") {
		t.Fatalf("version 1: %v", err)
	}
	raw = binary.AppendUvarint([]byte(partialMagic), 4)
	raw = append(raw, 2, '{', '}', 0)
	if _, err := ParsePartial(raw); err == nil || !strings.Contains(err.Error(), "version 4; this stampede reads versions 2 to 3") {
		t.Fatalf("version 4: %v", err)
	}
}

// TestPartialVersion2Reads: a version-2 partial, written by the stampede
// before the agents' memory, reads with every field it has and no memory,
// and merges into a sidecar whose health lists no agent's memory.
func TestPartialVersion2Reads(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "partial-v2.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadPartial(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := richPartialV2(); !reflect.DeepEqual(got, want) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, want)
	}
	if h := mergedHealth([]PartialHeader{got.Header}); h.Agents != nil {
		t.Errorf("merged health of a version-2 partial lists memory: %+v", h.Agents)
	}
}

// TestMergedHealthListsAgentsMemory: each agent's memory reaches the
// merged sidecar's health, in index order under the index its header
// gives, an agent that said nothing left out; and it survives the
// sidecar's JSON.
func TestMergedHealthListsAgentsMemory(t *testing.T) {
	three := 3
	parts := []*Partial{testPartial(0), testPartial(1)}
	parts[0].Header.Memory = &report.SidecarAgentMemory{Index: 7, Requests: 1, PeakRSSBytes: 300 << 20, EndRSSBytes: 200 << 20, MaxOpenStreams: &three,
		Sampled: &report.SidecarMemory{Samples: 4, IntervalMs: 200, MostOpenStreams: 3, RSSAtMostOpenBytes: 250 << 20, PeakRSSBytes: 260 << 20, OpenAtPeak: 2}}
	parts[1].Header.Memory = &report.SidecarAgentMemory{Index: 1, Requests: 1, PeakRSSBytes: 150 << 20, EndRSSBytes: 120 << 20}
	var reread []*Partial
	for _, p := range parts {
		var buf bytes.Buffer
		if err := WritePartial(&buf, p); err != nil {
			t.Fatal(err)
		}
		q, err := ReadPartial(&buf)
		if err != nil {
			t.Fatal(err)
		}
		reread = append(reread, q)
	}
	m, err := MergePartials([]*Partial{reread[1], reread[0]})
	if err != nil {
		t.Fatal(err)
	}
	sc := &report.Sidecar{}
	m.Account(sc)
	b, err := json.Marshal(sc.Health)
	if err != nil {
		t.Fatal(err)
	}
	var health struct {
		Agents []map[string]any `json:"agents"`
	}
	if err := json.Unmarshal(b, &health); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"index": 0.0, "requests": 1.0, "peak_rss_bytes": float64(300 << 20), "end_rss_bytes": float64(200 << 20), "max_open_streams": 3.0,
			"sampled": map[string]any{"samples": 4.0, "interval_ms": 200.0, "most_open_streams": 3.0, "rss_at_most_open_bytes": float64(250 << 20),
				"peak_rss_bytes": float64(260 << 20), "open_at_peak": 2.0}},
		{"index": 1.0, "requests": 1.0, "peak_rss_bytes": float64(150 << 20), "end_rss_bytes": float64(120 << 20), "max_open_streams": nil, "sampled": nil},
	}
	if !reflect.DeepEqual(health.Agents, want) {
		t.Errorf("health.agents = %v\nwant %v", health.Agents, want)
	}
	reread[1].Header.Memory = nil
	if m, err = MergePartials(reread); err != nil {
		t.Fatal(err)
	}
	if h := mergedHealth(m.Agents); len(h.Agents) != 1 || h.Agents[0].Index != 0 {
		t.Errorf("agent 1 said nothing: %+v", h.Agents)
	}
	for _, a := range sc.Cluster.Agents {
		if a.Health.Agents != nil {
			t.Errorf("agent %d's own health lists agents: %+v", a.Index, a.Health.Agents)
		}
	}
}

// TestAgentMemory: an agent reads its own peak and present resident set
// (here, this test's), the peak at least the present; the most requests
// open at once counts overlaps, one ending as the next starts not, and
// requests that never ran none.
func TestAgentMemory(t *testing.T) {
	results := []metrics.RequestResult{
		{StartNs: 0, LatencyNs: 10}, {StartNs: 5, LatencyNs: 10}, {StartNs: 10, LatencyNs: 3}, {StartNs: 15, LatencyNs: 1},
		{Error: "refused"},
	}
	m := readRSS(agentMemory(2, results))
	if m == nil {
		t.Fatal("no memory read from /proc/self/status")
	}
	if m.Index != 2 || m.Requests != 5 || m.EndRSSBytes <= 0 || m.PeakRSSBytes < m.EndRSSBytes {
		t.Errorf("memory = %+v", m)
	}
	if m.MaxOpenStreams == nil || *m.MaxOpenStreams != 2 {
		t.Errorf("max open streams = %v, want 2", m.MaxOpenStreams)
	}
	if open, ok := metrics.MaxOpen(results[4:]); ok {
		t.Errorf("no request ran, yet %d open", open)
	}
	status := []byte("Name:\tstampede\nVmPeak:\t 9 kB\nVmHWM:\t  123 kB\nVmRSS:\t 100 kB\nVmSwap: x\n")
	if got := statusBytes(status, "VmHWM:"); got != 123<<10 {
		t.Errorf("VmHWM = %d, want %d", got, 123<<10)
	}
	if got := statusBytes(status, "VmSwap:"); got != 0 {
		t.Errorf("a malformed field = %d, want 0", got)
	}
	if got := statusBytes(status, "RssAnon:"); got != 0 {
		t.Errorf("an absent field = %d, want 0", got)
	}
}

// TestPartialServerReadings: agent 0's readings of the server read back
// as written, a diffusion ratio over zero (+Inf, NaN) included, which
// JSON alone cannot hold; the merge puts the /metrics figures in the
// block's parameters.
func TestPartialServerReadings(t *testing.T) {
	p := richPartial()
	// One agent of one, stopped early: its records are the whole run.
	p.Header.ClusterSize, p.Header.ClusterIndex, p.Header.Cancelled = 1, 0, true
	spec := &metrics.SpecDecodeStats{NumDrafts: 4, DraftTokens: 12, AcceptedTokens: 7, AcceptanceRate: 700.0 / 12,
		AcceptanceLength: 2.75, PerPositionAcceptanceRates: []float64{0.75, 0.5, 0.5}}
	diff := &metrics.DiffusionStats{DenoisingSteps: 3.5, CanvasPositions: 0, CommittedTokens: 9,
		CommittedThroughput: 0.1 + 0.2, StepsPerCanvas: math.Inf(1), CommittedPerStep: math.NaN()}
	p.Header.Server = &ServerReadings{Metrics: &report.ServerMetrics{Server: "vLLM", Scrapes: 3},
		PrefixCache: &report.PrefixCache{Server: "vLLM", Reset: true}, SpecDecode: spec, Diffusion: diff}
	var buf bytes.Buffer
	if err := WritePartial(&buf, p); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPartial(&buf)
	if err != nil {
		t.Fatal(err)
	}
	s := got.Header.Server
	if s == nil || s.Metrics == nil || s.Metrics.Scrapes != 3 || s.PrefixCache == nil || !s.PrefixCache.Reset || s.Spans != nil {
		t.Fatalf("server readings read back as %+v", s)
	}
	if !reflect.DeepEqual(s.SpecDecode, spec) {
		t.Errorf("spec decode read back as %+v, want %+v", s.SpecDecode, spec)
	}
	d := s.Diffusion
	if d == nil || d.DenoisingSteps != 3.5 || d.CommittedTokens != 9 || d.CommittedThroughput != 0.1+0.2 ||
		!math.IsInf(d.StepsPerCanvas, 1) || !math.IsNaN(d.CommittedPerStep) {
		t.Errorf("diffusion read back as %+v, want %+v", d, diff)
	}
	m, err := MergePartials([]*Partial{got})
	if err != nil {
		t.Fatal(err)
	}
	if m.Server != s || m.Params.SpecDecode != s.SpecDecode || m.Params.Diffusion != s.Diffusion {
		t.Errorf("merge left the readings out: %+v, params %+v %+v", m.Server, m.Params.SpecDecode, m.Params.Diffusion)
	}
}
