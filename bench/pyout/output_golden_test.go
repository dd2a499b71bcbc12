package pyout

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/pyout/pyouttest"
	"github.com/stampede-bench/stampede/metrics"
)

// go test ./bench/pyout -run TestGolden -update rewrites testdata from
// the current code; review the diff before committing it.
var update = flag.Bool("update", false, "rewrite golden files in testdata/output")

const ms = int64(time.Millisecond)

func goldenRun() *metrics.RunData { return pyouttest.GoldenRun() }

// recordRun replays the token events of a run's results through two
// shards' Recorders as a run without --save-detailed records them (no
// per-request ITLNs; every gap in the recorders' arenas) and merges them:
// the RunData the default path computes from. A failure keeps its first
// token event, if it had a TTFT; a success sends its usage when it had
// one and its text split into one piece per event.
//
// With spill set the records go to a file, a few records a chunk.
func recordRun(src *metrics.RunData, spill bool) *metrics.RunData {
	cfg := metrics.LogConfig{}
	if spill {
		cfg = metrics.LogConfig{MemoryBytes: -1, ChunkBytes: 300}
	}
	opts := metrics.Options{Spool: metrics.NewSpool(cfg), KeepText: true}
	recs := []*metrics.Recorder{metrics.NewRecorder(opts), metrics.NewRecorder(opts)}
	var s metrics.Stream
	for _, r := range src.Log.All() {
		rec := recs[r.Index%2]
		rec.Begin(&s, r.Index, r.PromptLen, r.ArrivalNs, r.StartNs)
		if !r.Success {
			if r.TTFTNs != 0 {
				s.Token(r.StartNs+r.TTFTNs, nil)
			}
			rec.Fail(&s, r.Error)
			continue
		}
		pieces := strings.SplitAfterN(r.GeneratedText, " ", r.ChunkEvents)
		ts := r.StartNs + r.TTFTNs
		s.Token(ts, []byte(pieces[0]))
		k := 1
		for gap := range r.ITLs() {
			ts += gap
			s.Token(ts, []byte(pieces[k]))
			k++
		}
		if r.OutputTokens != 0 {
			s.Usage(-1, int64(r.OutputTokens))
		}
		rec.EndStream(&s)
	}
	d, err := metrics.Gather(metrics.SortOptions{Requests: src.Log.Len(), KeepText: true}, recs...)
	if err != nil {
		panic(err)
	}
	d.DurationNs = src.DurationNs
	return d
}

// spilled is d with its log copied into a file, one record a chunk: the
// path of a log that outgrew memory.
func spilled(d *metrics.RunData) *metrics.RunData {
	b := metrics.NewLogBuilder(metrics.LogConfig{MemoryBytes: -1, ChunkBytes: 1})
	for _, r := range d.Log.All() {
		b.Append(r)
	}
	out := *d
	out.Log = b.Log()
	return &out
}

// longRun is a default-path run long enough for numpy's blocked summation
// to matter: 24 requests of 400 to 999 token events (about 16,000 gaps,
// more than numpy's 8,192-value buffer), odd nanosecond gaps, one stall of
// 5 s (longer than a packed gap holds), a stream cut after 300 events and
// one request that never got a token. pyref.py builds the same run.
func longRun() *metrics.RunData {
	d := &metrics.RunData{}
	var rs []metrics.RequestResult
	for i := range 24 {
		start := int64(i)*37*ms + int64(i*i*7919%1000)*1000
		r := metrics.RequestResult{
			Index: i, PromptLen: 200 + i, StartNs: start, ArrivalNs: start - int64(i%5)*3*ms,
			QueueNs: int64(i%5) * 3 * ms, NumInputSequences: 1,
			TTFTNs: 40*ms + int64(i*104729%50000)*1000 + int64(i),
		}
		events := 400 + i*131%600
		switch i {
		case 7:
			r.Error, r.TTFTNs = "Server disconnected", 0
			rs = append(rs, r)
			continue
		case 13:
			events = 300
		}
		text := make([]string, events)
		text[0] = "w "
		for k := 1; k < events; k++ {
			gap := 15*ms + int64((i*7919+k*104729)%20011)*1000 + int64(k*k%997)
			if i == 11 && k == 100 {
				gap = 5*int64(time.Second) + 123
			}
			r.ITLNs = append(r.ITLNs, gap)
			text[k] = "w "
		}
		r.ChunkEvents = events
		r.GeneratedText = strings.Join(text, "")
		if i == 13 {
			r.Error = "Connection reset by peer"
		} else {
			r.Success = true
			r.LatencyNs = r.TTFTNs
			for _, gap := range r.ITLNs {
				r.LatencyNs += gap
			}
			if i%2 == 0 {
				r.OutputTokens = events
			}
		}
		rs = append(rs, r)
		d.DurationNs = max(d.DurationNs, start+r.LatencyNs+3*ms)
	}
	d.Log = metrics.LogOf(rs...)
	return d
}

func words(s string) int { return len(strings.Fields(s)) }

type goldenCase struct {
	name   string
	run    func() *metrics.RunData
	opts   metrics.ComputeOptions
	params ReportParams
}

func strptr(s string) *string { return &s }

func goldenCases() []goldenCase {
	full := ReportParams{
		RunSettings: RunSettings{
			Backend:           "openai",
			Label:             strptr("nightly"),
			ModelID:           "meta-llama/Llama-3.1-8B-Instruct",
			TokenizerID:       "meta-llama/Llama-3.1-8B-Instruct",
			NumPrompts:        12,
			RequestRate:       10,
			Burstiness:        1,
			MaxConcurrency:    4,
			Metadata:          []string{"version=0.3.3", " tp = 1 ", "backend=override", "note=a=b"},
			PercentileMetrics: []string{"ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue", "bogus"},
			Goodput:           true,
			SaveResult:        true,
			SaveDetailed:      true,
		},
		RunResults: RunResults{
			Probe: &metrics.ProbeStats{Completed: 9, Failed: 1, MedianE2ELMs: 12.345, P99E2ELMs: 40.5, MaxE2ELMs: 41},
			SpecDecode: &metrics.SpecDecodeStats{NumDrafts: 200, DraftTokens: 600, AcceptedTokens: 400,
				AcceptanceRate: 66.66666666666666 /* 400/600*100 in float64 */, AcceptanceLength: 3, PerPositionAcceptanceRates: []float64{0.9, 0, 0.3}},
		},
	}
	fullOpts := metrics.ComputeOptions{
		Percentiles: []float64{50, 90, 99, 99.9, 12.5}, Goodput: map[string]float64{"ttft": 150, "tpot": 25},
		CountTokens: words, ClientQueue: true, QueueInclusiveE2EL: true,
	}
	return []goldenCase{
		{name: "generation_full", run: goldenRun, opts: fullOpts, params: full},
		{
			name: "generation_no_tokenizer", run: goldenRun,
			opts: metrics.ComputeOptions{Percentiles: []float64{99}},
			params: ReportParams{
				RunSettings: RunSettings{
					Backend:           "openai-chat",
					ModelID:           "Qwen/Qwen3-0.6B",
					NumPrompts:        12,
					RequestRate:       math.Inf(1),
					Burstiness:        1,
					PercentileMetrics: []string{"ttft", "tpot", "itl"},
					Workers:           25,
					SaveResult:        true,
				},
				RunResults: RunResults{
					Diffusion: &metrics.DiffusionStats{DenoisingSteps: 937.5, CanvasPositions: 32000, CommittedTokens: 2000,
						CommittedThroughput: 500, StepsPerCanvas: 15, CommittedPerStep: 2000 / 937.5},
					SpecDecode: &metrics.SpecDecodeStats{NumDrafts: 1, DraftTokens: 1},
				},
			},
		},
		{
			// The default path: no --save-detailed, the gaps recorded in
			// the shards' arenas, not per request.
			name: "generation_default", opts: func() metrics.ComputeOptions {
				o := fullOpts
				o.QueueInclusiveE2EL = false // an infinite --request-rate
				return o
			}(), params: func() ReportParams {
				p := full
				p.SaveDetailed = false
				p.Probe, p.SpecDecode, p.Metadata = nil, nil, nil
				p.RampUpStrategy, p.RampUpStartRPS, p.RampUpEndRPS = "linear", 1, 3
				p.RequestRate = math.Inf(1)
				p.RPSChangeEvents = []RPSChange{
					{1, "2026-11-29T17:30:00.123456"}, {2, "2026-11-29T17:30:02.000001"}, {3, "2026-11-29T17:30:02.000001"},
				}
				return p
			}(),
			run: func() *metrics.RunData { return recordRun(goldenRun(), false) },
		},
		{
			// The default path over more gaps than numpy's buffer, with a
			// rate, burstiness, a concurrency cap, goodput, --label,
			// --metadata and the percentiles 0,1.5,50,90,99.99,100.
			name: "generation_long", run: func() *metrics.RunData { return recordRun(longRun(), false) },
			opts: metrics.ComputeOptions{
				Percentiles: []float64{0, 1.5, 50, 90, 99.99, 100}, Goodput: map[string]float64{"ttft": 60, "e2el": 15000},
				CountTokens: words, ClientQueue: true, QueueInclusiveE2EL: true,
			},
			params: ReportParams{
				RunSettings: RunSettings{
					Backend:           "openai-chat",
					Label:             strptr("long"),
					ModelID:           "Qwen/Qwen3-0.6B",
					TokenizerID:       "Qwen/Qwen3-0.6B",
					NumPrompts:        24,
					RequestRate:       25,
					Burstiness:        0.7,
					MaxConcurrency:    16,
					Metadata:          []string{"run=long", "gaps=16k"},
					PercentileMetrics: []string{"ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue"},
					Goodput:           true,
					SaveResult:        true,
				},
			},
		},
		{
			// generation_long's options on chat, detailed, recorded as
			// --save-detailed records.
			name: "generation_chat_detailed", run: func() *metrics.RunData { return recordRun(goldenRun(), false) },
			opts: metrics.ComputeOptions{
				Percentiles: []float64{0, 1.5, 50, 90, 99.99, 100}, Goodput: map[string]float64{"ttft": 150, "e2el": 250},
				CountTokens: words, ClientQueue: true, QueueInclusiveE2EL: true,
			},
			params: ReportParams{
				RunSettings: RunSettings{
					Backend:           "openai-chat",
					Label:             strptr("chat"),
					ModelID:           "Qwen/Qwen3-0.6B",
					TokenizerID:       "Qwen/Qwen3-0.6B",
					NumPrompts:        12,
					RequestRate:       25,
					Burstiness:        0.7,
					MaxConcurrency:    3,
					Metadata:          []string{"run=chat"},
					PercentileMetrics: []string{"ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue"},
					Goodput:           true,
					SaveResult:        true,
					SaveDetailed:      true,
				},
			},
		},
		{
			name: "pooling", opts: metrics.ComputeOptions{Pooling: true, Percentiles: []float64{50, 99}, ClientQueue: true},
			params: ReportParams{
				RunSettings: RunSettings{
					Backend:           "openai-embeddings",
					ModelID:           "BAAI/bge-m3",
					TokenizerID:       "BAAI/bge-m3",
					NumPrompts:        3,
					RequestRate:       math.Inf(1),
					Burstiness:        1,
					MaxConcurrency:    2,
					PercentileMetrics: []string{"e2el", "client_queue_time", "e2el_including_client_queue"},
					SaveResult:        true,
					SaveDetailed:      true,
				},
			},
			run: func() *metrics.RunData {
				return &metrics.RunData{DurationNs: 4200 * ms, Log: metrics.LogOf([]metrics.RequestResult{
					{Index: 0, Success: true, PromptLen: 512, NumInputSequences: 2, TTFTNs: 41 * ms, LatencyNs: 41 * ms, QueueNs: 2 * ms},
					{Index: 1, Success: true, PromptLen: 0, NumInputSequences: 1, TTFTNs: 40 * ms, LatencyNs: 40 * ms},
					{Index: 2, Error: "Bad Request", NumInputSequences: 1},
				}...)}
			},
		},
		{
			name: "all_failed", opts: metrics.ComputeOptions{Percentiles: []float64{99}, CountTokens: words},
			params: ReportParams{
				RunSettings: RunSettings{
					Backend:           "vllm",
					ModelID:           "m",
					TokenizerID:       "m",
					NumPrompts:        2,
					RequestRate:       0.5,
					Burstiness:        0.5,
					PercentileMetrics: []string{"ttft", "tpot", "itl", "e2el"},
					SaveResult:        true,
				},
			},
			run: func() *metrics.RunData {
				return &metrics.RunData{DurationNs: 1500 * ms, Log: metrics.LogOf([]metrics.RequestResult{
					{Index: 0, Error: "Never received a valid chunk to calculate TTFT.This response will be marked as failed!"},
					{Index: 1, Error: "Service Unavailable"},
				}...)}
			},
		},
	}
}

var goldenNow = time.Date(2026, 11, 29, 17, 30, 5, 0, time.Local)

// renderGolden produces a case's console output (stdout then stderr) and
// result JSON.
func renderGolden(t *testing.T, c goldenCase) (console, result []byte) {
	t.Helper()
	return renderRun(t, c, c.run())
}

// renderRun is renderGolden of the run d.
func renderRun(t *testing.T, c goldenCase, d *metrics.RunData) (console, result []byte) {
	t.Helper()
	s, err := metrics.Compute(d, c.opts)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteResult(&out, s, &c.params); err != nil {
		t.Fatal(err)
	}
	out.WriteString("--- stderr ---\n")
	if err := WriteWarnings(&out, s); err != nil {
		t.Fatal(err)
	}
	res, err := BuildResult(s, d, &c.params, c.opts.CountTokens, goldenNow)
	if err != nil {
		t.Fatal(err)
	}
	js, err := res.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var streamed bytes.Buffer
	if _, err := res.WriteTo(&streamed); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(streamed.Bytes(), js) {
		t.Fatalf("the result written as it streams differs from its JSON:\n%q\n%q", streamed.Bytes(), js)
	}
	return out.Bytes(), js
}

// recorded are the cases whose runs are recorded through recorders.
var recorded = map[string]bool{"generation_default": true, "generation_long": true, "generation_chat_detailed": true}

// TestGoldenFromSpilledLogs computes every golden case again from its log
// written to a file one record a chunk, and from the run recorded through
// a spool that spills in chunks of a few records: the same bytes.
func TestGoldenFromSpilledLogs(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			console, result := renderGolden(t, c)
			runs := map[string]func() *metrics.RunData{"copied to a file": func() *metrics.RunData { return spilled(c.run()) }}
			if recorded[c.name] {
				runs["recorded, spilled"] = func() *metrics.RunData { return recordRun(c.run(), true) }
			}
			for name, run := range runs {
				gotConsole, gotResult := renderRun(t, c, run())
				if !bytes.Equal(gotConsole, console) || !bytes.Equal(gotResult, result) {
					t.Errorf("%s: outputs differ from the log in memory's:\n%s\n%s", name, gotConsole, console)
				}
			}
		})
	}
}

func TestGolden(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			console, result := renderGolden(t, c)
			for _, f := range []struct {
				ext  string
				data []byte
			}{{".txt", console}, {".json", result}} {
				path := filepath.Join("testdata", "output", c.name+f.ext)
				if *update {
					if err := os.WriteFile(path, f.data, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if !bytes.Equal(f.data, want) {
					t.Errorf("%s differs from the golden file:\n got: %q\nwant: %q", path, f.data, want)
				}
			}
		})
	}
}

// TestGoldenMatchesPythonReference runs testdata/output/pyref.py, an
// independent Python computation of the same fixtures with Python's own
// str.format and json, against the golden files.
func TestGoldenMatchesPythonReference(t *testing.T) {
	pyouttest.RunPyRef(t, filepath.Join("testdata", "output"))
}

// TestConsoleRowGeometry checks the invariant every golden line must keep:
// rows are exactly 51 characters unless a value is wider than 10.
func TestConsoleRowGeometry(t *testing.T) {
	for _, c := range goldenCases() {
		console, _ := renderGolden(t, c)
		block := false
		for _, line := range strings.Split(string(console), "\n") {
			if strings.HasPrefix(line, "=====") {
				block = !block || line != strings.Repeat("=", 50)
				if n := len([]rune(line)); n != 50 {
					t.Errorf("%s: rule %q has %d characters, want 50", c.name, line, n)
				}
				continue
			}
			if !block || strings.HasPrefix(line, "-") || line == "Per-position acceptance (%):" {
				continue
			}
			if n := len([]rune(line)); n < 51 || (n > 51 && line[50] == ' ') {
				t.Errorf("%s: row %q has %d characters, want 51", c.name, line, n)
			}
		}
	}
}

func TestBuildResultMetadataError(t *testing.T) {
	c := goldenCases()[0]
	c.params.Metadata = []string{"ok=1", "broken"}
	d := c.run()
	s, _ := metrics.Compute(d, c.opts)
	_, err := BuildResult(s, d, &c.params, c.opts.CountTokens, goldenNow)
	if err == nil || err.Error() != "Invalid metadata format. Please use KEY=VALUE format." {
		t.Errorf("error = %v, want Python's metadata format message", err)
	}
}

func TestBuildResultKeys(t *testing.T) {
	// Key order of the non-detailed generation result, as Python builds it.
	c := goldenCases()[0]
	c.params.SaveDetailed = false
	c.params.Probe, c.params.SpecDecode, c.params.Metadata = nil, nil, nil
	c.opts.Percentiles = []float64{99}
	c.params.PercentileMetrics = []string{"ttft"}
	d := c.run()
	s, _ := metrics.Compute(d, c.opts)
	res, err := BuildResult(s, d, &c.params, c.opts.CountTokens, goldenNow)
	if err != nil {
		t.Fatal(err)
	}
	want := "date endpoint_type backend label model_id tokenizer_id num_prompts request_rate burstiness " +
		"max_concurrency duration completed failed total_input_tokens total_output_tokens request_throughput " +
		"request_goodput output_throughput total_token_throughput latencies queue_times " +
		"max_output_tokens_per_s max_concurrent_requests rtfx mean_ttft_ms median_ttft_ms std_ttft_ms p99_ttft_ms"
	if got := strings.Join(res.dict.Keys(), " "); got != want {
		t.Errorf("keys:\n got %s\nwant %s", got, want)
	}
	if v := res.dict.Value("date"); v != "20261129-173005" {
		t.Errorf("date = %v", v)
	}
}

func TestWriteBanner(t *testing.T) {
	tests := []struct {
		p    RunSettings
		want string
	}{
		{RunSettings{RequestRate: math.Inf(1), Burstiness: 1},
			"Traffic request rate: inf\nBurstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: None\n"},
		{RunSettings{RequestRate: 10, Burstiness: 0.5, MaxConcurrency: 64, ProbeRequestRate: 2},
			"Traffic request rate: 10.0\nBurstiness factor: 0.5 (Gamma distribution)\nMaximum request concurrency: 64\n" +
				"Probe request rate: 2.0 req/s\n"},
		{RunSettings{RequestRate: math.Inf(1), Burstiness: 1, RampUpStrategy: "linear", RampUpStartRPS: 1, RampUpEndRPS: 20},
			"Traffic ramp-up strategy: linear.\nWill increase RPS from 1 to 20 RPS over the duration of the benchmark.\n" +
				"Burstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: None\n"},
		{RunSettings{SelfTimed: true, Burstiness: 1},
			"Self timing is set, using the timestamps from the trace file.\n"},
		// The multi-process fork prints its worker count right after the
		// concurrency cap.
		{RunSettings{RequestRate: 100, Burstiness: 1, MaxConcurrency: 3600, Workers: 25, ProbeRequestRate: 1},
			"Traffic request rate: 100.0\nBurstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: 3600\n" +
				"num_workers: 25\nProbe request rate: 1.0 req/s\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := WriteBanner(&b, &tt.p); err != nil {
			t.Fatal(err)
		}
		if b.String() != tt.want {
			t.Errorf("WriteBanner(%+v) =\n%q\nwant\n%q", tt.p, b.String(), tt.want)
		}
	}
}

func ExampleWriteResult() {
	d := &metrics.RunData{DurationNs: 2 * int64(time.Second), Log: metrics.LogOf([]metrics.RequestResult{
		{Success: true, PromptLen: 10, OutputTokens: 3, ChunkEvents: 3, TTFTNs: 100 * ms, LatencyNs: 300 * ms,
			ITLNs: []int64{100 * ms, 100 * ms}},
	}...)}
	s, _ := metrics.Compute(d, metrics.ComputeOptions{Percentiles: []float64{99}})
	p := &ReportParams{RunSettings: RunSettings{TokenizerID: "gpt2", RequestRate: math.Inf(1), PercentileMetrics: []string{"ttft"}}}
	var b bytes.Buffer
	WriteResult(&b, s, p)
	// Trailing spaces are part of Python's rows; show them as "·".
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		trimmed := strings.TrimRight(line, " ")
		fmt.Println(trimmed + strings.Repeat("·", len(line)-len(trimmed)))
	}
	// Output:
	// tip: install termplotlib and gnuplot to plot the metrics
	// ============ Serving Benchmark Result ============
	// Successful requests:                     1·········
	// Failed requests:                         0·········
	// Benchmark duration (s):                  2.00······
	// Total input tokens:                      10········
	// Total generated tokens:                  3·········
	// Request throughput (req/s):              0.50······
	// Output token throughput (tok/s):         1.50······
	// Peak output token throughput (tok/s):    3.00······
	// Peak concurrent requests:                1.00······
	// Total token throughput (tok/s):          6.50······
	// ---------------Time to First Token----------------
	// Mean TTFT (ms):                          100.00····
	// Median TTFT (ms):                        100.00····
	// P99 TTFT (ms):                           100.00····
	// ==================================================
}

// goldenBackends are the --backend rows the golden runs' command lines
// need (bench's table holds them all).
var goldenBackends = []plan.Backend{
	{Name: "vllm", OpenAICompatible: true, Completions: true},
	{Name: "openai", OpenAICompatible: true, Completions: true},
	{Name: "openai-chat", OpenAICompatible: true},
}

// parseArgs parses a golden run's command line.
func parseArgs(args []string, getenv func(string) string) (*plan.Plan, error) {
	return cli.ParseEnv(args, goldenBackends, getenv)
}

// compareGolden checks data against testdata/<dir>/<name>, or rewrites
// the file with -update.
func compareGolden(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	pyouttest.CompareGolden(t, filepath.Join("testdata", dir, name), data, *update)
}
