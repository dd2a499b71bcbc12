package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// With --model omitted a server's 300-byte model id goes into the result's
// name; the run says before it starts that it saves under a shorter name,
// and saves the result and its sidecar there.
func TestRunSavesUnderLongModelID(t *testing.T) {
	dir := t.TempDir()
	model := "org/" + strings.Repeat("m", 300)
	stdout, stderr, err := runAgainstMock(t, context.Background(),
		mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond, Model: model},
		"--dataset-name", "random", "--num-prompts", "4", "--random-input-len", "16", "--random-output-len", "4",
		"--save-result", "--result-dir", dir)
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if !strings.Contains(stderr, "do not fit this filesystem's limits") {
		t.Errorf("stderr does not say the name was shortened:\n%s", stderr)
	}
	results, _ := filepath.Glob(filepath.Join(dir, "openai-infqps-mmm*-????????-??????.json"))
	sidecars, _ := filepath.Glob(filepath.Join(dir, "*.stampede.json"))
	if len(results) != 1 || len(sidecars) != 1 {
		t.Fatalf("saved %v, sidecars %v", results, sidecars)
	}
	if data, err := os.ReadFile(results[0]); err != nil || !json.Valid(data) {
		t.Errorf("result %s: %v, valid JSON %v", results[0], err, json.Valid(data))
	}
}

// A result directory that cannot be made ends the run before the clock
// starts, naming --result-dir.
func TestRunUnwritableResultDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := runAgainstMock(t, context.Background(),
		mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond},
		"--dataset-name", "random", "--num-prompts", "4", "--random-input-len", "16", "--random-output-len", "4",
		"--save-result", "--result-dir", filepath.Join(file, "sub"))
	if err == nil || !strings.Contains(err.Error(), "--result-dir "+filepath.Join(file, "sub")) {
		t.Fatalf("err = %v, want one naming --result-dir", err)
	}
	if strings.Contains(stdout, "Starting main benchmark run") {
		t.Errorf("the run started before the check:\n%s", stdout)
	}
}

// When the result JSON cannot be written the sidecar and the report are
// written all the same, and the error names them.
func TestRunWritesSidecarWhenResultFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "run.json"), 0o777); err != nil {
		t.Fatal(err)
	}
	reportPath := filepath.Join(dir, "report.html")
	_, _, err := runAgainstMock(t, context.Background(),
		mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond},
		"--dataset-name", "random", "--num-prompts", "4", "--random-input-len", "16", "--random-output-len", "4",
		"--save-result", "--result-dir", dir, "--result-filename", "run.json", "--report", reportPath)
	sidecar := filepath.Join(dir, "run.stampede.json")
	if err == nil || !strings.Contains(err.Error(), "saving results to "+filepath.Join(dir, "run.json")) ||
		!strings.Contains(err.Error(), "written: "+sidecar+", "+reportPath) {
		t.Fatalf("err = %v, want the result's failure and the files written", err)
	}
	for _, p := range []string{sidecar, reportPath} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s not written: %v", p, err)
		}
	}
}
