package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

func readPrefixCache(t *testing.T, path string) *report.PrefixCache {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sc report.Sidecar
	if err := json.Unmarshal(raw, &sc); err != nil {
		t.Fatal(err)
	}
	if sc.PrefixCache == nil {
		t.Fatalf("%s has no prefix_cache:\n%s", path, raw)
	}
	return sc.PrefixCache
}

// TestWarmRerunDetected: against the mock's global prefix cache, a rerun
// of the same prompts finds them cached from its first answer on, says so
// on stderr, and its sidecar and report say it started warm;
// --cold-prefix-cache empties the cache first, and the third run is cold.
func TestWarmRerunDetected(t *testing.T) {
	srv := startTinyMock(t, mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond, PrefixCache: mock.PrefixCacheGlobal})
	base := "http://" + srv.Addr()
	dir := t.TempDir()
	args := []string{"--dataset-name", "random", "--num-prompts", "8", "--random-input-len", "24", "--random-output-len", "3",
		"--save-result", "--result-dir", dir}
	// The mock counts a prompt's cached tokens without its BOS token, and
	// two of the random prompts may be the same: a warm run's hit rate is
	// near 1, a cold one's near 0.
	for _, run := range []struct {
		name         string
		extra        []string
		warm         bool
		rateFrom, to float64
	}{
		{"cold", nil, false, 0, 0.2},
		{"warm", []string{"--report", filepath.Join(dir, "warm.html")}, true, 0.9, 1},
		{"reset", []string{"--cold-prefix-cache"}, false, 0, 0.2},
	} {
		_, stderr, err := runAt(t, context.Background(), base, append(append(args, "--result-filename", run.name+".json"), run.extra...)...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", run.name, err, stderr)
		}
		if warned := strings.Contains(stderr, "prefix cache already held the run's prompts"); warned != run.warm {
			t.Errorf("%s: warned %v, want %v:\n%s", run.name, warned, run.warm, stderr)
		}
		pc := readPrefixCache(t, filepath.Join(dir, run.name+".stampede.json"))
		if pc.Server != "vLLM" || pc.Warm != run.warm || pc.HitRate == nil || *pc.HitRate < run.rateFrom || *pc.HitRate > run.to ||
			pc.First == nil || pc.Reset != (run.name == "reset") || pc.Run.Queries <= 0 {
			t.Errorf("%s: prefix_cache %+v (hit rate %v), want warm %v and a hit rate in [%v, %v]", run.name, pc, *pc.HitRate, run.warm, run.rateFrom, run.to)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "warm.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte(`<p class="meta prefix-cache">Prefix cache (vLLM, vllm:prefix_cache_hits_total): 9`)) ||
		!bytes.Contains(page, []byte("warm at the start")) {
		t.Error("the report has no prefix-cache line saying the run started warm")
	}
}

// TestColdPrefixCacheRefused: a server that does not offer
// /reset_prefix_cache ends --cold-prefix-cache's run before the clock
// starts, with an error naming the flag and the status; a server without
// /metrics has no prefix_cache at all.
func TestColdPrefixCacheRefused(t *testing.T) {
	srv := startTinyMock(t, mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond})
	target, _ := url.Parse("http://" + srv.Addr())
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/reset_prefix_cache" || r.URL.Path == "/metrics" {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	args := []string{"--dataset-name", "random", "--num-prompts", "4", "--random-input-len", "16", "--random-output-len", "2"}
	stdout, _, err := runAt(t, context.Background(), front.URL, append(args, "--cold-prefix-cache")...)
	if err == nil || !strings.Contains(err.Error(), "--cold-prefix-cache: POST "+front.URL+"/reset_prefix_cache answered 404") {
		t.Fatalf("error %v, want one naming --cold-prefix-cache and the 404", err)
	}
	if strings.Contains(stdout, "Starting main benchmark run") {
		t.Errorf("the main run started:\n%s", stdout)
	}

	dir := t.TempDir()
	if _, stderr, err := runAt(t, context.Background(), front.URL, append(args, "--save-result", "--result-dir", dir, "--result-filename", "r.json")...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "r.stampede.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(`"prefix_cache"`)) {
		t.Errorf("a server without /metrics gave a prefix_cache:\n%s", raw)
	}
}
