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

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/bench/report/reporttest"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// reportMockRun runs a short benchmark against the mock with
// --server-metrics and --report, saving the detailed result, and returns
// the directory holding r.json, r.stampede.json and r.html, and stdout.
func reportMockRun(t *testing.T) (dir, stdout string) {
	t.Helper()
	dir = t.TempDir()
	stdout, stderr, err := runAgainstMock(t, context.Background(),
		mock.Config{TTFT: 5 * time.Millisecond, ITL: 5 * time.Millisecond, Mode: mock.DecodeStep, MaxNumSeqs: 4},
		"--dataset-name", "random", "--num-prompts", "40", "--random-input-len", "16", "--random-output-len", "20",
		"--max-concurrency", "8", "--request-rate", "inf",
		"--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99",
		"--server-metrics", "--server-metrics-interval", "0.02",
		"--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "r.json",
		"--report", filepath.Join(dir, "r.html"))
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	return dir, stdout
}

// TestReportFromMockRun: the run prints the server-vs-client table, saves
// the server's series beside the result, and writes a page whose every
// chart has marks and which needs nothing from outside; the page made
// later from the saved files draws the same charts.
func TestReportFromMockRun(t *testing.T) {
	dir, stdout := reportMockRun(t)
	for _, want := range []string{"Server vs client", "P50 TTFT", "P99 ITL", "Report saved to: " + filepath.Join(dir, "r.html")} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	side, err := os.ReadFile(filepath.Join(dir, "r.stampede.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sc report.Sidecar
	if err := json.Unmarshal(side, &sc); err != nil {
		t.Fatal(err)
	}
	sm := sc.ServerMetrics
	if sm == nil || sm.Scrapes < 2 {
		t.Fatalf("server metrics %+v", sm)
	}
	peak := 0.0
	for _, s := range sm.Series {
		if s.Name == "vllm:num_requests_running" {
			for _, v := range s.V {
				peak = max(peak, v)
			}
		}
	}
	if peak == 0 {
		t.Error("no scrape saw a request running")
	}
	// Every TTFT the mock observed happened after the baseline scrape and
	// before the client got the token, so before the last scrape.
	for _, h := range sm.Histograms {
		if h.Name == "vllm:time_to_first_token_seconds" {
			if got := h.DeltaCumulative[len(h.DeltaCumulative)-1]; got != 40 {
				t.Errorf("TTFT histogram grew by %v over the run, want the 40 requests", got)
			}
		}
	}

	live, err := os.ReadFile(filepath.Join(dir, "r.html"))
	if err != nil {
		t.Fatal(err)
	}
	reporttest.CheckSelfContained(t, string(live))
	marks := reporttest.ChartMarks(string(live))
	for _, id := range []string{"cdf-ttft", "hist-ttft", "cdf-tpot", "cdf-itl", "cdf-e2el", "tput-0", "tokens-0", "inflight-0"} {
		if marks[id] == 0 {
			t.Errorf("chart %s has no marks (all: %v)", id, marks)
		}
	}
	server := 0
	for id, n := range marks {
		if strings.HasPrefix(id, "server-") {
			server++
			if n == 0 {
				t.Errorf("server chart %s has no marks", id)
			}
		}
	}
	if server < 4 {
		t.Errorf("%d server charts, want one per kept metric", server)
	}
	for _, want := range []string{`id="timeline-data"`, "Server vs client", "Peak concurrent requests"} {
		if !strings.Contains(string(live), want) {
			t.Errorf("page lacks %q", want)
		}
	}

	runs, err := report.LoadReportRuns(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	if runs[0].Server == nil {
		t.Fatal("the sidecar's server metrics were not read")
	}
	var later bytes.Buffer
	if err := report.WriteReport(&later, runs, report.ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	laterMarks := reporttest.ChartMarks(later.String())
	for id, n := range marks {
		if laterMarks[id] != n {
			t.Errorf("chart %s: %d marks live, %d from the saved files", id, n, laterMarks[id])
		}
	}
}
