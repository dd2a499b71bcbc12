package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/bench/search"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// startMock starts the in-process mock with the tiny tokenizer and
// returns the serve flags that reach it.
func startMock(t *testing.T, cfg mock.Config) []string {
	t.Helper()
	srv := startTinyMock(t, cfg)
	return []string{"--base-url", "http://" + srv.Addr(), "--tokenizer", tinyTokenizer, "--disable-tqdm",
		"--model", "mock-llm", "--dataset-name", "random", "--random-input-len", "16"}
}

// knownCapacity is the mock: 32 sequences at once, TTFT 20 ms,
// 10 ms per token, so a 16-token request holds a slot for 170 ms.
var knownCapacity = mock.Config{TTFT: 20 * time.Millisecond, ITL: 10 * time.Millisecond, MaxNumSeqs: 32}

// cancelOn cancels a context when a line containing marker is written.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	cancel context.CancelFunc
}

func (w *cancelOn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.marker != "" && bytes.Contains(p, []byte(w.marker)) {
		w.cancel()
	}
	return len(p), nil
}

// A concurrency sweep over the mock's 32 slots: TTFT stays flat up to 32
// and grows once requests queue for a slot; throughput stops growing.
func TestSweepShowsQueueing(t *testing.T) {
	dir := t.TempDir()
	args := append(startMock(t, knownCapacity), "--random-output-len", "16", "--num-prompts", "192", "--result-dir", dir)
	var out, errOut bytes.Buffer
	res, err := search.Sweep(context.Background(), search.SweepOptions{Run: RunOnce,
		Args: args, NumRuns: 1, Axes: []report.SweepAxis{{Flag: "max-concurrency", Values: []string{"8", "32", "128"}}},
	}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if len(res.Rows) != 3 {
		t.Fatalf("%d rows, want 3", len(res.Rows))
	}
	c8, c32, c128 := res.Rows[0].Metrics, res.Rows[1].Metrics, res.Rows[2].Metrics
	if c32.TTFTP50 > 2*c8.TTFTP50 {
		t.Errorf("TTFT p50 grew below capacity: %.2f ms at 8, %.2f ms at 32", c8.TTFTP50, c32.TTFTP50)
	}
	if c128.TTFTP50 < 5*c32.TTFTP50 {
		t.Errorf("no queueing past capacity: TTFT p50 %.2f ms at 32, %.2f ms at 128", c32.TTFTP50, c128.TTFTP50)
	}
	if c32.RequestThroughput < 2*c8.RequestThroughput || c128.RequestThroughput > 1.5*c32.RequestThroughput {
		t.Errorf("throughput 8/32/128: %.1f %.1f %.1f req/s, want growth then a plateau",
			c8.RequestThroughput, c32.RequestThroughput, c128.RequestThroughput)
	}
	for _, r := range res.Rows {
		if len(r.Files) != 1 {
			t.Fatalf("%s: files %v", r.Point, r.Files)
		}
		if _, err := os.Stat(r.Files[0]); err != nil {
			t.Errorf("%s: result file: %v", r.Point, err)
		}
	}
	saved, err := report.LoadSweep(filepath.Join(dir, report.SweepFileJSON))
	if err != nil || len(saved.Rows) != 3 || saved.Rows[2].Metrics.TTFTP50 != c128.TTFTP50 {
		t.Fatalf("sweep.json: %+v, %v", saved, err)
	}
	csv, err := os.ReadFile(filepath.Join(dir, report.SweepFileCSV))
	if err != nil || !strings.HasPrefix(string(csv), "max-concurrency,request_throughput,") || strings.Count(string(csv), "\n") != 4 {
		t.Errorf("sweep.csv:\n%s %v", csv, err)
	}
	if !strings.HasPrefix(out.String(), "=") || !strings.Contains(out.String(), "Sweep Summary") {
		t.Errorf("stdout is not the summary table:\n%s", out.String())
	}
}

// An interrupt keeps the finished points; --resume runs only the rest.
func TestSweepInterruptAndResume(t *testing.T) {
	dir := t.TempDir()
	args := append(startMock(t, mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond}),
		"--random-output-len", "4", "--num-prompts", "16", "--result-dir", dir)
	opts := search.SweepOptions{Run: RunOnce, Args: args, NumRuns: 2, Axes: []report.SweepAxis{
		{Flag: "max-concurrency", Values: []string{"2", "4"}}, {Flag: "request-rate", Values: []string{"inf", "500"}}}}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelOn{marker: "Sweep point max-concurrency=4,request-rate=inf", cancel: cancel}
	_, err := search.Sweep(ctx, opts, &bytes.Buffer{}, w)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted sweep: %v", err)
	}
	saved, err := report.LoadSweep(filepath.Join(dir, report.SweepFileJSON))
	if err != nil || len(saved.Rows) != 2 {
		t.Fatalf("after the interrupt sweep.json holds %+v (%v), want the 2 finished points", saved, err)
	}
	if saved.Rows[1].Point != "max-concurrency=2,request-rate=500" || len(saved.Rows[1].Runs) != 2 || saved.Rows[1].Spread == nil {
		t.Errorf("second point: %+v", saved.Rows[1])
	}

	opts.Resume = true
	var out bytes.Buffer
	res, err := search.Sweep(context.Background(), opts, &bytes.Buffer{}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "Sweep point "); n != 4 {
		t.Errorf("resumed sweep ran %d runs, want 4 (2 points × 2 runs):\n%s", n, out.String())
	}
	if strings.Contains(out.String(), "Sweep point max-concurrency=2,") {
		t.Errorf("resumed sweep reran a saved point")
	}
	if len(res.Rows) != 4 || !reflect.DeepEqual(res.Rows[0].Metrics, saved.Rows[0].Metrics) {
		t.Errorf("resumed rows: %d, first %+v", len(res.Rows), res.Rows[0].Metrics)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "sweep-*.run*.json"))
	if len(files) < 8 {
		t.Errorf("result files %v, want one per run (8)", files)
	}
}

// --num-runs keeps every run's result JSON and prints the spread.
func TestRunRepeatedKeepsEveryRun(t *testing.T) {
	dir := t.TempDir()
	args := append(startMock(t, mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond}),
		"--random-output-len", "4", "--num-prompts", "16", "--save-result", "--result-dir", dir, "--result-filename", "r.json")
	cfg, err := cli.Parse(args, backend.Choices())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := search.RunRepeated(context.Background(), RunOnce, cfg, 3, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 3; k++ {
		if _, err := os.Stat(filepath.Join(dir, "r.run"+string(rune('0'+k))+".json")); err != nil {
			t.Errorf("run %d: %v", k, err)
		}
	}
	s := out.String()
	if strings.Count(s, "Serving Benchmark Result") != 3 || !strings.Contains(s, "Repeated runs (3 of 3)") ||
		!strings.Contains(s, "95% CI") || strings.Index(s, "Repeated runs") < strings.LastIndex(s, "Serving Benchmark Result") {
		t.Errorf("output:\n%s", s)
	}
}
