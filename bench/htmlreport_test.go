package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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

// checkSelfContained fails when the page points at anything outside
// itself: a src or href, a CSS url() or @import, or a script fetching.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, re := range []string{`(?i)\ssrc\s*=`, `(?i)\shref\s*=\s*["']?[a-z]+:`, `(?i)url\(`, `(?i)@import`, `fetch\(`, `XMLHttpRequest`, `(?i)<link\b`, `(?i)<iframe\b`} {
		if loc := regexp.MustCompile(re).FindStringIndex(page); loc != nil {
			t.Errorf("page references something outside itself (%s): %q", re, page[max(loc[0]-40, 0):min(loc[1]+60, len(page))])
		}
	}
}

// chartMarks counts the marks of every SVG chart in a page, by id.
func chartMarks(page string) map[string]int {
	out := map[string]int{}
	figs := regexp.MustCompile(`<figure class="chart" id="([^"]*)">`).FindAllStringSubmatchIndex(page, -1)
	for i, f := range figs {
		end := len(page)
		if i+1 < len(figs) {
			end = figs[i+1][0]
		}
		out[page[f[2]:f[3]]] = strings.Count(page[f[1]:end], `class="mark`)
	}
	return out
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
	var sc Sidecar
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
	checkSelfContained(t, string(live))
	marks := chartMarks(string(live))
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

	runs, err := LoadReportRuns(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	if runs[0].Server == nil {
		t.Fatal("the sidecar's server metrics were not read")
	}
	var later bytes.Buffer
	if err := WriteReport(&later, runs, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	laterMarks := chartMarks(later.String())
	for id, n := range marks {
		if laterMarks[id] != n {
			t.Errorf("chart %s: %d marks live, %d from the saved files", id, n, laterMarks[id])
		}
	}
}

// TestReportComparison: two results give one CDF line each.
func TestReportComparison(t *testing.T) {
	mk := func(scale float64) *ReportRun {
		res := map[string]any{"duration": 1.0, "completed": 3.0,
			"start_times": []any{0.0, 0.1, 0.2}, "ttfts": []any{0.01 * scale, 0.02 * scale, 0.03 * scale},
			"latencies": []any{0.1, 0.2, 0.3}, "output_lens": []any{3.0, 3.0, 3.0},
			"itls": []any{[]any{0.01, 0.02}, []any{0.01, 0.02}, []any{0.01, 0.02}}, "errors": []any{"", "", ""}}
		b, _ := json.Marshal(res)
		r, err := ParseReportRun("run", b, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var out bytes.Buffer
	if err := WriteReport(&out, []*ReportRun{mk(1), mk(2)}, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	if m := chartMarks(out.String()); m["cdf-ttft"] != 2 {
		t.Errorf("TTFT CDF has %d lines, want one per run", m["cdf-ttft"])
	}
}

func TestPyJSONToStandard(t *testing.T) {
	in := `{"a": NaN, "b": [Infinity, -Infinity, 1.5], "c": "NaN Infinity \" NaN"}`
	var v map[string]any
	if err := json.Unmarshal(pyJSONToStandard([]byte(in)), &v); err != nil {
		t.Fatal(err)
	}
	if v["a"] != nil || v["b"].([]any)[0] != nil || v["b"].([]any)[2] != 1.5 || v["c"] != `NaN Infinity " NaN` {
		t.Errorf("got %v", v)
	}
}

func TestParseReportRunRejects(t *testing.T) {
	for _, in := range []string{`[1]`, `{"x": 1}`, `not json`} {
		if _, err := ParseReportRun("x", []byte(in), nil); err == nil {
			t.Errorf("%s: accepted", in)
		}
	}
}
