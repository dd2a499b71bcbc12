package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// runPerToken runs a benchmark against a mock started with cfg and returns
// what it printed, its sidecar, its result JSON and the mock's truth log
// (read after the mock closed).
func runPerToken(t *testing.T, cfg mock.Config, name string, args ...string) (stdout, stderr string, sc report.Sidecar, result map[string]any, truth []mock.TruthRequest) {
	t.Helper()
	dir := t.TempDir()
	cfg.TruthLog = filepath.Join(dir, "truth.log")
	srv := startTinyMock(t, cfg)
	c, err := benchtest.ParseArgs(append([]string{"--base-url", "http://" + srv.Addr(), "--tokenizer", tinyTokenizer, "--disable-tqdm",
		"--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", name + ".json"}, args...), benchtest.NoEnv)
	if err != nil {
		t.Fatalf("parseArgs: %v", err)
	}
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), c, &out, &errOut); err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if truth, err = mock.ReadTruthLog(cfg.TruthLog); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, name+".stampede.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &sc); err != nil {
		t.Fatalf("sidecar: %v\n%s", err, raw)
	}
	if raw, err = os.ReadFile(filepath.Join(dir, name+".json")); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &result); err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), sc, result, truth
}

// benchmarkChunks returns the tokens each event of the benchmark's own
// requests carried, by the truth log (the test request has no id).
func benchmarkChunks(truth []mock.TruthRequest) [][]int {
	var out [][]int
	for _, r := range truth {
		if r.RequestID == "" {
			continue
		}
		var carried []int
		for _, tok := range r.Tokens {
			carried = append(carried, tok.Tokens)
		}
		out = append(out, carried)
	}
	return out
}

// itlsOf returns the result JSON's per-request ITLs in seconds.
func itlsOf(t *testing.T, result map[string]any) [][]float64 {
	t.Helper()
	var out [][]float64
	for _, l := range result["itls"].([]any) {
		var gaps []float64
		for _, g := range l.([]any) {
			gaps = append(gaps, g.(float64))
		}
		out = append(out, gaps)
	}
	return out
}

func nearFloat(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestPerTokenITLAgainstMock: a mock sending four tokens per chunk. The
// counts the client read from the running usage are the ones the truth
// log says went out; ITL per token is each chunk gap split over its
// tokens, recomputed here from the saved per-chunk ITLs; Python's block
// and result are those of a run without the flag.
func TestPerTokenITLAgainstMock(t *testing.T) {
	const k, outLen, prompts = 4, 17, 6
	cfg := mock.Config{TTFT: time.Millisecond, ITL: 2 * time.Millisecond, TokensPerChunk: k}
	args := []string{"--dataset-name", "random", "--num-prompts", fmt.Sprint(prompts), "--random-input-len", "16",
		"--random-output-len", fmt.Sprint(outLen), "--max-concurrency", "3", "--metric-percentiles", "50,99"}
	plain, _, _, plainResult, _ := runPerToken(t, cfg, "plain", args...)
	stdout, stderr, sc, result, truth := runPerToken(t, cfg, "r", append(args, "--per-token-itl")...)

	block, extra, found := strings.Cut(stdout, "="+report.PerTokenTitle)
	if !found {
		t.Fatalf("no per-token block:\n%s", stdout)
	}
	if got, want := lineLabels(block), lineLabels(plain); strings.Join(got[:len(got)-1], "\n") != strings.Join(want, "\n") {
		t.Errorf("Python's block changed with --per-token-itl:\n%s\nwithout:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := slices.Sorted(maps.Keys(result)), slices.Sorted(maps.Keys(plainResult)); !slices.Equal(got, want) {
		t.Errorf("result keys changed with --per-token-itl: %v, without %v", got, want)
	}
	if strings.Contains(stderr, "per-token ITL:") {
		t.Errorf("a fallback reported where every chunk carried usage:\n%s", stderr)
	}
	for _, want := range []string{"Requests with running usage:", "Mean tokens per chunk:", "4 tokens:", "1 token:",
		"Mean ITL per chunk (ms):", "P99 ITL per token (ms):"} {
		if !strings.Contains(extra, want) {
			t.Errorf("per-token block lacks %q:\n%s", want, extra)
		}
	}

	// What the mock sent, by its truth log.
	chunks := benchmarkChunks(truth)
	sentHist := map[int]int64{}
	for _, c := range chunks {
		for _, n := range c {
			sentHist[n]++
		}
	}
	if len(chunks) != prompts || fmt.Sprint(chunks[0]) != "[4 4 4 4 1]" {
		t.Fatalf("truth log: %d requests, first carried %v", len(chunks), chunks[0])
	}
	p := sc.PerToken
	if p == nil || p.Requests != prompts || p.Counted != prompts || p.Fallback != 0 || p.Note != "" {
		t.Fatalf("sidecar per_token %+v", p)
	}
	gotHist := map[int]int64{}
	for _, b := range p.TokensPerChunk.Histogram {
		gotHist[b.Tokens] = b.Chunks
	}
	if fmt.Sprint(gotHist) != fmt.Sprint(sentHist) || p.TokensPerChunk.Tokens != prompts*outLen || p.TokensPerChunk.EmptyChunks != 0 {
		t.Errorf("tokens per chunk %+v; the mock sent %v", p.TokensPerChunk, sentHist)
	}
	if want := float64(outLen) / 5; !nearFloat(p.TokensPerChunk.Mean, want) || p.TokensPerChunk.P50 != k || p.TokensPerChunk.P99 != k {
		t.Errorf("tokens per chunk mean %v p50 %v p99 %v; want %v, %d, %d", p.TokensPerChunk.Mean, p.TokensPerChunk.P50, p.TokensPerChunk.P99, want, k, k)
	}

	if len(p.PerRequest) != prompts {
		t.Fatalf("sidecar per_request has %d requests, want %d", len(p.PerRequest), prompts)
	}
	for _, r := range p.PerRequest {
		if r.RunningUsage != "counted" || fmt.Sprint(r.ChunkTokens) != fmt.Sprint(chunks[0]) {
			t.Errorf("request %d: %s %v, the mock sent %v", r.Index, r.RunningUsage, r.ChunkTokens, chunks[0])
		}
	}

	// ITL per token from the saved per-chunk ITLs and the truth's counts:
	// gap j precedes event j+1, whose tokens share it.
	var perToken, perChunk []float64
	for _, gaps := range itlsOf(t, result) {
		for j, g := range gaps {
			perChunk = append(perChunk, g)
			n := chunks[0][j+1]
			for range n {
				perToken = append(perToken, g/float64(n))
			}
		}
	}
	if p.Samples != len(perToken) || p.Samples != prompts*(outLen-k) {
		t.Fatalf("%d per-token samples, want %d", p.Samples, len(perToken))
	}
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(len(v)) * 1000
	}
	median := func(v []float64) float64 {
		s := slices.Sorted(slices.Values(v))
		return (s[(len(s)-1)/2] + s[len(s)/2]) / 2 * 1000
	}
	if !nearFloat(p.ITLPerToken.MeanMs, mean(perToken)) || !nearFloat(p.ITLPerToken.MedianMs, median(perToken)) {
		t.Errorf("ITL per token mean %v median %v ms; from the saved ITLs %v, %v", p.ITLPerToken.MeanMs, p.ITLPerToken.MedianMs, mean(perToken), median(perToken))
	}
	if !nearFloat(p.ITLPerChunk.MeanMs, result["mean_itl_ms"].(float64)) || !nearFloat(p.ITLPerChunk.MeanMs, mean(perChunk)) {
		t.Errorf("ITL per chunk %v ms, the result's %v", p.ITLPerChunk.MeanMs, result["mean_itl_ms"])
	}
	// The per-token samples share the chunk gaps out: the same total time
	// over more samples.
	if !nearFloat(p.ITLPerToken.MeanMs*float64(p.Samples), p.ITLPerChunk.MeanMs*float64(len(perChunk))) {
		t.Errorf("per-token total %v ms, per-chunk total %v ms", p.ITLPerToken.MeanMs*float64(p.Samples), p.ITLPerChunk.MeanMs*float64(len(perChunk)))
	}
}

// TestPerTokenITLFallback: a server that sends no running usage (here the
// extra body overrides the stream options the flag asks for) leaves ITL
// per token at one token per chunk, and the run says so.
func TestPerTokenITLFallback(t *testing.T) {
	cfg := mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond, TokensPerChunk: 3}
	stdout, stderr, sc, _, _ := runPerToken(t, cfg, "f", "--dataset-name", "random", "--num-prompts", "4",
		"--random-input-len", "16", "--random-output-len", "9", "--max-concurrency", "2", "--per-token-itl",
		"--extra-body", `{"stream_options": {"include_usage": true}}`)
	p := sc.PerToken
	if p == nil || p.Counted != 0 || p.Fallback != 4 || p.Missing != 4 || !strings.Contains(p.Note, "no running usage") {
		t.Fatalf("sidecar per_token %+v", p)
	}
	if !slices.EqualFunc([]report.SidecarStats{p.ITLPerToken}, []report.SidecarStats{p.ITLPerChunk}, func(a, b report.SidecarStats) bool {
		return a.MeanMs == b.MeanMs && a.MedianMs == b.MedianMs && a.StdMs == b.StdMs && slices.Equal(a.Percentiles, b.Percentiles)
	}) {
		t.Errorf("fallen back, ITL per token %+v differs from ITL per chunk %+v", p.ITLPerToken, p.ITLPerChunk)
	}
	if p.TokensPerChunk.Chunks != 0 || len(p.TokensPerChunk.Histogram) != 0 {
		t.Errorf("tokens per chunk guessed: %+v", p.TokensPerChunk)
	}
	if !strings.Contains(stderr, "per-token ITL: the server sent no running usage") {
		t.Errorf("stderr does not say what fell back:\n%s", stderr)
	}
	if !strings.Contains(stdout, "No running usage: tokens per chunk unknown.") || !strings.Contains(stdout, fmt.Sprintf("%-40s %-10d\n", "Requests at one token per chunk:", 4)) {
		t.Errorf("block does not say what fell back:\n%s", stdout)
	}
}
