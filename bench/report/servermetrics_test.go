package report

import "testing"

// TestServerChartsByPanel: series of different servers that share a
// panel share a chart, drawn as the panel says (a counter as its rate);
// a series from a sidecar without panels keeps a chart of its own, drawn
// by its type.
func TestServerChartsByPanel(t *testing.T) {
	s := &ServerMetrics{
		Series: []ServerSeries{
			{Name: "llamacpp:requests_processing", Type: "gauge", Panel: "requests", T: []float64{0, 1}, V: []float64{2, 4}},
			{Name: "vllm:num_requests_running", Type: "gauge", Panel: "requests", T: []float64{0, 1}, V: []float64{1, 1}},
			{Name: "llamacpp:prompt_tokens_total", Type: "untyped", Panel: "tokens", T: []float64{0, 2}, V: []float64{10, 30}},
			{Name: "old:counter_total", Type: "counter", T: []float64{0, 1}, V: []float64{0, 5}},
		},
		Histograms: []ServerHistogram{
			{Name: "tgi_request_input_length", Panel: "request_tokens", T: []float64{0, 1}, Count: []float64{0, 2}, Sum: []float64{0, 300}},
		},
	}
	charts := serverCharts(s)
	var titles []string
	for _, c := range charts {
		titles = append(titles, c.Title)
	}
	want := []string{"Server: requests running and waiting", "Server: tokens per second (prompt, generated)",
		"Server: mean tokens per request (prompt, generated)", "Server: rate of old:counter_total"}
	if len(titles) != len(want) {
		t.Fatalf("charts %q, want %q", titles, want)
	}
	for i := range want {
		if titles[i] != want[i] {
			t.Errorf("chart %d %q, want %q", i, titles[i], want[i])
		}
	}
	if n := len(charts[0].Lines); n != 2 {
		t.Errorf("requests chart has %d lines, want llama.cpp's and vLLM's", n)
	}
	if y := charts[1].Lines[0].Y; len(y) != 1 || y[0] != 10 {
		t.Errorf("untyped total on a rate panel drawn as %v, want its rate 10/s", y)
	}
	if y := charts[2].Lines[0].Y; len(y) != 1 || y[0] != 150 {
		t.Errorf("token histogram drawn as %v, want 150 tokens a request (no ms scale)", y)
	}
	if y := charts[3].Lines[0].Y; len(y) != 1 || y[0] != 5 {
		t.Errorf("panel-less counter drawn as %v, want its rate", y)
	}
}
