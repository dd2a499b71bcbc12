package report

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/metrics"
)

func TestBucketVerdict(t *testing.T) {
	for _, c := range []struct {
		client, lo, hi         float64
		bucket, where, verdict string
	}{
		{50.35, 40, 60, "40 – 60", "inside", "inside"},
		{40, 40, 60, "40 – 60", "inside", "inside"},
		{60, 40, 60, "40 – 60", "inside", "inside"},
		{122.25, 40, 60, "40 – 60", "above", "62.25 ms above"},
		{9.5, 10, 15, "10 – 15", "below", "0.50 ms below"},
		// The +Inf bucket: everything above the last finite bound.
		{5000, 1000, 1000, "above 1000", "inside", "inside"},
		{900, 1000, 1000, "above 1000", "below", "100.00 ms below"},
	} {
		b, w, v := bucketVerdict(c.client, c.lo, c.hi)
		if b != c.bucket || w != c.where || v != c.verdict {
			t.Errorf("bucketVerdict(%v, %v, %v) = %q %q %q, want %q %q %q", c.client, c.lo, c.hi, b, w, v, c.bucket, c.where, c.verdict)
		}
	}
}

// TestServerVsClientView: a client figure below the server's interpolated
// one but inside its bucket reads as agreement, not as a negative
// difference.
func TestServerVsClientView(t *testing.T) {
	r := &ReportRun{Name: "run", Server: &ServerMetrics{URL: "http://x/metrics", Scrapes: 9, IntervalSec: 0.5,
		Window: &ServerMetricsWindow{FromS: -0.2, ToS: 5.8},
		VsClient: []ServerClientRow{
			{Metric: "ttft", P: 50, Histogram: "vllm:time_to_first_token_seconds", ServerMs: 60.32, BucketLoMs: 40, BucketHiMs: 80, ClientMs: 50.35, DiffMs: -9.97},
			{Metric: "e2el", P: 99.9, Histogram: "vllm:e2e_request_latency_seconds", ServerMs: 976.9, BucketLoMs: 800, BucketHiMs: 1000, ClientMs: 1100, DiffMs: 123.1},
		}}}
	v := newServerVsClientView(r, false)
	want := []serverVsClientLine{
		{"P50 TTFT", "50.35", "40 – 80", "inside", "inside", "60.32", "vllm:time_to_first_token_seconds"},
		{"P99.9 E2EL", "1100.00", "800 – 1000", "above", "100.00 ms above", "976.90", "vllm:e2e_request_latency_seconds"},
	}
	if !slices.Equal(v.Rows, want) {
		t.Errorf("rows\n%+v\nwant\n%+v", v.Rows, want)
	}
	if v.Window != " over 6.0 s" {
		t.Errorf("window %q", v.Window)
	}
	// The console block makes the same comparison.
	var b strings.Builder
	WriteServerVsClient(&b, r.Server)
	for _, want := range []string{"P50 TTFT          50.35 40 – 80         inside ", "100.00 ms above", "976.90"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("console block lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "-9.97") {
		t.Errorf("console block prints the negative difference:\n%s", b.String())
	}
}

func TestHealthViewLabels(t *testing.T) {
	side := []byte(`{"health": {"shared_stamp_share": 0.00520833, "client_cpu_s": 0.257581, "shards": 2,
		"schedule_lag_p99_ms": 6.87515, "a_new_figure": 3.5, "warm_connections": {"opened": 8, "failed": 0},
		"kernel_rx_stamp_coverage": 1}}`)
	r, err := ParseReportRun("run", []byte(`{"duration": 1}`), side)
	if err != nil {
		t.Fatal(err)
	}
	v := newHealthView(r, false)
	var got []string
	for _, l := range v.Rows {
		got = append(got, l.Key+"|"+l.Label+"|"+l.Value+"|"+l.Unit)
	}
	want := []string{
		"shards|Shards (event loops)|2|",
		"client_cpu_s|Client CPU time|0.26|s",
		"schedule_lag_p99_ms|Schedule lag, P99|6.875|ms",
		"kernel_rx_stamp_coverage|Reads with a kernel RX timestamp|100.00|%",
		"shared_stamp_share|Share of token events sharing a read's stamp|0.52|%",
		"warm_connections|Warm connections (--warm-connections)|failed 0, opened 8|",
		// A key the table does not know is still shown, by its name.
		"a_new_figure|a_new_figure|3.5|",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows\n%q\nwant\n%q", got, want)
	}
}

func TestBreakdownViewLabels(t *testing.T) {
	phase := func(mean float64) map[string]any {
		return map[string]any{"mean_ms": mean, "median_ms": mean, "std_ms": 0.0}
	}
	side, _ := json.Marshal(map[string]any{"breakdown": map[string]any{"requests": 300, "new_connections": 52,
		"phases": map[string]any{"ttft": phase(51.6), "connect": phase(0.03), "server_ttfb": phase(0.2),
			"first_token": phase(51.37), "zz_later_phase": phase(1)}}})
	r, err := ParseReportRun("run", []byte(`{"duration": 1}`), side)
	if err != nil {
		t.Fatal(err)
	}
	v := newBreakdownView(r, false)
	var got []string
	for _, l := range v.Rows {
		got = append(got, l.Key+"|"+l.Phase+"|"+l.Mean)
	}
	want := []string{"connect|TCP connect|0.030", "server_ttfb|Server, to the first response byte|0.200",
		"first_token|First byte to first token|51.370", "ttft|TTFT (the phases from connect on)|51.600",
		"zz_later_phase|zz_later_phase|1.000"}
	if !slices.Equal(got, want) {
		t.Errorf("rows\n%q\nwant\n%q", got, want)
	}
	if v.Requests != "300" || v.NewConnections != "52" {
		t.Errorf("requests %q, new connections %q", v.Requests, v.NewConnections)
	}
	for _, p := range v.Bar.Parts {
		if strings.Contains(p.Phase, "_") {
			t.Errorf("bar part named %q", p.Phase)
		}
	}
}

func TestNiceWidth(t *testing.T) {
	for _, c := range [][2]float64{{0.29, 0.25}, {0.072, 0.1}, {0.06, 0.05}, {0.83, 1}, {0.14, 0.1}, {0.16, 0.2}, {3.4, 2.5}, {38, 50}, {1e-4, 1e-4}} {
		if got := niceWidth(c[0]); math.Abs(got-c[1]) > 1e-12*c[1] {
			t.Errorf("niceWidth(%v) = %v, want %v", c[0], got, c[1])
		}
	}
}

// TestBinWidth: the bins are a readable width, as many as the run's
// completions fill to about binCompletions each, within [minBins,
// maxBins] give or take the rounding.
func TestBinWidth(t *testing.T) {
	for _, c := range []struct {
		span float64
		done int
	}{{5.75, 300}, {100, 10000}, {3600, 1_000_000}, {0.4, 3}, {30, 0}, {12.3, 2500}} {
		w := binWidth(c.span, c.done)
		m := w / math.Pow(10, math.Floor(math.Log10(w)+1e-9))
		if !slices.ContainsFunc([]float64{1, 2, 2.5, 5}, func(f float64) bool { return math.Abs(m-f) < 1e-9 }) {
			t.Errorf("span %v: width %v is not 1, 2, 2.5 or 5 times a power of ten", c.span, w)
		}
		n := c.span / w
		if n < minBins/1.6 || n > maxBins*1.6 {
			t.Errorf("span %v, %d done: %v bins of %v s", c.span, c.done, n, w)
		}
		if c.done >= binCompletions*minBins*2 && float64(c.done)/n < binCompletions/2 {
			t.Errorf("span %v, %d done: %.1f completions a bin", c.span, c.done, float64(c.done)/n)
		}
	}
	if w := binWidth(5.75, 300); w != 0.25 {
		t.Errorf("300 requests over 5.75 s: %v s bins, want 0.25", w)
	}
}

// TestOverTimeBins: every completion is counted once, bin edges fall on
// multiples of the width, and the step line's extra point closes the
// last bin.
func TestOverTimeBins(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	q := &reportRequests{}
	for i := range 500 {
		st := float64(i) * 0.012
		lat := 0.2 + rng.Float64()*0.5
		q.starts, q.latencies, q.ttfts = append(q.starts, st), append(q.latencies, lat), append(q.ttfts, 0.04)
		q.outLens = append(q.outLens, 10)
		q.itls = append(q.itls, slices.Repeat([]float64{(lat - 0.04) / 9}, 9))
	}
	lo, hi := reportTimeSpan(q, nil)
	w := binWidth(hi-lo, completions(q))
	start, n := binEdges(lo, hi, w)
	if start > lo || start+float64(n)*w < hi || math.Abs(math.Round(start/w)*w-start) > 1e-9 {
		t.Fatalf("edges from %v, %d × %v, do not cover [%v, %v] on round times", start, n, w, lo, hi)
	}
	xs, done, tokens, inflight := overTime(q, start, w, n)
	if len(xs) != n+1 || len(done) != n+1 || xs[n] != start+float64(n)*w {
		t.Fatalf("%d edges for %d bins, last %v", len(xs), n, xs[n])
	}
	sum, toks := 0.0, 0.0
	for i := range n {
		sum += done[i] * w
		toks += tokens[i] * w
	}
	if math.Round(sum) != 500 || math.Round(toks) != 5000 {
		t.Errorf("bins hold %v completions and %v tokens, want 500 and 5000", sum, toks)
	}
	if done[n] != done[n-1] || tokens[n] != tokens[n-1] || inflight[n] != inflight[n-1] {
		t.Error("the closing point does not repeat the last bin")
	}
}

// TestPackLanes: requests that overlap never share a lane, and there are
// as many lanes as requests were in flight at the peak.
func TestPackLanes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	reqs := make([]timelineRequest, 300)
	for i := range reqs {
		reqs[i] = timelineRequest{StartUs: int64(rng.IntN(5_000_000)), LatencyUs: int64(200_000 + rng.IntN(600_000))}
		reqs[i].EventsUs = []int64{40_000, reqs[i].LatencyUs - 1000}
	}
	lanes := packLanes(reqs)
	peak := 0
	for i := range reqs {
		// In flight at request i's start: started at or before it, not ended.
		n := 0
		for j := range reqs {
			if reqs[j].StartUs <= reqs[i].StartUs && requestEndUs(&reqs[j]) > reqs[i].StartUs {
				n++
			}
		}
		peak = max(peak, n)
		for j := range reqs {
			if i != j && reqs[i].Lane == reqs[j].Lane &&
				reqs[i].StartUs < requestEndUs(&reqs[j]) && reqs[j].StartUs < requestEndUs(&reqs[i]) {
				t.Fatalf("requests %d and %d overlap in lane %d", i, j, reqs[i].Lane)
			}
		}
	}
	if lanes != peak {
		t.Errorf("%d lanes, want the peak concurrency %d", lanes, peak)
	}
	if lanes >= len(reqs)/2 {
		t.Errorf("%d lanes for %d requests", lanes, len(reqs))
	}
}

// TestTimelineLanesOnlyInReport: the report's timeline data has lanes;
// --plot-timeline's keeps vLLM's row per request.
func TestTimelineLanesOnlyInReport(t *testing.T) {
	d := &metrics.RunData{Log: metrics.LogOf([]metrics.RequestResult{
		{Index: 0, Success: true, StartNs: 1, TTFTNs: 1e7, LatencyNs: 3e7, ChunkEvents: 2, ITLNs: []int64{2e7}},
		{Index: 1, Success: true, StartNs: 5e6, TTFTNs: 1e7, LatencyNs: 3e7, ChunkEvents: 2, ITLNs: []int64{2e7}},
		{Index: 2, Success: true, StartNs: 4e7, TTFTNs: 1e7, LatencyNs: 3e7, ChunkEvents: 2, ITLNs: []int64{2e7}},
	}...)}
	data, err := buildTimeline(d, TimelineOptions{ITLThresholdsMs: [2]float64{25, 50}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(data)
	if strings.Contains(string(b), `"lane`) {
		t.Errorf("--plot-timeline's data has lanes: %s", b)
	}
	if n := packLanes(data.Requests); n != 2 || data.Requests[2].Lane != 0 || data.Requests[1].Lane != 1 {
		t.Errorf("%d lanes, lanes %d %d %d; want 2, the third request back in the first", n,
			data.Requests[0].Lane, data.Requests[1].Lane, data.Requests[2].Lane)
	}
}
