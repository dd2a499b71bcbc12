package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/cluster"
	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/metrics"
)

// runAgents runs size agents of one run in this process, each with args
// (and perAgent's, when given) and its index from $JOB_COMPLETION_INDEX,
// as a Kubernetes Job gives it, and returns what agent 0 printed; every
// agent must succeed, and only agent 0 prints the run.
func runAgents(t *testing.T, size int, args []string, perAgent ...func(i int) []string) (stdout, stderr string) {
	t.Helper()
	coordinator := fmt.Sprintf("127.0.0.1:%d", benchtest.FreePort(t))
	outs, errOuts := make([]bytes.Buffer, size), make([]bytes.Buffer, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for i := range size {
		argv := append(slices.Clone(args), "--cluster-size", fmt.Sprint(size), "--coordinator", coordinator, "--cluster-timeout-sec", "30")
		for _, f := range perAgent {
			argv = append(argv, f(i)...)
		}
		c, err := benchtest.ParseArgs(argv, func(k string) string {
			if k == "JOB_COMPLETION_INDEX" {
				return fmt.Sprint(i)
			}
			return ""
		})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { errs[i] = Run(context.Background(), c, &outs[i], &errOuts[i]) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("agent %d: %v\n%s\n%s", i, err, outs[i].String(), errOuts[i].String())
		}
	}
	for i := 1; i < size; i++ {
		if s := outs[i].String(); strings.Contains(s, "Serving Benchmark Result") || strings.Contains(s, "saved to") || strings.Contains(s, "profiler") {
			t.Errorf("agent %d printed what agent 0 alone prints:\n%s", i, s)
		}
	}
	return outs[0].String(), errOuts[0].String()
}

// sideBySide is one run made twice: on one host, then over agents.
type sideBySide struct {
	single                *plan.Plan
	singleOut             string
	singleDir, clusterDir string
	// stdout and stderr are agent 0's.
	stdout, stderr string
}

// oneHostAndAgents runs args (made for a mock and a result directory)
// on one host and then over size agents, each run against a mock of its
// own started with cfg.
func oneHostAndAgents(t *testing.T, cfg mock.Config, size int, args func(srv *mock.Server, dir string) []string) sideBySide {
	t.Helper()
	r := sideBySide{singleDir: t.TempDir(), clusterDir: t.TempDir()}
	var err error
	if r.single, err = benchtest.ParseArgs(args(startTinyMock(t, cfg), r.singleDir), benchtest.NoEnv); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), r.single, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errOut.String())
	}
	r.singleOut = out.String()
	r.stdout, r.stderr = runAgents(t, size, args(startTinyMock(t, cfg), r.clusterDir))
	return r
}

// mergedPartials merges the partials the agents saved in dir as part.bin.
func mergedPartials(t *testing.T, dir string) *cluster.MergedRun {
	t.Helper()
	m, err := cluster.MergePartialFiles([]string{filepath.Join(dir, "part.bin")})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sidecarOf reads a sidecar both as its type and as its keys.
func sidecarOf(t *testing.T, path string) (*report.Sidecar, map[string]any) {
	t.Helper()
	sc := readSidecar(t, path)
	return &sc, readJSON(t, path)
}

// ttftDelta is how many TTFTs the server's histogram gained over the
// scraped window.
func ttftDelta(sm *report.ServerMetrics) float64 {
	if sm == nil {
		return -1
	}
	for _, h := range sm.Histograms {
		if h.Name == "vllm:time_to_first_token_seconds" {
			return h.DeltaCumulative[len(h.DeltaCumulative)-1]
		}
	}
	return -1
}

// TestClusterExtrasMatchOneHost runs every extra that was once refused
// with agents (the probes, --server-metrics, --report, --plot-timeline,
// --steady-state, --profile, --warmup-time and --cooldown-time) over
// three agents and over one host, with the same flags and seed against
// the same kind of mock. The two runs are timed apart, so their figures
// differ by the machine's noise; what must agree is what each computes
// over: the cluster's block, files and sidecar sections are those of the
// whole run (every request, the server's whole window), never agent 0's
// third, and the steady state and the trimmed block are those of the
// merged records (recomputed here from the agents' saved partials).
func TestClusterExtrasMatchOneHost(t *testing.T) {
	const n = 48
	args := func(srv *mock.Server, dir string) []string {
		return []string{"--base-url", "http://" + srv.Addr(), "--tokenizer", tinyTokenizer, "--disable-tqdm", "--model", "mock-llm",
			"--dataset-name", "random", "--num-prompts", fmt.Sprint(n), "--random-input-len", "16", "--random-output-len", "8",
			"--request-rate", "inf", "--max-concurrency", "6", "--seed", "5",
			"--probe-request-rate", "50", "--server-metrics", "--server-metrics-interval", "0.02", "--profile",
			"--steady-state", "--steady-state-min-window", "0.01", "--warmup-time", "0.005", "--cooldown-time", "0.005",
			"--plot-timeline", "--report", filepath.Join(dir, "r.html"),
			"--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "run.json",
			"--save-partial", filepath.Join(dir, "part.bin")}
	}
	cfg := mock.Config{TTFT: 3 * time.Millisecond, ITL: 2 * time.Millisecond, PrefixCache: mock.PrefixCacheGlobal}
	const size = 3
	r := oneHostAndAgents(t, cfg, size, args)
	single, singleDir, clusterDir, stdout, stderr := r.single, r.singleDir, r.clusterDir, r.stdout, r.stderr

	// The same blocks and lines, in the same order.
	markers := []string{"Starting profiler...", "Serving Benchmark Result", "Probe requests completed:",
		report.TrimmedTitle, "Steady State", "Stopping profiler...", "Timeline plot saved to:", "Report saved to:"}
	for name, out := range map[string]string{"one host": r.singleOut, "cluster": stdout} {
		at := -1
		for _, m := range markers {
			i := strings.Index(out, m)
			if i < at {
				t.Errorf("%s: %q missing or out of order:\n%s", name, m, out)
				break
			}
			at = i
		}
	}
	if !strings.Contains(stderr, "cluster of 3 agents, clocks against agent 0") {
		t.Errorf("agent 0 did not print the agents' clocks:\n%s", stderr)
	}

	// The result JSON has the same keys (the probes' among them) and the
	// same requests.
	oneJSON, clusterJSON := readJSON(t, filepath.Join(singleDir, "run.json")), readJSON(t, filepath.Join(clusterDir, "run.json"))
	for k := range oneJSON {
		if _, ok := clusterJSON[k]; !ok {
			t.Errorf("the cluster's result lacks %q", k)
		}
	}
	for _, k := range []string{"completed", "input_lens", "output_lens"} {
		a, _ := json.Marshal(oneJSON[k])
		b, _ := json.Marshal(clusterJSON[k])
		if !bytes.Equal(a, b) {
			t.Errorf("%s: cluster %s, one host %s", k, b, a)
		}
	}
	if clusterJSON["probe_completed"] == nil || clusterJSON["probe_completed"].(float64) < 1 {
		t.Errorf("the cluster's probes: %v", clusterJSON["probe_completed"])
	}

	// The sidecar has every section one host's has, and the cluster's.
	oneSC, oneKeys := sidecarOf(t, filepath.Join(singleDir, "run.stampede.json"))
	sc, keys := sidecarOf(t, filepath.Join(clusterDir, "run.stampede.json"))
	for k, v := range oneKeys {
		if _, ok := keys[k]; !ok || (v != nil) != (keys[k] != nil) {
			t.Errorf("sidecar section %q: one host %v, cluster %v", k, v != nil, keys[k])
		}
	}
	if sc.Cluster == nil || len(sc.Cluster.Agents) != size {
		t.Errorf("sidecar's cluster: %+v", sc.Cluster)
	}
	if sc.Fingerprint == nil || len(sc.Fingerprint.Server) == 0 || sc.Fingerprint.Client["host"] == "" {
		t.Errorf("fingerprint: %+v", sc.Fingerprint)
	}
	if sc.PrefixCache == nil || oneSC.PrefixCache == nil || sc.PrefixCache.QueriesSeries != oneSC.PrefixCache.QueriesSeries {
		t.Errorf("prefix cache: cluster %+v, one host %+v", sc.PrefixCache, oneSC.PrefixCache)
	}
	// The server's window is the whole run's: its TTFT histogram counted
	// every request of every agent (and the probes), as one host's did.
	if got, one := ttftDelta(sc.ServerMetrics), ttftDelta(oneSC.ServerMetrics); got < n || one < n {
		t.Errorf("server's TTFTs over the scraped window: cluster %v, one host %v, want at least the %d requests", got, one, n)
	}
	if sc.FirstTokens == nil || sc.FirstTokens.Requests != n || sc.Breakdown == nil {
		t.Errorf("first tokens %+v, breakdown %+v", sc.FirstTokens, sc.Breakdown)
	}
	if sc.Health.RequestsSent != n {
		t.Errorf("merged health sent %d requests, want %d", sc.Health.RequestsSent, n)
	}

	// The steady state and the trimmed block are the merged records'.
	m := mergedPartials(t, clusterDir)
	if oneSC.SteadyState == nil || sc.SteadyState == nil {
		t.Fatalf("steady state: cluster %+v, one host %+v", sc.SteadyState, oneSC.SteadyState)
	}
	want, err := metrics.ComputeSteadyState(&m.Data, m.Options, metrics.SteadyTarget{RequestRate: single.RequestRate,
		Fraction: single.SteadyStateThreshold, MinWindowS: 0.01, MaxConcurrency: 6})
	if err != nil {
		t.Fatal(err)
	}
	if sc.SteadyState.Requests != want.Requests || sc.SteadyState.StartS != want.StartS || sc.SteadyState.EndS != want.EndS {
		t.Errorf("the cluster's steady state %+v is not the merged records' %+v", sc.SteadyState, want)
	}
	if sc.SteadyState.TargetInFlight != oneSC.SteadyState.TargetInFlight || sc.SteadyState.Requests <= n/size {
		t.Errorf("steady state over %d requests, target %v; one host %d, target %v",
			sc.SteadyState.Requests, sc.SteadyState.TargetInFlight, oneSC.SteadyState.Requests, oneSC.SteadyState.TargetInFlight)
	}
	trimmed, err := metrics.ComputeTrimmed(&m.Data, metrics.TrimOptions{WarmupS: 0.005, CooldownS: 0.005, Percentiles: m.Options.Percentiles})
	if err != nil {
		t.Fatal(err)
	}
	if row := fmt.Sprintf("%-40s %-10d", "Total counted tokens at filtering:", trimmed.Tokens); !strings.Contains(stdout[strings.Index(stdout, report.TrimmedTitle):], row) {
		t.Errorf("the trimmed block lacks the merged records' %q:\n%s", row, stdout)
	}
	page, err := os.ReadFile(filepath.Join(clusterDir, "r.html"))
	if err != nil || !bytes.Contains(page, []byte("<html")) {
		t.Errorf("report: %v", err)
	}
}

// TestClusterErrorsAndUsage: the merged sidecar groups every agent's
// failed requests, each example named by the x-request-id its own agent
// sent (each draws its own prefix), and checks every agent's usage; an
// offline merge of the saved partials gives the same sections.
func TestClusterErrorsAndUsage(t *testing.T) {
	srv := startTinyMock(t, mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond,
		Faults: []mock.Fault{{Kind: mock.FaultHTTP500, Every: 5}}})
	dir := t.TempDir()
	const n, size = 40, 3
	runAgents(t, size, []string{"--base-url", "http://" + srv.Addr(), "--tokenizer", tinyTokenizer, "--disable-tqdm", "--model", "mock-llm",
		"--dataset-name", "random", "--num-prompts", fmt.Sprint(n), "--random-input-len", "16", "--random-output-len", "6",
		"--request-rate", "500", "--max-concurrency", "6", "--seed", "9",
		"--save-result", "--result-dir", dir, "--result-filename", "run.json", "--save-partial", filepath.Join(dir, "part.bin")})
	result := readJSON(t, filepath.Join(dir, "run.json"))
	sc, _ := sidecarOf(t, filepath.Join(dir, "run.stampede.json"))
	failed := int(result["failed"].(float64))
	if sc.Errors == nil || failed == 0 || sc.Errors.Failed != failed || sc.Errors.Requests != n {
		t.Fatalf("errors %+v, result failed %d", sc.Errors, failed)
	}
	if sc.Usage == nil {
		t.Error("no usage check")
	}

	files, err := cluster.ExpandPartialPaths([]string{filepath.Join(dir, "part.bin")})
	if err != nil {
		t.Fatal(err)
	}
	prefixes, sentAs := map[string]bool{}, map[int]string{}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		p, err := cluster.OpenPartial(f)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := cluster.ReadPartialRecords(p)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			prefixes[strings.TrimSuffix(rec.RequestID, fmt.Sprint(rec.Index))] = true
			sentAs[rec.Index] = rec.RequestID
		}
	}
	if len(prefixes) != size {
		t.Errorf("request id prefixes %v, want one per agent", prefixes)
	}
	for _, g := range sc.Errors.Groups {
		if g.Status != 500 || g.ExampleRequestID != sentAs[g.ExampleIndex] {
			t.Errorf("group %+v: request %d went out as %q", g, g.ExampleIndex, sentAs[g.ExampleIndex])
		}
	}
	m, err := cluster.MergePartialFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	offline := t.TempDir()
	m.Params.ResultDir = offline
	if _, err := WriteMerged(m, new(bytes.Buffer), new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	merged, _ := sidecarOf(t, filepath.Join(offline, "run.stampede.json"))
	a, _ := json.Marshal([]any{sc.Errors, sc.Usage, sc.Fingerprint.Client, sc.Cluster.Size})
	b, _ := json.Marshal([]any{merged.Errors, merged.Usage, merged.Fingerprint.Client, merged.Cluster.Size})
	if !bytes.Equal(a, b) {
		t.Errorf("stampede merge's sections\n%s\nagent 0's\n%s", b, a)
	}
}

// TestClusterServerSpans: with --otlp-receiver every agent traces its
// requests, the server exports every span to agent 0's receiver alone,
// and agent 0 joins all of them, each agent's requests by the ids that
// agent drew.
func TestClusterServerSpans(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(benchtest.FreePort(t))
	srv := startTinyMock(t, mock.Config{TTFT: 3 * time.Millisecond, ITL: time.Millisecond,
		OTLPTracesEndpoint: "http://" + addr + "/v1/traces", OTLPTracesProtocol: mock.OTLPHTTP})
	dir := t.TempDir()
	const n = 18
	_, stderr := runAgents(t, 3, []string{"--base-url", "http://" + srv.Addr(), "--tokenizer", tinyTokenizer, "--disable-tqdm", "--model", "mock-llm",
		"--dataset-name", "random", "--num-prompts", fmt.Sprint(n), "--random-input-len", "8", "--random-output-len", "6",
		"--request-rate", "300", "--seed", "2", "--otlp-receiver", addr,
		"--save-result", "--result-dir", dir, "--result-filename", "run.json"})
	sc, _ := sidecarOf(t, filepath.Join(dir, "run.stampede.json"))
	if s := sc.ServerSpans; s == nil || s.Joined != n || s.Unjoined != 0 {
		t.Fatalf("server spans %+v\n%s", sc.ServerSpans, stderr)
	}
}

// TestClusterFrontEnds: with --server-urls over agents, request i still
// goes to front end i mod 2 (three agents, two front ends: each agent
// sends to both), and agent 0's sidecar has every agent's requests in
// each front end's figures.
func TestClusterFrontEnds(t *testing.T) {
	fast := startTinyMock(t, mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond})
	slow := startTinyMock(t, mock.Config{TTFT: time.Millisecond, ITL: 8 * time.Millisecond})
	urls := []string{"http://" + fast.Addr(), "http://" + slow.Addr()}
	dir := t.TempDir()
	const n = 18
	runAgents(t, 3, []string{"--base-url", urls[0], "--server-urls", urls[0] + "," + urls[1], "--tokenizer", tinyTokenizer,
		"--disable-tqdm", "--model", "mock-llm", "--dataset-name", "random", "--num-prompts", fmt.Sprint(n),
		"--random-input-len", "8", "--random-output-len", "6", "--max-concurrency", "6",
		"--save-result", "--result-dir", dir, "--result-filename", "run.json"})
	for i, srv := range []*mock.Server{fast, slow} {
		if got := srv.Stats().Scheduled; got != n/2 {
			t.Errorf("front end %d scheduled %d requests; want %d", i, got, n/2)
		}
	}
	sc, _ := sidecarOf(t, filepath.Join(dir, "run.stampede.json"))
	if len(sc.FrontEnds) != 2 {
		t.Fatalf("front_ends %+v", sc.FrontEnds)
	}
	for i, fe := range sc.FrontEnds {
		if fe.URL != urls[i]+"/v1/completions" || fe.Completed != n/2 {
			t.Errorf("front end %d: %s completed %d; want %d", i, fe.URL, fe.Completed, n/2)
		}
	}
}

// TestClusterPerTokenITL: --per-token-itl over three agents against a mock
// sending three tokens per chunk. Agent 0's block and sidecar give the
// figures recomputed from the agents' saved partials, merged (every
// request's chunk tokens carried exactly), and `stampede merge` prints
// the same block; the counts are those of one host's run of the same
// seed, whose timings differ only by the machine's noise.
func TestClusterPerTokenITL(t *testing.T) {
	const n, size = 24, 3
	cfg := mock.Config{TTFT: 2 * time.Millisecond, ITL: time.Millisecond, TokensPerChunk: 3}
	args := func(srv *mock.Server, dir string) []string {
		return []string{"--base-url", "http://" + srv.Addr(), "--tokenizer", tinyTokenizer, "--disable-tqdm", "--model", "mock-llm",
			"--dataset-name", "random", "--num-prompts", fmt.Sprint(n), "--random-input-len", "16", "--random-output-len", "10",
			"--request-rate", "inf", "--max-concurrency", "6", "--seed", "4", "--per-token-itl",
			"--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "run.json",
			"--save-partial", filepath.Join(dir, "part.bin")}
	}
	r := oneHostAndAgents(t, cfg, size, args)
	singleDir, clusterDir, stdout := r.singleDir, r.clusterDir, r.stdout

	_, block, found := strings.Cut(stdout, "="+report.PerTokenTitle)
	if !found {
		t.Fatalf("agent 0 printed no per-token block:\n%s", stdout)
	}
	m := mergedPartials(t, clusterDir)
	want := metrics.ComputePerToken(m.Data.Log, m.Options.Percentiles)
	if want == nil || want.Requests != n || want.Counted != n {
		t.Fatalf("the merged partials' per-token figures %+v, want %d counted requests", want, n)
	}
	sc, _ := sidecarOf(t, filepath.Join(clusterDir, "run.stampede.json"))
	p := sc.PerToken
	if p == nil {
		t.Fatal("no per_token in agent 0's sidecar")
	}
	if p.Requests != want.Requests || p.Counted != want.Counted || p.Samples != want.Samples ||
		p.ITLPerToken.MeanMs != want.ITL.MeanMs || p.ITLPerToken.MedianMs != want.ITL.MedianMs ||
		p.TokensPerChunk.Tokens != want.TokensPerChunk.Tokens || p.TokensPerChunk.Chunks != want.TokensPerChunk.Chunks {
		t.Errorf("agent 0's per_token %+v is not the merged partials' %+v", p, want)
	}
	summary, err := metrics.Compute(&m.Data, m.Options)
	if err != nil {
		t.Fatal(err)
	}
	var recomputed bytes.Buffer
	if err := report.WritePerToken(&recomputed, want, summary.ITL); err != nil {
		t.Fatal(err)
	}
	if _, wantBlock, _ := strings.Cut(recomputed.String(), "="+report.PerTokenTitle); block != wantBlock {
		t.Errorf("agent 0's per-token block\n%s\nrecomputed from the partials\n%s", block, wantBlock)
	}
	if len(p.PerRequest) != n {
		t.Errorf("per_request has %d requests, want %d", len(p.PerRequest), n)
	}

	// `stampede merge` of the saved partials prints the same block.
	m.Params.SaveResult, m.Params.AppendResult = false, false
	var merged bytes.Buffer
	if _, err := WriteMerged(m, &merged, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	if _, mergedBlock, _ := strings.Cut(merged.String(), "="+report.PerTokenTitle); mergedBlock != block {
		t.Errorf("stampede merge's per-token block\n%s\nagent 0's\n%s", mergedBlock, block)
	}

	// One host's run of the same seed: the same requests, chunks and
	// tokens, the same number of per-token samples.
	one, _ := sidecarOf(t, filepath.Join(singleDir, "run.stampede.json"))
	o := one.PerToken
	if o == nil {
		t.Fatal("no per_token in one host's sidecar")
	}
	a, _ := json.Marshal([]any{o.Requests, o.Counted, o.Fallback, o.Samples, o.TokensPerChunk.Histogram, o.TokensPerChunk.P50, len(o.PerRequest)})
	b, _ := json.Marshal([]any{p.Requests, p.Counted, p.Fallback, p.Samples, p.TokensPerChunk.Histogram, p.TokensPerChunk.P50, len(p.PerRequest)})
	if !bytes.Equal(a, b) {
		t.Errorf("cluster's counts %s, one host's %s", b, a)
	}
	if !slices.ContainsFunc(p.TokensPerChunk.Histogram, func(c metrics.TokenCount) bool { return c.Tokens == 3 }) {
		t.Errorf("no chunk of three tokens: %+v", p.TokensPerChunk.Histogram)
	}
}
