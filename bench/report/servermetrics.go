package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// ServerMetrics is the sidecar's "server_metrics": every kept series of
// every scrape. Times are seconds from the run's time 0 (the origin of
// the result's start_times); scrapes made before the first request have
// negative times.
type ServerMetrics struct {
	URL         string  `json:"url"`
	IntervalSec float64 `json:"interval_s"`
	// Server names the servers whose series were recognised ("vLLM",
	// "SGLang", "llama.cpp", "TGI", several joined with "+"); "" when none
	// was. Recognised and Ignored are the metric families of the first
	// answer that were kept and left out.
	Server     string   `json:"server,omitempty"`
	Recognised []string `json:"recognised,omitempty"`
	Ignored    []string `json:"ignored,omitempty"`
	// Scrapes counts the answers parsed; Failures the scrapes that failed,
	// the last failure's text in LastError.
	Scrapes    int                  `json:"scrapes"`
	Failures   int                  `json:"failures"`
	LastError  string               `json:"last_error,omitempty"`
	Series     []ServerSeries       `json:"series"`
	Histograms []ServerHistogram    `json:"histograms"`
	VsClient   []ServerClientRow    `json:"server_vs_client,omitempty"`
	Window     *ServerMetricsWindow `json:"window,omitempty"`
}

// ServerMetricsWindow is the span the histogram deltas cover: from the
// last scrape before the first request to the first scrape after the run.
type ServerMetricsWindow struct {
	FromS float64 `json:"from_s"`
	ToS   float64 `json:"to_s"`
}

// ServerSeries is one gauge or counter (one label set) over time.
type ServerSeries struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Type   string            `json:"type"` // "gauge", "counter" or "untyped"
	// Panel is the ServerPanels entry the series is drawn on.
	Panel string    `json:"panel,omitempty"`
	T     []float64 `json:"t"`
	V     []float64 `json:"v"`
}

// ServerHistogram is one histogram (one label set): its count and sum
// over time, and its buckets' growth over the run's window.
type ServerHistogram struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Panel  string            `json:"panel,omitempty"`
	T      []float64         `json:"t"`
	Count  []float64         `json:"count"`
	Sum    []float64         `json:"sum"`
	// UpperBounds (seconds, the last +Inf written as null) and
	// DeltaCumulative, the cumulative bucket counts' growth over Window.
	UpperBounds     []JSONFloat `json:"le"`
	DeltaCumulative []float64   `json:"delta_cumulative"`
}

// ServerClientRow is one line of the "server vs client" table: a
// percentile of the server's histogram delta beside the client's own
// figure; DiffMs = ClientMs - ServerMs is the network and the client.
type ServerClientRow struct {
	Metric    string  `json:"metric"` // "ttft", "itl", "e2el"
	P         float64 `json:"p"`
	Histogram string  `json:"histogram"`
	ServerMs  float64 `json:"server_ms"`
	// BucketLoMs and BucketHiMs bound the histogram bucket the server's
	// figure was interpolated in: the figure is only known to lie there.
	BucketLoMs float64 `json:"bucket_lo_ms"`
	BucketHiMs float64 `json:"bucket_hi_ms"`
	ClientMs   float64 `json:"client_ms"`
	DiffMs     float64 `json:"diff_ms"`
}

// JSONFloat is a float that encodes ±Inf and NaN as null.
type JSONFloat float64

// MarshalJSON writes f, or null when JSON has no spelling for it.
func (f JSONFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return []byte("null"), nil
	}
	return fmt.Appendf(nil, "%v", v), nil
}

// UnmarshalJSON reads null as +Inf (a bucket bound is the only null).
func (f *JSONFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = JSONFloat(math.Inf(1))
		return nil
	}
	var v float64
	if _, err := fmt.Sscan(string(b), &v); err != nil {
		return err
	}
	*f = JSONFloat(v)
	return nil
}

// WriteServerVsClient prints the "server vs client" table (stampede's
// own block, after Python's).
func WriteServerVsClient(w io.Writer, m *ServerMetrics) {
	if m == nil {
		return
	}
	if m.Scrapes == 0 {
		fmt.Fprintf(w, "stampede: --server-metrics: no scrape of %s succeeded (%s)\n", m.URL, m.LastError)
		return
	}
	if len(m.VsClient) == 0 {
		return
	}
	fmt.Fprintf(w, "%s\n", centerTitle(" Server vs client ", 50, '='))
	// The server's percentile is only known to lie in its bucket, so the
	// client's exact value is set against the bucket, not against the
	// interpolated estimate (a client value below the estimate but inside
	// the bucket is agreement, not a negative network time).
	fmt.Fprintf(w, "%-11s %11s %-15s %-16s %s\n", "Percentile", "Client (ms)", "Server bucket", "Client vs bucket", "Server est. (ms)")
	for _, r := range m.VsClient {
		bucket, _, verdict := bucketVerdict(r.ClientMs, r.BucketLoMs, r.BucketHiMs)
		fmt.Fprintf(w, "%-11s %11.2f %-15s %-16s %16.2f\n", fmt.Sprintf("P%s %s", trimFloat(r.P), strings.ToUpper(r.Metric)),
			r.ClientMs, bucket, verdict, r.ServerMs)
	}
	fmt.Fprintf(w, "Server: histogram deltas over %.1f s (%d scrapes of %s); its percentiles are known only to their bucket (ms), the estimate interpolates in it.\n",
		m.Window.ToS-m.Window.FromS, m.Scrapes, m.URL)
	fmt.Fprintln(w, strings.Repeat("=", 50))
}

func centerTitle(s string, width int, fill byte) string {
	if len(s) >= width {
		return s
	}
	left := (width - len(s)) / 2
	return strings.Repeat(string(fill), left) + s + strings.Repeat(string(fill), width-len(s)-left)
}

func trimFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// ServerPanel is one chart of the server's metrics in the report: the
// series of every server that mean the same thing (bench/scrape's table
// says which series go where).
type ServerPanel struct {
	ID, Title, YLabel string
	Draw              PanelDraw
	// Scale multiplies a histogram's mean (1000: seconds to ms).
	Scale float64
}

// PanelDraw is how a panel draws its series.
type PanelDraw uint8

const (
	// DrawLevel draws each scrape's value as read (gauges).
	DrawLevel PanelDraw = iota
	// DrawRate draws the growth per second between two scrapes (counters).
	DrawRate
	// DrawMean draws a histogram's mean observation per interval: the
	// growth of its sum over the growth of its count.
	DrawMean
)

// ServerPanels are the panels in the order the report draws them.
var ServerPanels = []ServerPanel{
	{ID: "requests", Title: "Server: requests running and waiting", YLabel: "requests", Draw: DrawLevel},
	{ID: "kv_cache_usage", Title: "Server: KV cache usage (1 = full)", YLabel: "fraction", Draw: DrawLevel},
	{ID: "kv_cache_tokens", Title: "Server: KV cache tokens (in use, capacity)", YLabel: "tokens", Draw: DrawLevel},
	{ID: "tokens", Title: "Server: tokens per second (prompt, generated)", YLabel: "tokens/s", Draw: DrawRate},
	{ID: "prefix_cache", Title: "Server: prefix cache, tokens per second (queried, hit)", YLabel: "tokens/s", Draw: DrawRate},
	{ID: "cache_hit_rate", Title: "Server: prefix cache hit rate", YLabel: "fraction", Draw: DrawLevel},
	{ID: "throughput", Title: "Server: throughput as the server reports it", YLabel: "tokens/s", Draw: DrawLevel},
	{ID: "busy", Title: "Server: busy seconds per second (prompt, generation)", YLabel: "s/s", Draw: DrawRate},
	{ID: "forward_passes", Title: "Server: forward passes per second", YLabel: "passes/s", Draw: DrawRate},
	{ID: "request_rate", Title: "Server: requests per second (received, finished, failed)", YLabel: "requests/s", Draw: DrawRate},
	{ID: "preemptions", Title: "Server: preemptions per second", YLabel: "requests/s", Draw: DrawRate},
	{ID: "ttft", Title: "Server: mean time to first token per interval", YLabel: "ms", Draw: DrawMean, Scale: 1000},
	{ID: "itl", Title: "Server: mean inter-token latency per interval", YLabel: "ms", Draw: DrawMean, Scale: 1000},
	{ID: "tpot", Title: "Server: mean time per output token (per request) per interval", YLabel: "ms", Draw: DrawMean, Scale: 1000},
	{ID: "e2el", Title: "Server: mean end-to-end latency per interval", YLabel: "ms", Draw: DrawMean, Scale: 1000},
	{ID: "queue", Title: "Server: mean queue time per interval", YLabel: "ms", Draw: DrawMean, Scale: 1000},
	{ID: "inference", Title: "Server: mean prefill, decode and inference time per request", YLabel: "ms", Draw: DrawMean, Scale: 1000},
	{ID: "step", Title: "Server: mean time per forward pass (prefill, decode)", YLabel: "ms", Draw: DrawMean, Scale: 1000},
	{ID: "request_tokens", Title: "Server: mean tokens per request (prompt, generated)", YLabel: "tokens", Draw: DrawMean, Scale: 1},
}

// serverPanel is the panel with id; nil for none (a sidecar written
// before panels, or by a later version).
func serverPanel(id string) *ServerPanel {
	for i := range ServerPanels {
		if ServerPanels[i].ID == id {
			return &ServerPanels[i]
		}
	}
	return nil
}

// serverCharts draws the scraped series, one chart per panel and one
// line per series and label set. A series without a known panel gets a
// chart of its own, drawn by its type: a counter as its rate, a gauge as
// read, a histogram as its mean in ms.
func serverCharts(s *ServerMetrics) []*svgChart {
	byKey := map[string]*svgChart{}
	var keys []string
	chart := func(p *ServerPanel, name string, fallback ServerPanel) (*svgChart, *ServerPanel) {
		key := "name:" + name
		if p != nil {
			key = "panel:" + p.ID
		} else {
			p = &fallback
		}
		c := byKey[key]
		if c == nil {
			c = &svgChart{Title: p.Title, YLabel: p.YLabel}
			byKey[key] = c
			keys = append(keys, key)
		}
		return c, p
	}
	line := func(c *svgChart, name string, labels map[string]string, xs, ys []float64) {
		label := shortMetric(name)
		if l := labelText(labels, -1); l != "" {
			label += " " + l
		}
		c.Lines = append(c.Lines, svgLine{Name: label, Color: chartColor(len(c.Lines)), X: xs, Y: ys})
	}
	for _, ser := range s.Series {
		fallback := ServerPanel{Title: "Server: " + ser.Name, Draw: DrawLevel}
		if ser.Type == "counter" {
			fallback = ServerPanel{Title: "Server: rate of " + ser.Name, YLabel: "per second", Draw: DrawRate}
		}
		c, p := chart(serverPanel(ser.Panel), ser.Name, fallback)
		if p.Draw == DrawRate {
			xs, ys := rates(ser.T, ser.V)
			line(c, ser.Name, ser.Labels, xs, ys)
			continue
		}
		line(c, ser.Name, ser.Labels, ser.T, ser.V)
	}
	for _, h := range s.Histograms {
		c, p := chart(serverPanel(h.Panel), h.Name,
			ServerPanel{Title: "Server: mean " + h.Name + " per interval", YLabel: "ms", Draw: DrawMean, Scale: 1000})
		scale := p.Scale
		if scale == 0 {
			scale = 1
		}
		var xs, ys []float64
		for i := 1; i < len(h.T); i++ {
			dc := h.Count[i] - h.Count[i-1]
			if dc <= 0 {
				continue
			}
			xs = append(xs, (h.T[i]+h.T[i-1])/2)
			ys = append(ys, (h.Sum[i]-h.Sum[i-1])/dc*scale)
		}
		line(c, h.Name, h.Labels, xs, ys)
	}
	// Panels in their table's order, then the charts of their own.
	rank := func(key string) int {
		for i, p := range ServerPanels {
			if key == "panel:"+p.ID {
				return i
			}
		}
		return len(ServerPanels)
	}
	sort.SliceStable(keys, func(i, j int) bool { return rank(keys[i]) < rank(keys[j]) })
	out := make([]*svgChart, 0, len(keys))
	for _, k := range keys {
		c := byKey[k]
		if len(c.Lines) == 1 {
			c.Lines[0].Name = ""
		}
		c.Note = "no change during the run"
		out = append(out, c)
	}
	return out
}

// shortMetric is a metric's name without its server's prefix ("vllm:",
// "sglang:", "llamacpp:", "tgi_") and its unit suffixes.
func shortMetric(name string) string {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[i+1:]
	}
	name = strings.TrimPrefix(name, "tgi_")
	return strings.TrimSuffix(strings.TrimSuffix(name, "_total"), "_seconds")
}
