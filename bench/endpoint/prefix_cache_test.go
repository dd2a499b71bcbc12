package endpoint

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
)

func TestResetPrefixCache(t *testing.T) {
	var calls []string
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls = append(calls, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Run"))
		w.WriteHeader(status)
	}))
	defer srv.Close()
	cfg, err := benchtest.ParseArgs([]string{"--base-url", srv.URL, "--header", "X-Run=7"}, benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ResetPrefixCache(context.Background(), "--reset-prefix-cache"); err != nil {
		t.Fatalf("200: %v", err)
	}
	if len(calls) != 1 || calls[0] != "POST /reset_prefix_cache 7" {
		t.Errorf("calls %q", calls)
	}
	status = http.StatusNotFound
	err = s.ResetPrefixCache(context.Background(), "--reset-prefix-cache")
	if err == nil || !strings.Contains(err.Error(), "--reset-prefix-cache") || !strings.Contains(err.Error(), "404") ||
		!strings.Contains(err.Error(), "VLLM_SERVER_DEV_MODE=1") {
		t.Errorf("404: %v, want an error naming the flag, the status and dev mode", err)
	}
}
