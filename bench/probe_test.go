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

	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/datasets"
)

// newMockRun starts the mock server and returns a run aimed at it, built
// from argv as the command line would, and its model.
func newMockRun(t *testing.T, cfg mock.Config, args ...string) (*run, endpoint.Model) {
	t.Helper()
	srv, err := mock.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := benchtest.ParseArgs(append([]string{"--base-url", "http://" + srv.Addr(), "--model", "mock-llm"}, args...), benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRun(c, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return r, endpoint.Model{ID: c.Model}
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
			r, model := newMockRun(t, mock.Config{}, tt.args...)
			p, err := r.newProbe(model, &dataset{first: first})
			if err != nil || p == nil {
				t.Fatalf("newProbe = %v, %v", p, err)
			}
			if p.Request.PromptLen != 1 || p.Interval != 500*time.Millisecond {
				t.Errorf("probe prompt_len %d, interval %v; want 1, 500ms", p.Request.PromptLen, p.Interval)
			}
			head, body, ok := strings.Cut(string(p.Request.Wire), "\r\n\r\n")
			if !ok {
				t.Fatalf("no head/body split in %q", p.Request.Wire)
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
		r, model := newMockRun(t, mock.Config{}, "--probe-request-rate", rate)
		if p, err := r.newProbe(model, &dataset{first: datasets.Request{Prompt: "x", PromptLen: 1, ExpectedOutputLen: 1}}); p != nil || err != nil {
			t.Errorf("--probe-request-rate %s: probe %v, err %v; want none", rate, p, err)
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
	cfg, err := benchtest.ParseArgs([]string{"--base-url", "http://" + srv.Addr(), "--model", "mock-llm",
		"--dataset-name", "random", "--num-prompts", "3", "--random-input-len", "8", "--random-output-len", "30",
		"--ignore-eos", "--max-concurrency", "1", "--probe-request-rate", "20", "--disable-tqdm",
		"--save-result", "--result-dir", dir, "--result-filename", "result.json"}, benchtest.NoEnv)
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
