package metrics

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// fixtureRun is four requests over a 2-second run: three successes (one
// with usage, one counted by the tokenizer, one single-token) and one
// failure. Expected statistics below were computed with a Python
// transcription of numpy's formulas over the same float seconds.
func fixtureRun(spilled bool) *RunData {
	results := []RequestResult{
		{Index: 0, Success: true, PromptLen: 10, OutputTokens: 5, ChunkEvents: 5,
			StartNs: 1000 * ms, ArrivalNs: 990 * ms, QueueNs: 10 * ms,
			TTFTNs: 100 * ms, LatencyNs: 500 * ms,
			ITLNs: []int64{100 * ms, 100 * ms, 100 * ms, 100 * ms}},
		{Index: 1, Error: "boom", PromptLen: 7, StartNs: 1100 * ms, ArrivalNs: 1100 * ms, NumInputSequences: 1},
		{Index: 2, Success: true, PromptLen: 20, ChunkEvents: 3, GeneratedText: "a b c",
			StartNs: 1200 * ms, ArrivalNs: 1200 * ms, TTFTNs: 200 * ms, LatencyNs: 1300 * ms,
			ITLNs: []int64{500 * ms, 600 * ms}},
		{Index: 3, Success: true, PromptLen: 5, OutputTokens: 1, ChunkEvents: 1,
			StartNs: 2600 * ms, ArrivalNs: 2600 * ms, TTFTNs: 50 * ms, LatencyNs: 50 * ms},
	}
	if !spilled {
		return &RunData{DurationNs: 2000 * ms, Log: LogOf(results...)}
	}
	return &RunData{DurationNs: 2000 * ms, Log: spilledLog(results...)}
}

// spilledLog is LogOf through a file, one record a chunk: the path of a
// long run's log.
func spilledLog(results ...RequestResult) *Log {
	b := NewLogBuilder(LogConfig{MemoryBytes: -1, ChunkBytes: 1})
	for i := range results {
		b.Append(&results[i])
	}
	return b.Log()
}

// runOf is a run of the given results.
func runOf(durationNs int64, results ...RequestResult) *RunData {
	return &RunData{DurationNs: durationNs, Log: LogOf(results...)}
}

// stampsOf returns the token times of a request whose first token came at
// firstNs and whose later tokens followed the given gaps.
func stampsOf(firstNs int64, gapsNs []int64) []int64 {
	stamps := []int64{firstNs}
	for _, g := range gapsNs {
		stamps = append(stamps, stamps[len(stamps)-1]+g)
	}
	return stamps
}

func words(s string) int { return len(strings.Fields(s)) }

func fixtureOptions() ComputeOptions {
	return ComputeOptions{
		Percentiles:        []float64{50, 99},
		Goodput:            map[string]float64{"ttft": 150, "e2el": 1000},
		CountTokens:        words,
		ClientQueue:        true,
		QueueInclusiveE2EL: true,
	}
}

func wantStats(t *testing.T, name string, got Stats, mean, median, std, p50, p99 float64) {
	t.Helper()
	if got.MeanMs != mean || got.MedianMs != median || got.StdMs != std ||
		got.Percentiles[0].ValueMs != p50 || got.Percentiles[1].ValueMs != p99 {
		t.Errorf("%s = mean %v median %v std %v p50 %v p99 %v; want %v %v %v %v %v", name,
			got.MeanMs, got.MedianMs, got.StdMs, got.Percentiles[0].ValueMs, got.Percentiles[1].ValueMs,
			mean, median, std, p50, p99)
	}
}

func TestComputeGenerationExact(t *testing.T) {
	s, err := Compute(fixtureRun(false), fixtureOptions())
	if err != nil {
		t.Fatal(err)
	}
	ints := []struct {
		name      string
		got, want int
	}{
		{"completed", s.Completed, 3},
		{"failed", s.Failed, 1},
		{"total input", s.TotalInput, 35},
		{"total output", s.TotalOutput, 9},
		{"peak concurrency", s.MaxConcurrentRequests, 2},
	}
	for _, c := range ints {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	floats := []struct {
		name      string
		got, want float64
	}{
		{"duration", s.DurationS, 2},
		{"request throughput", s.RequestThroughput, 1.5},
		{"goodput", s.RequestGoodput, 1}, // requests 0 and 3 meet both SLOs
		{"output throughput", s.OutputThroughput, 4.5},
		{"total token throughput", s.TotalTokenThroughput, 22},
		{"peak output tokens/s", s.MaxOutputTokensPerS, 7}, // 5 + 2 events in [1 s, 2 s)
	}
	for _, c := range floats {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	wantStats(t, "TTFT", s.TTFT, 116.66666666666669, 100, 62.360956446232365, 100, 198)
	wantStats(t, "TPOT", s.TPOT, 325, 325, 225.00000000000003, 325, 545.5)
	wantStats(t, "ITL", s.ITL, 250, 100, 214.0872096444188, 100, 595)
	wantStats(t, "E2EL", s.E2EL, 616.6666666666667, 500, 516.9354139756941, 500, 1284)
	wantStats(t, "queue", *s.ClientQueueTime, 3.3333333333333335, 0, 4.714045207910317, 0, 9.799999999999999)
	wantStats(t, "E2EL+queue", *s.E2ELInclQueue, 620, 510, 516.2040940041707, 510, 1284.2)
	if len(s.Failures) != 1 || s.Failures[0] != "boom" {
		t.Errorf("failures = %q, want [boom]", s.Failures)
	}
}

// TestComputeGenerationFromFile checks that a log read back from its
// file, one record a frame, gives the very Summary of the one in memory.
func TestComputeGenerationFromFile(t *testing.T) {
	inMemory, err := Compute(fixtureRun(false), fixtureOptions())
	if err != nil {
		t.Fatal(err)
	}
	d := fixtureRun(true)
	if disk, mem := d.Log.Bytes(); disk == 0 || mem != 0 {
		t.Fatalf("fixture log: %d bytes on disk, %d in memory; want all on disk", disk, mem)
	}
	s, err := Compute(d, fixtureOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, inMemory) {
		t.Errorf("summary from the file differs from the one in memory:\n got %+v\nwant %+v", s, inMemory)
	}
	if s.MaxOutputTokensPerS != 7 {
		t.Errorf("peak = %v, want 7", s.MaxOutputTokensPerS)
	}
}

func TestComputeNoTokenizerCountsOneToken(t *testing.T) {
	opts := fixtureOptions()
	opts.CountTokens = nil
	s, err := Compute(fixtureRun(false), opts)
	if err != nil {
		t.Fatal(err)
	}
	if s.TotalOutput != 7 {
		t.Errorf("without tokenizer: total output %d, want 7 (request 2 counted as 1)", s.TotalOutput)
	}
	// With one output token request 2 leaves the TPOT list.
	if s.TPOT.MeanMs != 100 {
		t.Errorf("TPOT mean = %v, want 100 (request 0 only)", s.TPOT.MeanMs)
	}
}

func TestComputeAllFailed(t *testing.T) {
	d := runOf(1000*ms, RequestResult{Error: "e0"}, RequestResult{Error: "e1"})
	s, err := Compute(d, ComputeOptions{Percentiles: []float64{99}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Completed != 0 || s.Failed != 2 || s.MaxOutputTokensPerS != 0 || s.MaxConcurrentRequests != 0 {
		t.Errorf("all failed: %+v", s)
	}
	if s.TTFT.MeanMs != 0 || s.TTFT.Percentiles[0].ValueMs != 0 {
		t.Errorf("empty TTFT should be zeros, got %+v", s.TTFT)
	}
}

func TestComputeCapsFailures(t *testing.T) {
	var rs []RequestResult
	for i := range 15 {
		rs = append(rs, RequestResult{Index: i, Error: string(rune('a' + i))})
	}
	d := runOf(1000*ms, rs...)
	s, _ := Compute(d, ComputeOptions{})
	if len(s.Failures) != MaxReportedFailures || s.Failures[9] != "j" || s.Failed != 15 {
		t.Errorf("failures = %q (failed %d), want the first 10 of 15", s.Failures, s.Failed)
	}
}

func TestComputePooling(t *testing.T) {
	d := runOf(4000*ms,
		RequestResult{Success: true, PromptLen: 100, NumInputSequences: 2, TTFTNs: 40 * ms, LatencyNs: 40 * ms},
		RequestResult{Success: true, PromptLen: 50, NumInputSequences: 1, TTFTNs: 20 * ms, LatencyNs: 20 * ms},
		RequestResult{Error: "Internal Server Error", NumInputSequences: 1},
	)
	s, err := Compute(d, ComputeOptions{Pooling: true, Percentiles: []float64{50, 99}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Completed != 2 || s.Failed != 1 || s.TotalInput != 150 || s.TotalInputSequences != 3 {
		t.Errorf("pooling counts: %+v", s)
	}
	if s.RequestThroughput != 0.5 || s.InputSequenceThroughput != 0.75 || s.TotalTokenThroughput != 37.5 {
		t.Errorf("pooling rates: %v %v %v", s.RequestThroughput, s.InputSequenceThroughput, s.TotalTokenThroughput)
	}
	wantStats(t, "E2EL", s.E2EL, 30, 30, 10, 30, 39.800000000000004)
	if s.Failures != nil || s.TPOT.Percentiles != nil {
		t.Errorf("pooling summary carries generation fields: %+v", s)
	}
}

func TestComputeRejectsBadInput(t *testing.T) {
	for _, p := range []float64{-1, 100.5, math.NaN()} {
		if _, err := Compute(&RunData{}, ComputeOptions{Percentiles: []float64{p}}); err == nil {
			t.Errorf("percentile %v accepted", p)
		}
	}
	if _, err := Compute(nil, ComputeOptions{}); err == nil {
		t.Error("nil run data accepted")
	}
}

func TestPeakConcurrencyHalfOpen(t *testing.T) {
	// [0,1) and [1,2) never overlap; [0.5,1.5) overlaps both.
	rs := []RequestResult{
		{Success: true, StartNs: 0, LatencyNs: 1000 * ms},
		{Success: true, StartNs: 1000 * ms, LatencyNs: 1000 * ms},
	}
	if got := peakConcurrency(LogOf(rs...)); got != 1 {
		t.Errorf("back-to-back requests: peak %d, want 1", got)
	}
	rs = append(rs, RequestResult{Success: true, StartNs: 500 * ms, LatencyNs: 1000 * ms})
	if got := peakConcurrency(LogOf(rs...)); got != 2 {
		t.Errorf("overlapping requests: peak %d, want 2", got)
	}
}

func TestPeakAccumulatesFloatSeconds(t *testing.T) {
	// Python walks a request's token times as start + ttft + itl[0] + ...
	// in float seconds: 0.1 + 0.1 + ... (ten terms) is 0.9999999999999999,
	// so the tenth event stays in bucket 0, where integer nanoseconds would
	// put it at exactly 1 s, in bucket 1.
	gaps := slices.Repeat([]int64{100 * ms}, 9)
	r := RequestResult{Success: true, ChunkEvents: 10, TTFTNs: 100 * ms, LatencyNs: 1000 * ms, ITLNs: gaps}
	s, err := Compute(runOf(2000*ms, r), ComputeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxOutputTokensPerS != 10 {
		t.Errorf("peak = %v, want 10", s.MaxOutputTokensPerS)
	}
}

// BenchmarkCompute measures the post-run statistics of 10,000 requests of
// 200 token events each (2M gaps), from a log in memory and from its file.
func BenchmarkCompute(b *testing.B) {
	var rs []RequestResult
	for i := range 10000 {
		r := RequestResult{Index: i, Success: true, PromptLen: 1000, OutputTokens: 200, ChunkEvents: 200,
			StartNs: int64(i) * 4e6, TTFTNs: int64(50e6 + i%1000*1000)}
		for g := range 199 {
			r.ITLNs = append(r.ITLNs, int64(20e6+(i*31+g*17)%5000*1000))
		}
		r.LatencyNs = r.TTFTNs
		for _, gap := range r.ITLNs {
			r.LatencyNs += gap
		}
		rs = append(rs, r)
	}
	file := NewLogBuilder(LogConfig{MemoryBytes: -1})
	for i := range rs {
		file.Append(&rs[i])
	}
	opts := ComputeOptions{Percentiles: []float64{50, 90, 99}}
	for _, c := range []struct {
		name string
		d    *RunData
	}{{"memory", runOf(int64(60e9), rs...)}, {"file", &RunData{DurationNs: int64(60e9), Log: file.Log()}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compute(c.d, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
