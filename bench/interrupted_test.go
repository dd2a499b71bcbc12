package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/internal/py"
)

// sigint is the cause the command gives a run's context on Ctrl-C.
type sigint struct{}

func (sigint) Error() string      { return "interrupted by interrupt" }
func (sigint) StopSignal() string { return "SIGINT" }

// TestTwoInterruptsAreSavedAsSuch: two Ctrl-Cs while every request is
// still waiting for its first token fail them all "cancelled". The saved
// sidecar says the run was interrupted, by which signal, at once, with
// what was sent; and Python's warning that every request failed from a
// misconfiguration, wrong for a user's stop, is not printed.
func TestTwoInterruptsAreSavedAsSuch(t *testing.T) {
	dir := t.TempDir()
	srv := startTinyMock(t, mock.Config{TTFT: time.Hour})
	c, err := benchtest.ParseArgs([]string{"--base-url", "http://" + srv.Addr(), "--tokenizer", tinyTokenizer, "--disable-tqdm",
		"--model", "mock-llm", "--dataset-name", "random", "--num-prompts", "3", "--random-input-len", "16",
		"--random-output-len", "4", "--max-concurrency", "2", "--cancel-grace-sec", "3600",
		"--save-result", "--result-dir", dir, "--result-filename", "r.json"}, benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	hard := make(chan struct{})
	returned := make(chan struct{})
	go func() {
		for srv.Stats().Scheduled < 2 { // both slots wait on the mock
			select {
			case <-returned:
				return
			case <-time.After(time.Millisecond):
			}
		}
		cancel(sigint{})
		close(hard)
	}()
	var stdout, stderr bytes.Buffer
	err = Run(endpoint.WithHardStop(ctx, hard), c, &stdout, &stderr)
	close(returned)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "Interrupted again: stopped at once") {
		t.Fatalf("the run was not stopped at once:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "misconfiguration") {
		t.Errorf("a user's stop blamed on the arguments:\n%s", stderr.String())
	}
	body, err := os.ReadFile(report.SidecarPath(filepath.Join(dir, "r.json")))
	if err != nil {
		t.Fatal(err)
	}
	var sidecar struct {
		Interrupted *report.SidecarInterrupted `json:"interrupted"`
	}
	if err := json.Unmarshal(py.NullNonFinite(body), &sidecar); err != nil {
		t.Fatal(err)
	}
	want := report.SidecarInterrupted{Signal: "SIGINT", AtOnce: true, Sent: 2, Unsent: 1, CancelledInFlight: 2}
	if sidecar.Interrupted == nil || *sidecar.Interrupted != want {
		t.Errorf("the sidecar's interrupted = %+v; want %+v", sidecar.Interrupted, want)
	}
}

// A run that finished has no "interrupted" in its sidecar.
func TestFinishedRunIsNotInterrupted(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, err := runAgainstMock(t, context.Background(), mock.Config{}, "--model", "mock-llm", "--dataset-name", "random",
		"--num-prompts", "2", "--random-input-len", "16", "--random-output-len", "2",
		"--save-result", "--result-dir", dir, "--result-filename", "r.json"); err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr)
	}
	body, err := os.ReadFile(report.SidecarPath(filepath.Join(dir, "r.json")))
	if err != nil || bytes.Contains(body, []byte(`"interrupted"`)) {
		t.Errorf("a finished run's sidecar (%v) says it was interrupted:\n%s", err, body)
	}
}
