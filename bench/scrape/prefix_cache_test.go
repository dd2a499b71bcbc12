package scrape

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stampede-bench/stampede/bench/report"
)

// vllmPrefixCache is vLLM's two prefix-cache counters for two engines,
// each engine holding half of the totals given.
func vllmPrefixCache(queries, hits float64) string {
	return fmt.Sprintf(`# HELP vllm:prefix_cache_queries_total Prefix cache queries.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} %[1]v
vllm:prefix_cache_queries_total{engine="1",model_name="m"} %[1]v
# HELP vllm:prefix_cache_hits_total Prefix cache hits.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} %[2]v
vllm:prefix_cache_hits_total{engine="1",model_name="m"} %[2]v
`, queries/2, hits/2)
}

// TestReadPrefixCache: each server's counters are found by the names
// seriesRules keep them as, summed over label sets; llama.cpp's lookups
// are its processed and cached prompt tokens together.
func TestReadPrefixCache(t *testing.T) {
	for _, tt := range []struct {
		body          string
		server        string
		queries, hits float64
	}{
		{vllmPrefixCache(1000, 250), "vLLM", 1000, 250},
		{"# TYPE vllm:gpu_prefix_cache_queries counter\nvllm:gpu_prefix_cache_queries_total 8\n" +
			"# TYPE vllm:gpu_prefix_cache_hits counter\nvllm:gpu_prefix_cache_hits_total 2\n", "vLLM", 8, 2},
		{sglangExposition, "SGLang", 900, 90},
		{llamacppExposition, "llama.cpp", 1200 + 300, 300},
		{vllmExposition, "", 0, 0},
		{tgiExposition, "", 0, 0},
	} {
		a, err := parseServerMetrics([]byte(tt.body), "")
		if err != nil {
			t.Fatal(err)
		}
		r := readPrefixCache(a)
		server := ""
		if r.source != nil {
			server = r.source.server
		}
		if server != tt.server || r.counts != (report.PrefixCacheCounts{Queries: tt.queries, Hits: tt.hits}) {
			t.Errorf("%s: read %q %+v, want %q queries %v hits %v", tt.server, server, r.counts, tt.server, tt.queries, tt.hits)
		}
	}
}

// TestPrefixCacheSourcesAreRules: every counter the prefix cache reads
// is one seriesRules keeps as a total.
func TestPrefixCacheSourcesAreRules(t *testing.T) {
	for _, src := range prefixCacheSources {
		for _, name := range append([]string{src.hits}, src.queries...) {
			r := rulesByName[name]
			if r == nil || r.kind != total || r.server != src.server {
				t.Errorf("%s: %s is no %s total of seriesRules", src.server, name, src.server)
			}
		}
	}
}

// TestPrefixCacheOfRun: three readings of a server give the run's own hit
// rate and say it started warm when half the first lookups hit; a server
// that exports no counters gives no account.
func TestPrefixCacheOfRun(t *testing.T) {
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(body.Load().(string)))
	}))
	defer srv.Close()
	read := func(b string) Counters {
		body.Store(b)
		c, ok := ReadCounters(context.Background(), srv.Client(), srv.URL, nil)
		if !ok {
			t.Fatal("ReadCounters failed")
		}
		return c
	}
	before := read(vllmPrefixCache(1000, 100))
	// 200 tokens looked up before the first answer, 150 of them cached.
	first := ReadAtFirstAnswer(context.Background(), srv.Client(), srv.URL, nil, before, func() bool { return false })
	body.Store(vllmPrefixCache(1200, 250))
	atFirst, ok := first.Finish()
	if ok {
		t.Fatalf("a reading without an answer: %+v", atFirst)
	}
	first = ReadAtFirstAnswer(context.Background(), srv.Client(), srv.URL, nil, before, func() bool { return true })
	atFirst, ok = first.Finish()
	if !ok {
		t.Fatal("no reading after the first answer")
	}
	after := read(vllmPrefixCache(3000, 500))
	pc := PrefixCacheOfRun(before, atFirst, ok, after, true)
	if pc == nil || pc.Server != "vLLM" || pc.HitsSeries != "vllm:prefix_cache_hits_total" || !pc.Reset {
		t.Fatalf("account %+v", pc)
	}
	if pc.Run != (report.PrefixCacheCounts{Queries: 2000, Hits: 400}) || pc.HitRate == nil || *pc.HitRate != 0.2 {
		t.Errorf("run %+v rate %v, want 2000 looked up, 400 hit, 0.2", pc.Run, pc.HitRate)
	}
	if pc.FirstHitRate == nil || *pc.FirstHitRate != 0.75 || !pc.Warm {
		t.Errorf("first answer's rate %v warm %v, want 0.75 and warm", pc.FirstHitRate, pc.Warm)
	}
	if cold := PrefixCacheOfRun(before, Counters{}, false, after, false); cold == nil || cold.First != nil || cold.Warm {
		t.Errorf("without a first reading: %+v", cold)
	}

	none := read(vllmExposition)
	if pc := PrefixCacheOfRun(none, none, true, none, false); pc != nil {
		t.Errorf("a server without counters gave %+v", pc)
	}
	if f := ReadAtFirstAnswer(context.Background(), srv.Client(), srv.URL, nil, none, func() bool { return true }); f != nil {
		t.Error("a first-answer reading of a server without counters")
	}
	if _, ok := (*FirstAnswerReading)(nil).Finish(); ok {
		t.Error("a nil reading finished with one")
	}
}
