package report

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// ServerMetrics is the sidecar's "server_metrics": every kept series of
// every scrape. Times are seconds from the run's time 0 (the origin of
// the result's start_times); scrapes made before the first request have
// negative times.
type ServerMetrics struct {
	URL         string  `json:"url"`
	IntervalSec float64 `json:"interval_s"`
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
	T      []float64         `json:"t"`
	V      []float64         `json:"v"`
}

// ServerHistogram is one histogram (one label set): its count and sum
// over time, and its buckets' growth over the run's window.
type ServerHistogram struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
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
