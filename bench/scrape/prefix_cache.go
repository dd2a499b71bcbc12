package scrape

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/report"
)

// prefixCacheSource is one server's pair of prefix-cache counters, named
// as seriesRules name them (without "_total"): the tokens found cached,
// and the tokens looked up as the sum of queries.
type prefixCacheSource struct {
	server  string
	hits    string
	queries []string
}

// prefixCacheSources: the first the server exports wins. vLLM counts
// queried and hit tokens (gpu_ is its older spelling); SGLang counts every
// prompt token and the cached ones among them; llama.cpp counts the
// prompt tokens it processed apart from the cached ones, so its lookups
// are the two summed.
var prefixCacheSources = []prefixCacheSource{
	{"vLLM", "vllm:prefix_cache_hits", []string{"vllm:prefix_cache_queries"}},
	{"vLLM", "vllm:gpu_prefix_cache_hits", []string{"vllm:gpu_prefix_cache_queries"}},
	{"SGLang", "sglang:cached_tokens", []string{"sglang:prompt_tokens"}},
	{"llama.cpp", "llamacpp:prompt_tokens_cached", []string{"llamacpp:prompt_tokens", "llamacpp:prompt_tokens_cached"}},
}

// prefixReading is one reading of a source's counters, summed over
// their label sets (vLLM labels each engine); source is nil when the
// answer had none of prefixCacheSources.
type prefixReading struct {
	source *prefixCacheSource
	counts report.PrefixCacheCounts
}

// readPrefixCache finds the first source whose counters are all in a, and
// sums them.
func readPrefixCache(a answer) prefixReading {
	sums := map[string]float64{}
	for _, p := range a.points {
		if p.typ == "counter" || p.typ == "untyped" {
			sums[strings.TrimSuffix(p.name, "_total")] += p.value
		}
	}
	for i := range prefixCacheSources {
		src := &prefixCacheSources[i]
		hits, ok := sums[src.hits]
		if !ok {
			continue
		}
		var queries float64
		for _, q := range src.queries {
			v, found := sums[q]
			ok = ok && found
			queries += v
		}
		if ok {
			return prefixReading{source: src, counts: report.PrefixCacheCounts{Queries: queries, Hits: hits}}
		}
	}
	return prefixReading{}
}

// firstAnswerPoll is how often FirstAnswerReading asks whether the first
// answer has come: a scrape about this long after it.
const firstAnswerPoll = 10 * time.Millisecond

// FirstAnswerReading is the reading of the counters taken once the run's
// first request has been answered (prefix_cache.go in bench/report says
// why then).
type FirstAnswerReading struct {
	stop chan struct{}
	done chan struct{}
	c    Counters
	ok   bool
}

// ReadAtFirstAnswer reads the counters at url once answered() first
// holds, on a goroutine of its own; answered is polled every
// firstAnswerPoll. When the run ends (Finish) before a poll saw an
// answer that came, the reading is taken then, over the whole run. Nil when before holds no prefix-cache counters (the
// server has none, or no /metrics), so nothing is read.
func ReadAtFirstAnswer(ctx context.Context, client *http.Client, url string, headers []plan.Header, before Counters, answered func() bool) *FirstAnswerReading {
	if before.prefix.source == nil {
		return nil
	}
	f := &FirstAnswerReading{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		t := time.NewTicker(firstAnswerPoll)
		defer t.Stop()
	wait:
		for !answered() {
			select {
			case <-ctx.Done():
				return
			case <-f.stop:
				// A run shorter than a poll: its first answer came, but
				// the reading is taken as it ends.
				if answered() {
					break wait
				}
				return
			case <-t.C:
			}
		}
		f.c, f.ok = ReadCounters(ctx, client, url, headers)
	}()
	return f
}

// Finish stops waiting for a first answer that never came, waits for a
// reading under way, and returns it; ok is false without one (and for a
// nil reading).
func (f *FirstAnswerReading) Finish() (c Counters, ok bool) {
	if f == nil {
		return Counters{}, false
	}
	close(f.stop)
	<-f.done
	return f.c, f.ok
}

// PrefixCacheOfRun is the run's prefix-cache account from the readings
// before the clock started, at the first answer (firstOK false without
// one) and after the clock stopped; nil when before or after holds no
// counters of the same server. reset says the cache was emptied first.
func PrefixCacheOfRun(before, first Counters, firstOK bool, after Counters, reset bool) *report.PrefixCache {
	src := before.prefix.source
	if src == nil || after.prefix.source != src {
		return nil
	}
	var at *report.PrefixCacheCounts
	if firstOK && first.prefix.source == src {
		at = &first.prefix.counts
	}
	queries := make([]string, len(src.queries))
	for i, q := range src.queries {
		queries[i] = q + "_total"
	}
	return report.NewPrefixCache(src.server, src.hits+"_total", strings.Join(queries, "+"), reset,
		before.prefix.counts, at, after.prefix.counts)
}
