package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// A saved result gets its sidecar, whose breakdown adds up: every
// request's phases sum to its TTFT, and its TTFT is the result JSON's.
// --breakdown prints its block after Python's block, which it leaves as
// it was without the flag.
func TestSidecarAndBreakdownBlock(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--dataset-name", "random", "--num-prompts", "6", "--random-input-len", "16", "--random-output-len", "3",
		"--max-concurrency", "3", "--metric-percentiles", "50,99", "--save-result", "--save-detailed", "--result-dir", dir}
	cfg := mock.Config{TTFT: 2 * time.Millisecond, ITL: time.Millisecond}
	plain, _, err := runAgainstMock(t, context.Background(), cfg, append(args, "--result-filename", "plain.json")...)
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runAgainstMock(t, context.Background(), cfg, append(args, "--result-filename", "r.json", "--breakdown")...)
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}

	block, extra, found := strings.Cut(stdout, "="+report.BreakdownTitle)
	if !found {
		t.Fatalf("no breakdown block:\n%s", stdout)
	}
	if got, want := lineLabels(block), lineLabels(plain); strings.Join(got[:len(got)-1], "\n") != strings.Join(want, "\n") {
		t.Errorf("Python's block changed with --breakdown:\n%s\nwithout:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, want := range []string{"Requests with a breakdown:", "Mean Server TTFB (ms):", "P99 Send Delay (ms):", "Median Connect (ms):"} {
		if !strings.Contains(extra, want) {
			t.Errorf("breakdown block lacks %q:\n%s", want, extra)
		}
	}
	if !strings.Contains(stderr, "kernel TX stamps on") {
		t.Errorf("health line lacks the TX stamp coverage:\n%s", stderr)
	}

	raw, err := os.ReadFile(filepath.Join(dir, "r.stampede.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sc report.Sidecar
	if err := json.Unmarshal(raw, &sc); err != nil {
		t.Fatalf("sidecar: %v\n%s", err, raw)
	}
	if sc.Version != report.SidecarVersion || sc.Health.RequestsSent < 6 || sc.Breakdown == nil {
		t.Fatalf("sidecar %s", raw)
	}
	b := sc.Breakdown
	if b.Requests != 6 || len(b.PerRequest) != 6 || len(b.Phases.ServerTTFB.Percentiles) != 2 {
		t.Fatalf("breakdown covers %d requests, %d listed, percentiles %v", b.Requests, len(b.PerRequest), b.Phases.ServerTTFB.Percentiles)
	}

	var result struct {
		TTFTs []float64 `json:"ttfts"`
	}
	saved, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(saved, &result); err != nil || len(result.TTFTs) != 6 {
		t.Fatalf("result ttfts %v (%v)", result.TTFTs, err)
	}
	for _, r := range b.PerRequest {
		if sum := r.ConnectNs + r.TLSNs + r.SendDelayNs + r.ServerTTFBNs + r.FirstTokenNs; sum != r.TTFTNs {
			t.Errorf("request %d: phases add up to %d, TTFT %d", r.Index, sum, r.TTFTNs)
		}
		if got := float64(r.TTFTNs) / 1e9; got != result.TTFTs[r.Index] {
			t.Errorf("request %d: sidecar TTFT %v s, result %v s", r.Index, got, result.TTFTs[r.Index])
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "plain.stampede.json")); err != nil {
		t.Errorf("no sidecar without --breakdown: %v", err)
	}
}

// --warm-connections opens the connections before the clock starts: no
// request of the run opens one.
func TestWarmConnectionsRun(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, err := runAgainstMock(t, context.Background(), mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond},
		"--dataset-name", "random", "--num-prompts", "9", "--random-input-len", "16", "--random-output-len", "2",
		"--max-concurrency", "3", "--warm-connections", "--save-result", "--result-dir", dir, "--result-filename", "w.json")
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "w.stampede.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sc report.Sidecar
	if err := json.Unmarshal(raw, &sc); err != nil {
		t.Fatal(err)
	}
	// Each shard opens its share of the 3, rounded up.
	if w := sc.Health.WarmConnections; w == nil || w.Opened < 3 || w.Opened > 3+sc.Health.Shards-1 || w.Failed != 0 {
		t.Errorf("warm-up %+v over %d shards, want 3 opened (one more per shard at most)", w, sc.Health.Shards)
	}
	if b := sc.Breakdown; b == nil || b.Requests != 9 || b.NewConnections != 0 {
		t.Errorf("breakdown %+v: want 9 requests, none on a new connection", b)
	}
}
