package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// Two agents, time 0 at 1,000,000,000 ns and 1,000,000,500 ns on
// CLOCK_MONOTONIC: request 0 (agent 0) is stamped 2, 3 and 4 µs after the
// truth's writes; request 1 (agent 1) reads its first two tokens together,
// so the first carries the second's stamp, 2 ms late.
func TestMatchPutsEveryTokenOnTheTruthsClock(t *testing.T) {
	const zero0, zero1 = 1_000_000_000, 1_000_000_500
	res := &detailed{
		StartTimes: []float64{0.010, 0.020},
		TTFTs:      []float64{0.050002, 0.052},
		ITLs:       [][]float64{{0.010001, 0.010001}, {0, 0.010}},
	}
	truth := map[int]mock.TruthRequest{
		0: {ArrivalNs: zero0 + 10_000_100, Tokens: []mock.TruthToken{
			{SentNs: zero0 + 60_000_000}, {SentNs: zero0 + 70_000_000}, {SentNs: zero0 + 80_000_000}}},
		1: {ArrivalNs: zero1 + 20_000_200, Tokens: []mock.TruthToken{
			{SentNs: zero1 + 70_000_000}, {SentNs: zero1 + 72_000_000}, {SentNs: zero1 + 82_000_000}}},
	}
	m := match(res, &truthSet{byIndex: truth}, []int64{zero0, zero1})
	want := []float64{2, 3, 4, 2000, 0, 0}
	if len(m.tokenErrUs) != len(want) {
		t.Fatalf("token errors %v, want %v", m.tokenErrUs, want)
	}
	for i := range want {
		if math.Abs(m.tokenErrUs[i]-want[i]) > 0.01 {
			t.Errorf("token error %d = %.3f µs, want %.3f", i, m.tokenErrUs[i], want[i])
		}
	}
	if m.requests != 2 || m.mismatched != 0 || m.lateShared != 1 {
		t.Errorf("requests %d, mismatched %d, late with a shared read %d; want 2, 0, 1", m.requests, m.mismatched, m.lateShared)
	}
	if math.Abs(m.ttftErrUs[0]-2) > 0.01 || math.Abs(m.ttftErrUs[1]-2000) > 0.01 {
		t.Errorf("TTFT errors %v, want the first tokens' 2 and 2000 µs", m.ttftErrUs)
	}
	if math.Abs(m.startToArrivalUs[0]-0.1) > 0.01 || math.Abs(m.startToArrivalUs[1]-0.2) > 0.01 {
		t.Errorf("start to arrival %v µs, want 0.1 and 0.2", m.startToArrivalUs)
	}
}

func TestMatchSkipsOtherTokenCountsAndFailures(t *testing.T) {
	res := &detailed{StartTimes: []float64{0, 0, 0}, TTFTs: []float64{0.05, 0, 0.05}, ITLs: [][]float64{{0.01}, {}, {0.01}}}
	truth := map[int]mock.TruthRequest{
		0: {Tokens: []mock.TruthToken{{SentNs: 50_000_000}}},
		1: {Tokens: []mock.TruthToken{{SentNs: 50_000_000}}},
	}
	m := match(res, &truthSet{byIndex: truth}, []int64{0})
	if m.requests != 0 || m.mismatched != 1 || len(m.tokenErrUs) != 0 {
		t.Errorf("requests %d, mismatched %d, %d token errors; want 0, 1, 0", m.requests, m.mismatched, len(m.tokenErrUs))
	}
}

func TestSpreadOfGroupsTokensByTheirStep(t *testing.T) {
	log := []mock.TruthRequest{
		{Tokens: []mock.TruthToken{{SentNs: 100, IntendedNs: 100}, {SentNs: 1_200, IntendedNs: 1_000}}},
		{Tokens: []mock.TruthToken{{SentNs: 150, IntendedNs: 100}, {SentNs: 1_900, IntendedNs: 1_000}}},
	}
	s := spreadOf("t.log", log)
	if s.steps != 2 || s.tokens != 4 || s.tokensMax != 2 || s.spreadMaxNs != 700 || s.lateMaxNs != 900 {
		t.Errorf("spread %+v, want 2 steps, 4 tokens, 2 at most, spread 700 ns, late 900 ns", s)
	}
}

func TestRequestIndex(t *testing.T) {
	for id, want := range map[string]int{"agent3-17": 17, "42": 42, "x-0": 0} {
		if got, err := requestIndex(id); err != nil || got != want {
			t.Errorf("requestIndex(%q) = %d, %v; want %d", id, got, err, want)
		}
	}
	if _, err := requestIndex("agent3-"); err == nil {
		t.Error("requestIndex(\"agent3-\"): no error for an id without an index")
	}
}

func TestAnnouncedStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent0.err")
	text := "stampede: agent 0 of 2 waits for the other agents on 127.0.0.1:1\n" +
		"stampede: agent 0 of 2: clock offset 0s ± 0s against agent 0; the run starts at 2026-12-02T00:57:40.410169598Z\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := announcedStart(path)
	if want := int64(1796173060410169598); err != nil || got != want {
		t.Errorf("announcedStart = %d, %v; want %d", got, err, want)
	}
	// --cluster-local's launcher prefixes each agent's lines.
	prefixed := "agent 1: stampede: agent 1 of 2: clock offset 3µs ± 9µs against agent 0; the run starts at 2026-12-02T00:57:40.410169598Z\n"
	if err := os.WriteFile(path, []byte(prefixed), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := announcedStart(path); err != nil || got != 1796173060410169598 {
		t.Errorf("announcedStart of a prefixed line = %d, %v", got, err)
	}
	if err := os.WriteFile(path, []byte("stampede: 2 shards\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := announcedStart(path); err == nil {
		t.Error("announcedStart: no error for a log without the start line")
	}
}

func TestQuantilesAreNearestRank(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	q := quantiles(xs, 0.2, 0.5, 0.99, 1)
	if q[0] != 1 || q[1] != 3 || q[2] != 5 || q[3] != 5 {
		t.Errorf("quantiles = %v, want [1 3 5 5]", q)
	}
	if q := quantiles(nil, 0.5); !math.IsNaN(q[0]) {
		t.Errorf("quantiles of nothing = %v, want NaN", q)
	}
}

// A token stamped 5 ms after its truth stamp is the mock's stall when the
// mock wrote nothing else in between, and the client's lateness when it
// did.
func TestMatchTellsAMockStallFromALateClient(t *testing.T) {
	res := &detailed{StartTimes: []float64{0, 0}, TTFTs: []float64{0.055, 0.055}, ITLs: [][]float64{{}, {}}}
	tokens := func(sentNs int64) []mock.TruthToken { return []mock.TruthToken{{SentNs: sentNs}} }
	for _, c := range []struct {
		name   string
		others []int64 // the mocks' other writes
		stall  int
	}{
		{"nothing written meanwhile", []int64{40_000_000, 56_000_000}, 2},
		{"another write meanwhile", []int64{52_000_000}, 1},
	} {
		truth := &truthSet{
			byIndex: map[int]mock.TruthRequest{0: {Tokens: tokens(50_000_000)}, 1: {Tokens: tokens(50_000_000)}},
			mockOf:  map[int]int{0: 0, 1: 1},
			writes:  [][]int64{{40_000_000, 50_000_000, 56_000_000}, append([]int64{50_000_000}, c.others...)},
		}
		slices.Sort(truth.writes[1])
		m := match(res, truth, []int64{0})
		if beyond(m.tokenErrUs, lateUs) != 2 || m.lateMockStall != c.stall || m.lateShared != 0 {
			t.Errorf("%s: %d beyond 1 ms, %d mock stalls, %d shared; want 2, %d, 0", c.name, beyond(m.tokenErrUs, lateUs), m.lateMockStall, m.lateShared, c.stall)
		}
	}
}

// The RSS split: two agents of 50 requests each, at their most open
// sample (50 and 48 streams) 60,000 and 50,000 KiB, over a base of 21,000
// there: (39,000 + 29,000) / 98 per open stream. The same requests with 2
// streams open each peaked at 30,000 and 26,000, over a base peak of
// 20,000: (10,000 + 6,000) / 100 per request. Over the held run, whose
// most open samples were 25,000 and 24,000 KiB: (35,000 + 26,000) / 94.
func TestRSSSplitSeparatesStreamsFromRequests(t *testing.T) {
	agent := func(i, peakKiB, openKiB, open int) report.SidecarAgentMemory {
		return report.SidecarAgentMemory{Index: i, Requests: 50, PeakRSSBytes: int64(peakKiB) << 10,
			Sampled: &report.SidecarMemory{MostOpenStreams: open, RSSAtMostOpenBytes: int64(openKiB) << 10}}
	}
	m := rssSplit{run: []report.SidecarAgentMemory{agent(0, 70_000, 60_000, 50), agent(1, 65_000, 50_000, 48)},
		held:          []report.SidecarAgentMemory{agent(0, 30_000, 25_000, 2), agent(1, 26_000, 24_000, 2)},
		basePeakBytes: 20_000 << 10, baseOpenBytes: 21_000 << 10, baseOpenKnown: true}
	perStream, perRequest := m.split()
	if perStream != "693.88 / 648.94" || perRequest != "160.00" {
		t.Errorf("split = %s, %s; want 693.88 / 648.94, 160.00", perStream, perRequest)
	}
	m.run[1].Sampled = nil
	if perStream, perRequest = m.split(); perStream != "–" || perRequest != "160.00" {
		t.Errorf("an agent without samples: %s, %s; want –, 160.00", perStream, perRequest)
	}
	m.run[1] = agent(1, 65_000, 50_000, 48)
	m.held = nil
	if perStream, perRequest = m.split(); perStream != "693.88" || perRequest != "–" {
		t.Errorf("without the held run: %s, %s; want 693.88, –", perStream, perRequest)
	}
	m.baseOpenKnown = false
	if perStream, _ = m.split(); perStream != "–" {
		t.Errorf("a base without samples: %s; want –", perStream)
	}
}
