package report

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/metrics"
)

func TestTimelinePath(t *testing.T) {
	tests := []struct{ result, timeline, pytorch string }{
		{"openai-10.0qps-Llama-3.1-8B-20261129-173005.json", "openai-10.0qps-Llama-3.1-8B-20261129-173005.timeline.html",
			"openai-10.0qps-Llama-3.1-8B-20261129-173005.pytorch.json"},
		{"results/run.v2.json", "results/run.v2.timeline.html", "results/run.v2.pytorch.json"},
		{"dir.d/result", "dir.d/result.timeline.html", "dir.d/result.pytorch.json"},
		{".hidden", ".hidden.timeline.html", ".hidden.pytorch.json"},
		{"out/..json", "out/..json.timeline.html", "out/..json.pytorch.json"},
	}
	for _, tc := range tests {
		if got := TimelinePath(tc.result); got != tc.timeline {
			t.Errorf("TimelinePath(%q) = %q, want %q", tc.result, got, tc.timeline)
		}
		if got := pyout.PyTorchPath(tc.result); got != tc.pytorch {
			t.Errorf("PyTorchPath(%q) = %q, want %q", tc.result, got, tc.pytorch)
		}
	}
}

func TestTimelineLabels(t *testing.T) {
	tests := []struct {
		thresholds [2]float64
		want       [4]string
	}{
		{[2]float64{25, 50}, [4]string{"TTFT", "ITL < 25ms", "25ms ≤ ITL < 50ms", "ITL ≥ 50ms"}},
		// f"{x:.0f}" rounds half to even.
		{[2]float64{2.5, 99.5}, [4]string{"TTFT", "ITL < 2ms", "2ms ≤ ITL < 100ms", "ITL ≥ 100ms"}},
	}
	for _, tc := range tests {
		if got := timelineLabels(tc.thresholds); got != tc.want {
			t.Errorf("timelineLabels(%v) = %q, want %q", tc.thresholds, got, tc.want)
		}
	}
}

// timelineGoldenOptions colours the golden run's 20–37 ms gaps into all
// three classes.
func timelineGoldenOptions(*metrics.RunData) TimelineOptions {
	return TimelineOptions{Title: `Request timeline: <run> & "x"`, ITLThresholdsMs: [2]float64{25, 30},
		OutputLen: func(r *metrics.RequestResult) int { return 10 + r.Index }}
}

func TestGoldenTimeline(t *testing.T) {
	d := trimmedGoldenRun()
	var page bytes.Buffer
	if err := WriteTimeline(&page, d, timelineGoldenOptions(d)); err != nil {
		t.Fatal(err)
	}
	compareGolden(t, "timeline", "golden.html", page.Bytes())
}

// timelinePayload extracts the page's data.
func timelinePayload(t *testing.T, page string) timelineData {
	t.Helper()
	m := regexp.MustCompile(`<script id="timeline-data" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no timeline data element")
	}
	var data timelineData
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
		t.Fatal(err)
	}
	return data
}

func TestTimelineData(t *testing.T) {
	results := goldenRun().Log.Collect()
	results[9].Error = "stream broke\n</script><script>alert(1)</script>"
	d := &metrics.RunData{Log: metrics.LogOf(results...)}
	var page bytes.Buffer
	if err := WriteTimeline(&page, d, timelineGoldenOptions(d)); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if strings.Count(html, "</script>") != 2 || strings.Contains(html, "<run>") {
		t.Fatalf("page text escapes its element:\n%s", html[:min(len(html), 2000)])
	}
	data := timelinePayload(t, html)
	if len(data.Requests) != len(results) {
		t.Fatalf("%d rows, want %d (every request was sent)", len(data.Requests), len(results))
	}
	for i, row := range data.Requests {
		r := results[i]
		if row.ID != "Req "+strconv.Itoa(i) || row.StartUs != r.StartNs/1000 || row.OutputTokens != 10+i || row.PromptTokens != r.PromptLen {
			t.Errorf("row %d: %+v", i, row)
		}
		if !r.Success && r.ChunkEvents == 0 {
			if len(row.EventsUs) != 0 || row.Classes != "" || row.Error != r.Error {
				t.Errorf("row %d of a failure without tokens: %+v", i, row)
			}
			continue
		}
		if len(row.EventsUs) != len(r.ITLNs)+1 || len(row.Classes) != len(r.ITLNs) {
			t.Fatalf("row %d: %d events and %d classes for %d gaps", i, len(row.EventsUs), len(row.Classes), len(r.ITLNs))
		}
		offset := r.TTFTNs
		if row.EventsUs[0] != (offset+500)/1000 {
			t.Errorf("row %d: first event %d µs, want the TTFT %d ns", i, row.EventsUs[0], offset)
		}
		for k, gap := range r.ITLNs {
			offset += gap
			if row.EventsUs[k+1] != (offset+500)/1000 {
				t.Errorf("row %d event %d: %d µs, want %d ns rounded", i, k+1, row.EventsUs[k+1], offset)
			}
			want := byte('3')
			switch {
			case gap < 25*ms:
				want = '1'
			case gap < 30*ms:
				want = '2'
			}
			if row.Classes[k] != want {
				t.Errorf("row %d gap %d (%d ns): class %c, want %c", i, k, gap, row.Classes[k], want)
			}
		}
	}
	var classes strings.Builder
	for _, row := range data.Requests {
		classes.WriteString(row.Classes)
	}
	if all := classes.String(); strings.Count(all, "1") == 0 || strings.Count(all, "2") == 0 || strings.Count(all, "3") == 0 {
		t.Errorf("the golden run should exercise every class, got %q", all)
	}
}

// timelineHarness runs the script of the page of d under Node with a
// minimal stand-in for the DOM and canvas (testdata/timeline/harness.js)
// and returns how many rectangles each colour filled on the first draw and
// the hover text of the middle of the first request's TTFT segment.
func timelineHarness(t *testing.T, d *metrics.RunData, opts TimelineOptions) (fills map[string]int, tip string, page string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	var b bytes.Buffer
	if err := WriteTimeline(&b, d, opts); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(node, filepath.Join("testdata", "timeline", "harness.js"), path).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var report struct {
		Fills map[string]int `json:"fills"`
		Tip   string         `json:"tip"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return report.Fills, report.Tip, b.String()
}

// TestTimelineScript checks that the page's script draws every token
// segment of the golden run in its class colour and describes a hovered
// segment with vLLM's fields.
func TestTimelineScript(t *testing.T) {
	d := trimmedGoldenRun()
	fills, tip, page := timelineHarness(t, d, timelineGoldenOptions(d))
	want := map[string]int{}
	for _, row := range timelinePayload(t, page).Requests {
		if len(row.EventsUs) > 0 {
			want[timelineColors[0]]++
		}
		for _, c := range row.Classes {
			want[timelineColors[c-'0']]++
		}
	}
	for color, n := range want {
		if fills[color] != n {
			t.Errorf("%s: %d segments drawn, want %d", color, fills[color], n)
		}
	}
	for _, field := range []string{"Req 0\n", "Type: TTFT", "Start: 00:00:00.000", "End: 00:00:00.060", "Duration: 0.060s",
		"Prompt Tokens: 100", "Output Tokens: 10", "Request Start Time: 00:00:00.000", "Request End Time: 00:00:00.103"} {
		if !strings.Contains(tip, field) {
			t.Errorf("hover text %q lacks %q", tip, field)
		}
	}
}

// TestTimelineScriptSubpixel zooms out over 3,000 gaps of 1 ms with one
// 60 ms gap among them: the script must draw far fewer rectangles than
// segments, yet keep the one slow gap visible.
func TestTimelineScriptSubpixel(t *testing.T) {
	gaps := make([]int64, 3000)
	for k := range gaps {
		gaps[k] = ms
	}
	gaps[1500] = 60 * ms
	latency := 10 * ms
	for _, g := range gaps {
		latency += g
	}
	d := &metrics.RunData{Log: metrics.LogOf(metrics.RequestResult{
		Success: true, ChunkEvents: len(gaps) + 1, TTFTNs: 10 * ms, LatencyNs: latency, ITLNs: gaps,
	})}
	fills, _, _ := timelineHarness(t, d, TimelineOptions{ITLThresholdsMs: [2]float64{25, 50}})
	if fills[timelineColors[0]] != 1 || fills[timelineColors[3]] != 1 || fills[timelineColors[2]] != 0 {
		t.Errorf("fills %v, want one TTFT and the one slow gap", fills)
	}
	if n := fills[timelineColors[1]]; n < 500 || n > 1100 {
		t.Errorf("%d rectangles for 2,999 fast gaps on a 910-pixel axis, want about one per pixel", n)
	}
}

// BenchmarkWriteTimeline writes the page of one million token events
// (1,000 requests × 1,000 tokens) and reports its size per token.
func BenchmarkWriteTimeline(b *testing.B) {
	results := make([]metrics.RequestResult, 1000)
	for i := range results {
		gaps := make([]int64, 999)
		for k := range gaps {
			gaps[k] = 20*ms + int64(k%13)*ms + int64(k*7919%1000)*1000
		}
		results[i] = metrics.RequestResult{Index: i, Success: true, ChunkEvents: 1000, PromptLen: 1024,
			OutputTokens: 1000, StartNs: int64(i) * ms, TTFTNs: 150 * ms, LatencyNs: 30 * 1000 * ms, ITLNs: gaps}
	}
	d := &metrics.RunData{Log: metrics.LogOf(results...)}
	opts := TimelineOptions{Title: "bench", ITLThresholdsMs: [2]float64{25, 50}}
	var size int
	b.ReportAllocs()
	for b.Loop() {
		var page bytes.Buffer
		if err := WriteTimeline(&page, d, opts); err != nil {
			b.Fatal(err)
		}
		size = page.Len()
	}
	b.ReportMetric(float64(size)/1e6, "bytes/token")
}
