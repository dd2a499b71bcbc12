package scrape

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadRunning: each server's running-requests gauge is read, summed
// over its series; an answer without one, or a failed GET, is an error.
func TestReadRunning(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       float64
	}{
		{"vLLM, two engines", "# TYPE vllm:num_requests_running gauge\n" +
			"vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3\nvllm:num_requests_running{engine=\"1\",model_name=\"m\"} 4\n" +
			"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 9\n", 7},
		{"SGLang", sglangExposition, 6},
		{"llama.cpp", llamacppExposition, 4},
		{"TGI", tgiExposition, 8},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(tt.body))
		}))
		got, err := ReadRunning(context.Background(), srv.Client(), srv.URL+"/metrics", nil)
		srv.Close()
		if err != nil || got != tt.want {
			t.Errorf("%s: %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("# TYPE other gauge\nother 1\n"))
	}))
	defer srv.Close()
	if _, err := ReadRunning(context.Background(), srv.Client(), srv.URL+"/metrics", nil); err == nil || !strings.Contains(err.Error(), "running-requests gauge") {
		t.Errorf("no gauge: %v", err)
	}
	if _, err := ReadRunning(context.Background(), srv.Client(), "http://127.0.0.1:1/metrics", nil); err == nil {
		t.Error("refused: no error")
	}
}
