package bench

import (
	"bytes"
	"context"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/bench/report/reporttest"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// A run with --plot-dataset-stats writes the figure beside the result,
// named as pathlib names it, says where as vLLM does, and leaves the
// result JSON as it was.
func TestRunPlotDatasetStats(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, err := runAgainstMock(t, context.Background(),
		mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond},
		"--dataset-name", "random", "--num-prompts", "6", "--random-input-len", "16", "--random-output-len", "7",
		"--save-result", "--result-dir", dir, "--result-filename", "run.json", "--plot-dataset-stats")
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	path := filepath.Join(dir, "run.dataset_stats.png")
	if !strings.Contains(stdout, "Dataset statistics plot saved to: "+path+"\n") {
		t.Errorf("stdout does not say where the figure is:\n%s", stdout)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// Six requests of 7 output tokens: the output histogram is one bar of
	// height 6 in bin 15, [7, 7 + 1/30), of the ±0.5 range numpy widens
	// the range to.
	x, base, top, fill := report.DatasetStatsBar(1, []int{7, 7, 7, 7, 7, 7}, 15)
	if got := reporttest.RunUp(img, x, base, reporttest.FillOf(fill)); math.Abs(float64(got)-top) > 3 {
		t.Errorf("output bar top at y=%d, want %.1f", got, top)
	}
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("dataset_stats")) || bytes.Contains(data, []byte(`"input_lens"`)) {
		t.Error("the result JSON changed")
	}
}
