package cluster

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
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
	type part struct {
		h    PartialHeader
		recs []PartialRecord
	}
	base := func() []*part {
		recs := func(idx ...int) []PartialRecord {
			var out []PartialRecord
			for _, i := range idx {
				out = append(out, PartialRecord{RequestResult: metrics.RequestResult{Index: i, Success: true, NumInputSequences: 1}})
			}
			return out
		}
		settings := NewPartialSettings(&pyout.ReportParams{RunSettings: pyout.RunSettings{Backend: "openai", RequestRate: 1, Burstiness: 1}}, &metrics.ComputeOptions{}, false)
		return []*part{
			{PartialHeader{ClusterSize: 2, ClusterIndex: 0, NumRequests: 4, Settings: settings}, recs(0, 2)},
			{PartialHeader{ClusterSize: 2, ClusterIndex: 1, NumRequests: 4, Settings: settings}, recs(1, 3)},
		}
	}
	merge := func(ps []*part) (*MergedRun, error) {
		var parts []*Partial
		for _, p := range ps {
			parts = append(parts, &Partial{Header: p.h, Records: recordsOf(p.recs...)})
		}
		return mergeOf(t, parts...)
	}
	if _, err := merge(base()); err != nil {
		t.Fatalf("well-formed partials: %v", err)
	}
	for _, tc := range []struct {
		name  string
		spoil func([]*part) []*part
		want  string
	}{
		{"missing agent", func(p []*part) []*part { return p[:1] }, "agent(s) 1 of 2 are missing"},
		{"duplicate agent", func(p []*part) []*part { return []*part{p[0], p[0]} }, "two partials of agent 0"},
		{"wrong agent", func(p []*part) []*part { p[1].recs[0].Index = 2; return p }, "agent 1 holds request 2, which is agent 0's"},
		{"twice", func(p []*part) []*part { p[1].recs[1].Index = 1; return p }, "agent 1 holds request 1 twice"},
		{"missing request", func(p []*part) []*part { p[1].recs = p[1].recs[:1]; return p }, "request 3 is in no partial"},
		{"other settings", func(p []*part) []*part { p[1].h.Settings.Pooling = true; return p }, "settings differ"},
		{"other run", func(p []*part) []*part { p[1].h.NumRequests = 5; return p }, "different runs"},
	} {
		_, err := merge(tc.spoil(base()))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// FuzzReadPartial: partials travel over the network and in files;
// malformed bytes are an error, never a crash or an allocation out of
// proportion to them. The input is the partial's stream, uncompressed.
func FuzzReadPartial(f *testing.F) {
	settings := NewPartialSettings(&pyout.ReportParams{RunSettings: pyout.RunSettings{Backend: "openai", RequestRate: 2, Burstiness: 1}},
		&metrics.ComputeOptions{InputAudioSeconds: func(int) float64 { return 0 }}, true)
	p := &Partial{
		Header: PartialHeader{ClusterSize: 2, ClusterIndex: 1, NumRequests: 4, Settings: settings, RequestIDPrefix: "bench-"},
		Records: recordsOf(
			PartialRecord{RequestResult: metrics.RequestResult{Index: 1, Success: true, GeneratedText: "hi", ITLNs: []int64{5, -3, 1 << 40},
				Breakdown:   metrics.Breakdown{Known: true, NewConn: true, ConnectNs: 3},
				ChunkTokens: metrics.ChunkTokens{State: metrics.RunningMissing}, TextCounted: true, TextTokens: 2}, AudioSec: 1.5, RequestID: "bench-1"},
			PartialRecord{RequestResult: metrics.RequestResult{Index: 3, Error: "boom"}, RequestID: "other-3", ExpectedOutputLen: 7},
		),
	}
	raw := gunzip(f, partialBytes(f, p))
	f.Add(raw)
	f.Add(raw[:len(raw)/2])
	f.Add([]byte(partialMagic))
	// Every field of the format, and a version-2 and a version-3 file.
	raw = gunzip(f, partialBytes(f, richPartial()))
	f.Add(raw)
	f.Add(raw[:len(raw)-3])
	for _, name := range []string{"partial-v2.bin", "partial-v3.bin"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(gunzip(f, b))
	}
	// A stream of many chunks of three tokens and a short last one.
	gaps := make([]int64, 999)
	counts := make([]uint16, 1000)
	for i := range counts {
		counts[i] = 3
	}
	counts[999] = 1
	long := richPartial()
	recs := richRecords()
	recs[0].ITLNs, recs[0].ChunkTokens = gaps, metrics.CountedChunkTokens(counts)
	long.Records = recordsOf(recs...)
	f.Add(gunzip(f, partialBytes(f, long)))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := readWhole(bytes.NewReader(gzipped(data)))
		if err != nil {
			return
		}
		p := &Partial{Header: got.Header, Records: recordsOf(got.Records...), Probes: got.Probes}
		var out bytes.Buffer
		if err := WritePartial(&out, p); err != nil {
			t.Fatalf("a read partial does not write back: %v", err)
		}
		again, err := readWhole(&out)
		if err != nil {
			t.Fatalf("a written partial does not read back: %v", err)
		}
		if len(again.Records) != len(got.Records) || len(again.Probes) != len(got.Probes) {
			t.Fatalf("read back %d records and %d probes, wrote %d and %d", len(again.Records), len(again.Probes), len(got.Records), len(got.Probes))
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
			Records: recordsOf(PartialRecord{RequestResult: metrics.RequestResult{Index: 1, Success: true, NumInputSequences: 1}})},
		{Header: PartialHeader{ClusterSize: 2, ClusterIndex: 0, NumRequests: 2, Settings: lead},
			Records: recordsOf(PartialRecord{RequestResult: metrics.RequestResult{Index: 0, Success: true, NumInputSequences: 1}})},
	}
	m, err := mergeOf(t, parts...)
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

// richPartial is a partial with every field of the format set; its
// records are richRecords, its probes richProbes.
func richPartial() *Partial {
	p := richPartialV2()
	open := 1
	p.Header.Memory = &report.SidecarAgentMemory{Index: 0, Requests: 2, PeakRSSBytes: 48 << 20, EndRSSBytes: 40 << 20, MaxOpenStreams: &open,
		Sampled: &report.SidecarMemory{Samples: 9, IntervalMs: 200, MostOpenStreams: 2, RSSAtMostOpenBytes: 30 << 20, PeakRSSBytes: 31 << 20, OpenAtPeak: 1}}
	return p
}

// richPartialV2 is a partial with every field of version 2 set, the one
// testdata/partial-v2.bin holds: that file is WritePartial(richPartialV2())
// of the version-2 writer, stampede at 02c5b8a; testdata/partial-v3.bin
// is WritePartial(richPartial()) of the version-3 writer, at 2cfcc83.
func richPartialV2() *Partial {
	settings := NewPartialSettings(&pyout.ReportParams{RunSettings: pyout.RunSettings{Backend: "openai-chat", RequestRate: 2, Burstiness: 1}}, &metrics.ComputeOptions{}, false)
	settings.FrontEnds = []string{"http://a/v1/chat/completions", "http://b/v1/chat/completions"}
	settings.PerTokenITL = true
	return &Partial{
		Header: PartialHeader{ClusterSize: 2, ClusterIndex: 0, NumRequests: 4, Settings: settings, URL: "http://a/v1/chat/completions",
			Fingerprint: &report.Fingerprint{Server: map[string]string{"version": "0.11"}, Client: map[string]string{"host": "h0", "stampede": "v1"}},
			RTTs:        []engine.ConnRTT{{RTTUs: 120, MinRTTUs: 80}}},
		Records: recordsOf(richRecords()...),
		Probes:  richProbes(),
	}
}

func richRecords() []PartialRecord {
	return []PartialRecord{
		{RequestResult: metrics.RequestResult{Index: 0, Success: true, OutputTokens: 3, ChunkEvents: 3, TTFTNs: 7, LatencyNs: 30,
			ITLNs: []int64{10, 13}, ServerTokens: 3, ServerUsage: metrics.UsageChunk, HTTPStatus: 200,
			ChunkTokens: metrics.CountedChunkTokens([]uint16{0, 2, 1}),
			Reasoning:   metrics.Reasoning{FirstAnswerNs: 20, ReasoningChunks: 2, ReasoningTokens: -1, FirstToolCallNs: 25, ToolCallChunks: 1, ToolCalls: 1}},
			RequestID: "bench-0a1b2c3d-0", ExpectedOutputLen: 3},
		{RequestResult: metrics.RequestResult{Index: 2, Error: "Internal Server Error", HTTPStatus: 500, ServerMessage: "out of memory"},
			RequestID: "bench-0a1b2c3d-2", ExpectedOutputLen: 9},
	}
}

func richProbes() []metrics.RequestResult {
	return []metrics.RequestResult{
		{Index: 0, Success: true, LatencyNs: 4e6, TTFTNs: 1e6},
		{Index: 0, Error: "timeout"},
	}
}

// samePartial compares a partial read back with the one written, whose
// records and probes are richRecords and richProbes.
func samePartial(t *testing.T, got *collected, want *Partial) {
	t.Helper()
	if !reflect.DeepEqual(got.Header, want.Header) {
		t.Errorf("header read back\n%+v\nwant\n%+v", got.Header, want.Header)
	}
	// An empty array reads back as none: the text of each compares.
	if text, want := fmt.Sprintf("%+v", got.Records), fmt.Sprintf("%+v", richRecords()); text != want {
		t.Errorf("records read back\n%s\nwant\n%s", text, want)
	}
	if text, want := fmt.Sprintf("%+v", got.Probes), fmt.Sprintf("%+v", richProbes()); text != want {
		t.Errorf("probes read back\n%+v\nwant\n%+v", got.Probes, want)
	}
}

// TestPartialRoundTrip: every field reads back as written, a record's
// request id whether it is the prefix and its index or its own.
func TestPartialRoundTrip(t *testing.T) {
	want := richPartial()
	for _, prefix := range []string{"", "bench-0a1b2c3d-", "bench-"} {
		want.Header.RequestIDPrefix = prefix
		got, err := readWhole(bytes.NewReader(partialBytes(t, want)))
		if err != nil {
			t.Fatal(err)
		}
		if got.Version != PartialVersion {
			t.Errorf("version %d, want %d", got.Version, PartialVersion)
		}
		samePartial(t, got, want)
	}
}

// TestPartialStreamsInSections: a partial of many records is written in
// sections of about partialChunkBytes, never one whole; one cut between
// two sections, or missing one, is refused as cut short, not read as a
// smaller partial.
func TestPartialStreamsInSections(t *testing.T) {
	const n = 20_000
	settings := NewPartialSettings(&pyout.ReportParams{RunSettings: pyout.RunSettings{Backend: "openai", RequestRate: 1, Burstiness: 1}}, &metrics.ComputeOptions{}, false)
	p := &Partial{Header: PartialHeader{ClusterSize: 1, NumRequests: n, Settings: settings, RequestIDPrefix: "r-"},
		Records: func(yield func(*PartialRecord) bool) error {
			var rec PartialRecord
			for i := range n {
				rec.RequestResult = metrics.RequestResult{Index: i, Success: true, OutputTokens: 50, ITLNs: make([]int64, 49)}
				rec.RequestID = "r-" + strconv.Itoa(i)
				if !yield(&rec) {
					return nil
				}
			}
			return nil
		}}
	var sections []int
	sink := &recordingSink{sizes: &sections}
	if _, err := writePartialStream(sink, p); err != nil {
		t.Fatal(err)
	}
	if len(sections) < 4 {
		t.Fatalf("%d sections for %d records", len(sections), n)
	}
	for i, size := range sections[:len(sections)-2] {
		if size > partialChunkBytes+1<<10 {
			t.Errorf("section %d holds %d bytes, over %d", i, size, partialChunkBytes)
		}
	}
	raw := gunzip(t, partialBytes(t, p))
	got, err := readWhole(bytes.NewReader(gzipped(raw)))
	if err != nil || len(got.Records) != n || got.Records[n-1].RequestID != "r-"+strconv.Itoa(n-1) {
		t.Fatalf("read back %v records, %v", got, err)
	}
	// Cut after the prelude and the first section.
	cut := sink.ends[1]
	if _, err := readWhole(bytes.NewReader(gzipped(raw[:cut]))); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("a partial cut between sections: %v", err)
	}
	// The second section left out.
	spliced := append(append([]byte{}, raw[:sink.ends[1]]...), raw[sink.ends[2]:]...)
	if _, err := readWhole(bytes.NewReader(gzipped(spliced))); err == nil || !strings.Contains(err.Error(), "sections are missing") {
		t.Errorf("a partial missing a section: %v", err)
	}
}

// recordingSink writes a partial's stream as a file holds it, noting
// each section's size and where each part of the stream ends.
type recordingSink struct {
	buf   bytes.Buffer
	sizes *[]int
	ends  []int
}

func (s *recordingSink) prelude(b []byte) error {
	s.buf.Write(b)
	s.ends = append(s.ends, s.buf.Len())
	return nil
}

func (s *recordingSink) section(kind byte, payload []byte) error {
	s.buf.WriteByte(kind)
	s.buf.Write(binary.AppendUvarint(nil, uint64(len(payload))))
	s.buf.Write(payload)
	*s.sizes = append(*s.sizes, len(payload))
	s.ends = append(s.ends, s.buf.Len())
	return nil
}

// TestLegacyChunkTokens: a version-2 or -3 partial's tokens of each
// chunk travel as runs; runs that do not add up to the record's token
// events, a run of none and an unknown state are each named.
func TestLegacyChunkTokens(t *testing.T) {
	l := &legacyRecords{r: bytes.NewReader([]byte{byte(metrics.RunningCounted), 1, 1, 0xe8, 0x07}), part: "record 0"}
	if got := l.chunkTokens(1000); l.err != nil || got.Len() != 1000 || slices.Max(got.Counts()) != 1 {
		t.Errorf("read back %d counts, %v", got.Len(), l.err)
	}
	for _, tc := range []struct {
		name   string
		b      []byte
		events int
		want   string
	}{
		{"too few", []byte{byte(metrics.RunningCounted), 1, 3, 3}, 4, "tokens of 3 token events for 4"},
		{"too many", []byte{byte(metrics.RunningCounted), 1, 3, 3}, 2, "value 3 is above 2"},
		{"empty run", []byte{byte(metrics.RunningCounted), 1, 3, 0}, 1, "a run of no token events"},
		{"unknown state", []byte{9}, 1, "unknown running usage state 9"},
		{"count too large", []byte{byte(metrics.RunningCounted), 1, 0x80, 0x80, 0x04, 1}, 1, "value 65536 is above 65535"},
	} {
		l := &legacyRecords{r: bytes.NewReader(tc.b), part: "record 0"}
		l.chunkTokens(tc.events)
		if l.err == nil || !strings.Contains(l.err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, l.err, tc.want)
		}
	}
}

// TestPartialOtherVersionsRefused: a partial of version 1 (an older
// stampede's) or 5 (a newer one's) is refused, naming both versions and
// what to do.
func TestPartialOtherVersionsRefused(t *testing.T) {
	for _, v := range []uint64{1, 5} {
		raw := binary.AppendUvarint([]byte(partialMagic), v)
		raw = append(raw, 2, '{', '}', 0)
		_, err := OpenPartial(bytes.NewReader(gzipped(raw)))
		want := fmt.Sprintf("version %d; this stampede reads versions 2 to 4: merge it with the stampede that wrote it", v)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("version %d: %v, want %q", v, err, want)
		}
	}
}

// TestPartialLegacyVersionsRead: a version-2 partial, written by the
// stampede before the agents' memory, reads with every field it has and
// no memory, and merges into a sidecar whose health lists no agent's
// memory; a version-3 one, the format before the stream, reads whole.
func TestPartialLegacyVersionsRead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int
		want    *Partial
	}{{"partial-v2.bin", 2, richPartialV2()}, {"partial-v3.bin", 3, richPartial()}} {
		f, err := os.Open(filepath.Join("testdata", tc.name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := readWhole(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got.Version != tc.version {
			t.Errorf("%s: version %d", tc.name, got.Version)
		}
		if tc.version == 3 {
			// The version-3 file holds the merged outputs' settings and
			// the server's readings too.
			if o, s := got.Header.Settings.Outputs, got.Header.Server; o == nil || !o.SteadyState || o.SteadyStateThreshold != 0.9 || s == nil {
				t.Errorf("version 3: outputs %+v, server %+v", o, s)
			}
			tc.want.Header.Settings.Outputs, tc.want.Header.Server = got.Header.Settings.Outputs, got.Header.Server
		}
		samePartial(t, got, tc.want)
		if h := mergedHealth([]PartialHeader{got.Header}); (h.Agents != nil) != (tc.version > 2) {
			t.Errorf("merged health of a version-%d partial lists memory: %+v", tc.version, h.Agents)
		}
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
	m, err := mergeOf(t, parts[1], parts[0])
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
				"peak_rss_bytes": float64(260 << 20), "open_at_peak": 2.0, "base_rss_bytes": 0.0, "prompt_window_bytes_at_peak": 0.0,
				"record_log_bytes_at_peak": 0.0, "streams_bytes_at_peak": 0.0}},
		{"index": 1.0, "requests": 1.0, "peak_rss_bytes": float64(150 << 20), "end_rss_bytes": float64(120 << 20), "max_open_streams": nil, "sampled": nil},
	}
	if !reflect.DeepEqual(health.Agents, want) {
		t.Errorf("health.agents = %v\nwant %v", health.Agents, want)
	}
	parts[1].Header.Memory = nil
	if m, err = mergeOf(t, parts...); err != nil {
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
	m := readRSS(agentMemory(2, metrics.LogOf(results...)))
	if m == nil {
		t.Fatal("no memory read from /proc/self/status")
	}
	if m.Index != 2 || m.Requests != 5 || m.EndRSSBytes <= 0 || m.PeakRSSBytes < m.EndRSSBytes {
		t.Errorf("memory = %+v", m)
	}
	if m.MaxOpenStreams == nil || *m.MaxOpenStreams != 2 {
		t.Errorf("max open streams = %v, want 2", m.MaxOpenStreams)
	}
	if open, ok := metrics.MaxOpen(metrics.LogOf(results[4:]...)); ok {
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
	got, err := readWhole(bytes.NewReader(partialBytes(t, p)))
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
	m, err := mergeOf(t, p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Server.Metrics, s.Metrics) || m.Params.SpecDecode != m.Server.SpecDecode || m.Params.Diffusion != m.Server.Diffusion || !reflect.DeepEqual(m.Params.SpecDecode, spec) {
		t.Errorf("merge left the readings out: %+v, params %+v %+v", m.Server, m.Params.SpecDecode, m.Params.Diffusion)
	}
}
