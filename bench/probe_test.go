package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/shard/shardtest"
	"github.com/stampede-bench/stampede/sse"
)

// testProbeLoop is a probe loop that posts to path on addr, as newProbeLoop
// would build it for an endpoint the test server understands.
func testProbeLoop(addr, path string, streaming bool, interval time.Duration) *probeLoop {
	wire := httpwire.AppendRequest(nil, &httpwire.Request{
		Method: "POST", Host: addr, Path: path, ContentType: "application/json",
		Body: []byte(`{"prompt": "Hi", "max_tokens": 1, "stream": true}`),
	})
	return &probeLoop{
		target:         target{network: "tcp", address: addr, hostHeader: addr, path: path},
		wire:           wire,
		kind:           sse.Completions,
		streaming:      streaming,
		interval:       interval,
		connectTimeout: time.Second,
		requestTimeout: 5 * time.Second,
		cancelGrace:    50 * time.Millisecond,
	}
}

// runProbes runs l until the server has seen n probes (seen counts them),
// then stops it as the end of a main run would, and returns its results.
// How long that takes is no concern of a test's: a stuck loop is caught by
// go test's -timeout.
func runProbes(t *testing.T, l *probeLoop, seen func() int64, n int64) []metrics.RequestResult {
	t.Helper()
	l.start(context.Background())
	for seen() < n {
		time.Sleep(time.Millisecond)
	}
	l.stop()
	return l.results
}

// runProbesFor runs l for about d, then stops it; the stop is checked
// before each probe, so on a loaded machine a loop may end before its
// first probe.
func runProbesFor(l *probeLoop, d time.Duration) []metrics.RequestResult {
	l.start(context.Background())
	time.Sleep(d)
	l.stop()
	return l.results
}

func TestProbeOutcomes(t *testing.T) {
	tests := []struct {
		path      string
		streaming bool
		wantOK    bool
		wantErr   string // substring of every failure's text
		// wantOneConn: every probe reused the first connection; otherwise
		// each probe needed its own.
		wantOneConn bool
	}{
		{path: "/ok/3", streaming: true, wantOK: true, wantOneConn: true},
		{path: "/close/2", streaming: true, wantOK: true},
		{path: "/drop/2", streaming: true, wantOK: true},
		{path: "/pool", wantOK: true, wantOneConn: true},
		{path: "/500", streaming: true, wantErr: "Internal Server Error"},
		{path: "/empty", streaming: true, wantErr: metrics.NoTokenError},
		{path: "/malformed", streaming: true, wantErr: "chunk"},
		{path: "/reset-mid", streaming: true, wantErr: "after 2 token events"},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.path, "/"), func(t *testing.T) {
			srv := shardtest.New(t)
			// /drop closes an idle connection after 20 ms: wait longer, so
			// every probe after the first meets a closed keep-alive
			// connection and must redial without failing.
			interval := 5 * time.Millisecond
			if tt.path == "/drop/2" {
				interval = 40 * time.Millisecond
			}
			results := runProbes(t, testProbeLoop(srv.Addr.String(), tt.path, tt.streaming, interval), srv.Requests.Load, 2)
			if len(results) < 2 {
				t.Fatalf("%d probes recorded after the server saw 2, want at least 2", len(results))
			}
			for i, res := range results {
				if res.Index != i {
					t.Errorf("probe %d has index %d", i, res.Index)
				}
				if res.Success != tt.wantOK {
					t.Fatalf("probe %d: success = %v (error %q), want %v", i, res.Success, res.Error, tt.wantOK)
				}
				if !tt.wantOK && !strings.Contains(res.Error, tt.wantErr) {
					t.Errorf("probe %d: error %q, want it to contain %q", i, res.Error, tt.wantErr)
				}
				if tt.wantOK && (res.LatencyNs <= 0 || res.TTFTNs <= 0 || res.TTFTNs > res.LatencyNs) {
					t.Errorf("probe %d: ttft %d ns, latency %d ns; want 0 < ttft <= latency", i, res.TTFTNs, res.LatencyNs)
				}
			}
			conns, reqs := srv.Accepted.Load(), srv.Requests.Load()
			if reqs != int64(len(results)) {
				t.Errorf("server saw %d requests for %d probes", reqs, len(results))
			}
			if tt.wantOneConn && conns != 1 {
				t.Errorf("%d connections for %d keep-alive probes, want 1", conns, len(results))
			}
			if tt.path == "/close/2" && conns != int64(len(results)) {
				t.Errorf("%d connections for %d probes answered with Connection: close", conns, len(results))
			}
		})
	}
}

func TestProbeTLS(t *testing.T) {
	srv, clientTLS := shardtest.NewTLS(t)
	l := testProbeLoop(srv.Addr.String(), "/ok/2", true, 5*time.Millisecond)
	l.target.tls = clientTLS
	results := runProbes(t, l, srv.Requests.Load, 2)
	if len(results) < 2 {
		t.Fatalf("%d probes over TLS recorded after the server saw 2, want at least 2", len(results))
	}
	for _, res := range results {
		if !res.Success {
			t.Errorf("probe %d over TLS failed: %s", res.Index, res.Error)
		}
	}
	if got := srv.Accepted.Load(); got != 1 {
		t.Errorf("%d TLS connections for %d keep-alive probes, want 1", got, len(results))
	}
}

// TestProbePacing checks Python's loop shape: each probe waits for the one
// before it to finish, then for the interval, and never overlaps another.
func TestProbePacing(t *testing.T) {
	srv := shardtest.New(t)
	const interval = 40 * time.Millisecond
	results := runProbes(t, testProbeLoop(srv.Addr.String(), "/slow/30", true, interval), srv.Requests.Load, 3)
	if len(results) < 3 {
		t.Fatalf("%d probes recorded after the server saw 3, want at least 3", len(results))
	}
	if got := srv.MaxActive.Load(); got != 1 {
		t.Errorf("server answered %d probes at once, want 1", got)
	}
	for i := 1; i < len(results); i++ {
		prev, cur := results[i-1], results[i]
		if !prev.Success {
			t.Fatalf("probe %d failed: %s", i-1, prev.Error)
		}
		// The sleep starts after the response ended, which is no earlier
		// than its last token, and timers never fire early.
		if gap, min := cur.StartNs-prev.StartNs, prev.LatencyNs+int64(interval); gap < min {
			t.Errorf("probe %d started %v after probe %d, want at least latency + interval = %v",
				i, time.Duration(gap), i-1, time.Duration(min))
		}
	}
}

// TestProbeStopFinishesSleep checks that stopping lets the last sleep run
// out, and that account stretches the run's duration over it.
func TestProbeStopFinishesSleep(t *testing.T) {
	srv := shardtest.New(t)
	const interval = 300 * time.Millisecond
	l := testProbeLoop(srv.Addr.String(), "/ok/1", true, interval)
	runStart := time.Now()
	l.start(context.Background())
	for srv.Requests.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	l.stop()
	// A lower bound, which load cannot break: stop waits out the sleep.
	if waited := time.Since(l.origin); waited < interval {
		t.Errorf("stop returned %v after the first probe started, want after its %v sleep", waited, interval)
	}
	if len(l.results) != 1 || !l.results[0].Success {
		t.Fatalf("results = %+v, want one successful probe", l.results)
	}

	res := &engine.Result{Start: runStart, ScheduleStartNs: int64(time.Millisecond)}
	res.Data.DurationNs = int64(10 * time.Millisecond) // the main run ended long before
	stats := l.account(res)
	if stats == nil || stats.Completed != 1 || stats.Failed != 0 {
		t.Fatalf("stats = %+v, want 1 completed, 0 failed", stats)
	}
	wantNs := l.endedAt.Sub(runStart).Nanoseconds() - res.ScheduleStartNs
	if res.Data.DurationNs != wantNs {
		t.Errorf("duration = %v, want %v (to the loop's end)", time.Duration(res.Data.DurationNs), time.Duration(wantNs))
	}
	if start := l.results[0].StartNs; start < l.origin.Sub(runStart).Nanoseconds() {
		t.Errorf("probe start %d ns is not on the run clock (probe origin at %d ns)", start, l.origin.Sub(runStart).Nanoseconds())
	}

	// A main run that outlasts the probes keeps its own duration.
	long := &engine.Result{Start: runStart, ScheduleStartNs: 0}
	long.Data.DurationNs = int64(time.Hour)
	l.account(long)
	if long.Data.DurationNs != int64(time.Hour) {
		t.Errorf("duration shortened to %v", time.Duration(long.Data.DurationNs))
	}
}

func TestProbeCancelled(t *testing.T) {
	srv := shardtest.New(t)
	l := testProbeLoop(srv.Addr.String(), "/stall", true, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	l.start(ctx)
	for srv.Requests.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	// The probe stalls for good: stop returns only because the
	// cancellation ended it (a loop that ignored it would hang until go
	// test's -timeout).
	l.stop()
	if len(l.results) != 1 || l.results[0].Success || l.results[0].Error != "cancelled" {
		t.Errorf("results = %+v, want one probe failed \"cancelled\"", l.results)
	}
}

func TestProbeRefusedConnection(t *testing.T) {
	srv := shardtest.New(t)
	addr := srv.Addr.String()
	srv.StopListening()
	// No server sees the probes, so try loops until one got to probe:
	// only a loop that never probes at all keeps this going.
	var results []metrics.RequestResult
	for len(results) == 0 {
		results = runProbesFor(testProbeLoop(addr, "/ok/1", true, 10*time.Millisecond), 50*time.Millisecond)
	}
	for _, res := range results {
		if res.Success || !strings.HasPrefix(res.Error, "connect "+addr+": ") {
			t.Errorf("probe %d: success %v, error %q; want a connect failure", res.Index, res.Success, res.Error)
		}
	}
	if stats := metrics.ComputeProbes(results); stats != nil {
		t.Errorf("stats = %+v for no successful probe, want nil (no block)", stats)
	}
}

// newMockRun starts the mock server and returns a run aimed at it, built
// from argv as the command line would.
func newMockRun(t *testing.T, cfg mock.Config, args ...string) (*run, *mock.Server) {
	t.Helper()
	srv, err := mock.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := parseArgs(append([]string{"--base-url", "http://" + srv.Addr(), "--model", "mock-llm"}, args...), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRun(c, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r.modelID = c.Model
	return r, srv
}

func TestProbeRequestBody(t *testing.T) {
	first := datasets.Request{
		Prompt: "a long benchmark prompt", PromptLen: 5, ExpectedOutputLen: 128, RequestID: "bench-0",
		MultiModal: []json.RawMessage{json.RawMessage(`{"type":"image_url","image_url":{"url":"data:x"}}`)},
		Overrides:  json.RawMessage(`{"tools": []}`),
	}
	tests := []struct {
		name string
		args []string
		want map[string]string // body key -> its JSON value
	}{
		{"completions", []string{"--probe-request-rate", "2"},
			map[string]string{"prompt": `"Hi"`, "max_tokens": "1", "model": `"mock-llm"`, "tools": "[]"}},
		{"chat", []string{"--backend", "openai-chat", "--endpoint", "/v1/chat/completions", "--probe-request-rate", "2"},
			map[string]string{"messages": `[{"role":"user","content":[{"type":"text","text":"Hi"}]}]`, "max_completion_tokens": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newMockRun(t, mock.Config{}, tt.args...)
			r.requests = []datasets.Request{first}
			l, err := r.newProbeLoop()
			if err != nil || l == nil {
				t.Fatalf("newProbeLoop = %v, %v", l, err)
			}
			head, body, ok := strings.Cut(string(l.wire), "\r\n\r\n")
			if !ok {
				t.Fatalf("no head/body split in %q", l.wire)
			}
			if strings.Contains(strings.ToLower(head), "x-request-id") {
				t.Errorf("probe head carries a request id:\n%s", head)
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal([]byte(body), &fields); err != nil {
				t.Fatalf("body %q: %v", body, err)
			}
			for key, want := range tt.want {
				var compact bytes.Buffer
				if v, ok := fields[key]; !ok {
					t.Errorf("body has no %q: %s", key, body)
				} else if err := json.Compact(&compact, v); err != nil || compact.String() != want {
					t.Errorf("%s = %s, want %s", key, v, want)
				}
			}
			if strings.Contains(body, "data:x") || strings.Contains(body, "benchmark prompt") {
				t.Errorf("probe body keeps the test input's prompt or media: %s", body)
			}
		})
	}
}

func TestProbeLoopOffWithoutRate(t *testing.T) {
	for _, rate := range []string{"0", "-1"} {
		r, _ := newMockRun(t, mock.Config{}, "--probe-request-rate", rate)
		r.requests = []datasets.Request{{Prompt: "x", PromptLen: 1, ExpectedOutputLen: 1}}
		if l, err := r.newProbeLoop(); l != nil || err != nil {
			t.Errorf("--probe-request-rate %s: loop %v, err %v; want none", rate, l, err)
		}
	}
}

// TestProbeFailuresCounted runs probes against a server that answers every
// second generation request with 503.
func TestProbeFailuresCounted(t *testing.T) {
	fault, err := mock.ParseFault("http503:every=2")
	if err != nil {
		t.Fatal(err)
	}
	r, ms := newMockRun(t, mock.Config{Faults: []mock.Fault{fault}}, "--probe-request-rate", "200")
	r.requests = []datasets.Request{{Prompt: "x", PromptLen: 1, ExpectedOutputLen: 8}}
	l, err := r.newProbeLoop()
	if err != nil {
		t.Fatal(err)
	}
	results := runProbes(t, l, func() int64 { return int64(ms.Stats().Requests) }, 2)
	stats := metrics.ComputeProbes(results)
	if stats == nil || stats.Completed == 0 || stats.Failed == 0 || stats.Completed+stats.Failed != len(results) {
		t.Fatalf("stats = %+v over %d probes, want both successes and failures", stats, len(results))
	}
	for _, res := range results {
		if !res.Success && res.Error != "Service Unavailable" {
			t.Errorf("probe %d failed with %q, want the reason phrase", res.Index, res.Error)
		}
	}
}

// TestProbesInRun runs the whole benchmark against the mock with one
// request at a time allowed: probes still run beside the main requests,
// and the result block carries the probe section.
func TestProbesInRun(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "1")
	srv, err := mock.Start(mock.Config{TTFT: 2 * time.Millisecond, ITL: 15 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	cfg, err := parseArgs([]string{"--base-url", "http://" + srv.Addr(), "--model", "mock-llm",
		"--dataset-name", "random", "--num-prompts", "3", "--random-input-len", "8", "--random-output-len", "30",
		"--ignore-eos", "--max-concurrency", "1", "--probe-request-rate", "20", "--disable-tqdm",
		"--save-result", "--result-dir", dir, "--result-filename", "result.json"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	var maxRunning atomic.Int64
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(500 * time.Microsecond):
			}
			if n := srv.Stats().Running; n > maxRunning.Load() {
				maxRunning.Store(n)
			}
		}
	}()
	var stdout strings.Builder
	err = Run(context.Background(), cfg, &stdout, io.Discard)
	close(stopWatch)
	<-watched
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, stdout.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"Probe request rate: 20.0 req/s\n",
		"------------------Probe Requests------------------\n",
		"Probe requests completed:",
		"Probe requests failed:                   0         \n",
		"Median probe E2EL (ms):",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	saved, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var result map[string]any
	if err := json.Unmarshal(saved, &result); err != nil {
		t.Fatal(err)
	}
	completed, _ := result["probe_completed"].(float64)
	if completed < 2 || result["probe_failed"] != 0.0 {
		t.Errorf("result file: probe_completed %v, probe_failed %v; want at least 2 and 0", result["probe_completed"], result["probe_failed"])
	}
	for _, key := range []string{"probe_median_e2el_ms", "probe_p99_e2el_ms", "probe_max_e2el_ms"} {
		if v, ok := result[key].(float64); !ok || v <= 0 {
			t.Errorf("result file: %s = %v, want a positive number", key, result[key])
		}
	}
	// Three requests of 30 tokens at 15 ms, one at a time, take over a
	// second: a cap that held probes back would never let two run at once.
	if got := maxRunning.Load(); got < 2 {
		t.Errorf("at most %d stream running on the server; probes should run beside the capped main request", got)
	}
}
