package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"strconv"

	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/metrics"
)

// --plot-timeline: vLLM draws every request as a row of segments with
// plotly (vllm/benchmarks/plot.py, generate_timeline_plot): the TTFT from
// the request's start to its first token, then one segment per token gap,
// coloured by the two --timeline-itl-thresholds a < b (ms):
//
//	TTFT              #636EFA
//	ITL < a           #109618
//	a ≤ ITL < b       #FF7F0E
//	ITL ≥ b           #D62728
//
// with labels "ITL < 25ms", "25ms ≤ ITL < 50ms", "ITL ≥ 50ms" (thresholds
// with no decimals), rows "Req {i}" top to bottom, times as HH:MM:SS.mmm
// from the earliest start, and a hover box with the segment's type, start,
// end and duration, the request's prompt and output tokens and its start
// and end. plotly's page embeds plotly.js (several megabytes). stampede's
// page is self-contained too, but draws the same picture with a small
// canvas script of its own, so it needs no plotting library and opens
// without a network.

// timelineColors are plotly's colours in vLLM's order: TTFT, then the
// three ITL classes.
var timelineColors = [4]string{"#636EFA", "#109618", "#FF7F0E", "#D62728"}

// TimelinePath is where --plot-timeline writes its page: the result path
// without its extension, plus ".timeline.html".
func TimelinePath(resultPath string) string {
	root, _ := py.SplitExt(resultPath)
	return root + ".timeline.html"
}

// TimelineOptions are the page's settings.
type TimelineOptions struct {
	// Title heads the page.
	Title string
	// ITLThresholdsMs are the two --timeline-itl-thresholds, ascending.
	ITLThresholdsMs [2]float64
	// OutputLen gives a request's output token count as Python's figures
	// take it (RequestResult.OutputLen); nil takes usage.completion_tokens.
	OutputLen func(*metrics.RequestResult) int
}

// timelineData is the JSON the page's script draws from.
type timelineData struct {
	Title        string            `json:"title"`
	ThresholdsMs [2]float64        `json:"thresholds_ms"`
	Labels       [4]string         `json:"labels"`
	Colors       [4]string         `json:"colors"`
	Requests     []timelineRequest `json:"requests"`
	// Lanes is how many rows the report's timeline has when its requests
	// are packed into concurrency slots (packLanes); 0 draws one row per
	// request.
	Lanes int `json:"lanes,omitempty"`
}

// timelineRequest is one row. Times are whole microseconds: the start from
// the earliest start, the token events (the first ends the TTFT, each
// later one a gap) from the request's own start, so rounding never
// accumulates along a long stream. Classes holds one digit per gap, the
// index of its label (1, 2 or 3), decided on the exact gap.
type timelineRequest struct {
	ID           string  `json:"id"`
	StartUs      int64   `json:"start_us"`
	LatencyUs    int64   `json:"latency_us"`
	EventsUs     []int64 `json:"events_us"`
	Classes      string  `json:"classes"`
	PromptTokens int     `json:"prompt_tokens"`
	OutputTokens int     `json:"output_tokens"`
	Error        string  `json:"error,omitempty"`
	// Lane is the request's row when the timeline has Lanes.
	Lane int `json:"lane,omitempty"`
}

// timelineLabels are vLLM's legend texts: f"{threshold:.0f}ms".
func timelineLabels(thresholdsMs [2]float64) [4]string {
	a, b := py.Fixed(thresholdsMs[0], 0), py.Fixed(thresholdsMs[1], 0)
	return [4]string{"TTFT", "ITL < " + a + "ms", a + "ms ≤ ITL < " + b + "ms", "ITL ≥ " + b + "ms"}
}

// itlClass is vLLM's itl_type, on the gap in seconds against the
// thresholds in seconds: 1 below the first, 2 below the second, else 3.
func itlClass(gapNs int64, thresholdsMs [2]float64) byte {
	gap := metrics.Seconds(gapNs)
	switch {
	case gap < thresholdsMs[0]/1000:
		return '1'
	case gap < thresholdsMs[1]/1000:
		return '2'
	}
	return '3'
}

// buildTimeline turns the run into rows: every request that was sent, in
// request order.
func buildTimeline(d *metrics.RunData, opts TimelineOptions) (*timelineData, error) {
	out := &timelineData{
		Title: opts.Title, ThresholdsMs: opts.ITLThresholdsMs,
		Labels: timelineLabels(opts.ITLThresholdsMs), Colors: timelineColors,
		Requests: []timelineRequest{},
	}
	var t0 int64
	first := true
	for _, r := range d.Log.All() {
		if r.Sent() && (first || r.StartNs < t0) {
			t0, first = r.StartNs, false
		}
	}
	us := func(ns int64) int64 { return (ns + 500) / 1000 }
	for _, r := range d.Log.All() {
		if !r.Sent() {
			continue
		}
		row := timelineRequest{
			ID: "Req " + strconv.Itoa(r.Index), StartUs: us(r.StartNs - t0), LatencyUs: us(r.LatencyNs),
			EventsUs: []int64{}, PromptTokens: r.PromptLen, OutputTokens: r.OutputTokens, Error: r.Error,
		}
		if opts.OutputLen != nil {
			row.OutputTokens = opts.OutputLen(r)
		}
		if r.ChunkEvents > 0 || r.Success {
			offset := r.TTFTNs
			row.EventsUs = append(row.EventsUs, us(offset))
			classes := make([]byte, len(r.ITLNs))
			for k, gap := range r.ITLNs {
				offset += gap
				row.EventsUs = append(row.EventsUs, us(offset))
				classes[k] = itlClass(gap, opts.ITLThresholdsMs)
			}
			row.Classes = string(classes)
		}
		out.Requests = append(out.Requests, row)
	}
	return out, nil
}

// WriteTimeline writes the timeline page of a run: one self-contained HTML
// file (data, style and script inline; nothing is fetched when it is
// opened).
func WriteTimeline(w io.Writer, d *metrics.RunData, opts TimelineOptions) error {
	data, err := buildTimeline(d, opts)
	if err != nil {
		return err
	}
	// encoding/json escapes <, > and & inside strings, so the data cannot
	// close its <script> element.
	payload, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("timeline data: %w", err)
	}
	bw := bufio.NewWriter(w)
	page := struct {
		Title string
		Data  template.JS
	}{opts.Title, template.JS(payload)}
	if err := pages.ExecuteTemplate(bw, "timeline.html", page); err != nil {
		return fmt.Errorf("timeline page: %w", err)
	}
	return bw.Flush()
}

// WriteTimelineFile writes the timeline page of a run to path; on failure
// it leaves no file behind.
func WriteTimelineFile(path string, d *metrics.RunData, opts TimelineOptions) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteTimeline(f, d, opts); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
