package report

import (
	"fmt"
	"io"
	"strings"
)

// The prefix cache's account of a run: the server's prefix-cache counters
// (in tokens) read just before the clock starts, once when the run's first
// request has been answered, and just after the clock stops. The run's own
// hit rate is the hits it added over the tokens it had looked up:
//
//	hit_rate = (hits_after − hits_before) / (queries_after − queries_before)
//
// A cold cache holds none of the run's prompts when the run starts, so up
// to its first answer the only hits are of prefixes the run's own requests
// shared while they were prefilled together. Half or more of the looked-up
// tokens hit by then means the server held the run's prefixes already (a
// rerun of the same prompts, a warm-up of the same requests): the figures
// measure a warm cache. A dataset whose prompts share most of their tokens
// (prefix_repetition with a long prefix) can reach that cold; the warning
// then says what it says and the hit rates let the reader judge.

// WarmShare is the share of the tokens looked up before the first answer
// that must have hit for the run to count as started warm.
const WarmShare = 0.5

// PrefixCache is the sidecar's "prefix_cache"; absent when the server has
// no /metrics, or none of the prefix-cache counters stampede knows.
type PrefixCache struct {
	// Server is whose counters were read: "vLLM", "SGLang", "llama.cpp".
	Server string `json:"server"`
	// HitsSeries and QueriesSeries name the counters; queries may be a
	// sum ("a+b": llama.cpp counts the cached tokens apart from the ones
	// it processed).
	HitsSeries    string `json:"hits_series"`
	QueriesSeries string `json:"queries_series"`
	// Reset is set when --cold-prefix-cache (or --reset-prefix-cache)
	// emptied the cache before the run.
	Reset  bool              `json:"reset"`
	Before PrefixCacheCounts `json:"before"`
	// First is the reading once the first request was answered; null
	// when no request succeeded or that reading failed.
	First *PrefixCacheCounts `json:"first_answer"`
	After PrefixCacheCounts  `json:"after"`
	// Run is after − before; HitRate its hits over its queries, null
	// when the run looked up no token or a counter went back (the server
	// restarted).
	Run     PrefixCacheCounts `json:"run"`
	HitRate *float64          `json:"hit_rate"`
	// FirstHitRate is (first − before)'s hit rate; Warm is FirstHitRate ≥
	// WarmShare.
	FirstHitRate *float64 `json:"first_answer_hit_rate"`
	Warm         bool     `json:"warm"`
}

// PrefixCacheCounts are the two counters, in tokens.
type PrefixCacheCounts struct {
	Queries float64 `json:"queries_tokens"`
	Hits    float64 `json:"hits_tokens"`
}

// NewPrefixCache is the account of a run from its readings; first is nil
// when there was none.
func NewPrefixCache(server, hitsSeries, queriesSeries string, reset bool, before PrefixCacheCounts, first *PrefixCacheCounts, after PrefixCacheCounts) *PrefixCache {
	pc := &PrefixCache{Server: server, HitsSeries: hitsSeries, QueriesSeries: queriesSeries, Reset: reset,
		Before: before, First: first, After: after}
	pc.Run, pc.HitRate = delta(before, after)
	if first != nil {
		_, pc.FirstHitRate = delta(before, *first)
		pc.Warm = pc.FirstHitRate != nil && *pc.FirstHitRate >= WarmShare
	}
	return pc
}

// delta is to − from and its hit rate; the rate is nil when nothing was
// looked up or a counter fell.
func delta(from, to PrefixCacheCounts) (PrefixCacheCounts, *float64) {
	d := PrefixCacheCounts{Queries: to.Queries - from.Queries, Hits: to.Hits - from.Hits}
	if d.Queries <= 0 || d.Hits < 0 {
		return d, nil
	}
	rate := d.Hits / d.Queries
	return d, &rate
}

// WritePrefixCacheWarning says on stderr that the run started warm: the
// share of the tokens looked up before the first answer that hit, and how
// to start cold. Nothing for a nil or cold account.
func WritePrefixCacheWarning(w io.Writer, pc *PrefixCache) {
	if pc == nil || !pc.Warm {
		return
	}
	how := "; --cold-prefix-cache empties it before the clock starts"
	if pc.Reset {
		how = " although it was reset: a warm-up or another client filled it again"
	}
	fmt.Fprintf(w, "stampede: warning: the server's prefix cache already held the run's prompts: %s of the prompt tokens looked up before the first answer were cached (%s)%s\n",
		percent(*pc.FirstHitRate), pc.HitsSeries, how)
}

// Line is the report's sentence about the run's prefix cache.
func (pc *PrefixCache) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Prefix cache (%s, %s): ", pc.Server, pc.HitsSeries)
	if pc.HitRate == nil {
		b.WriteString("the run's hit rate is unknown (no prompt token looked up, or the counters went back)")
	} else {
		fmt.Fprintf(&b, "%s of the %.0f prompt tokens the run looked up were cached", percent(*pc.HitRate), pc.Run.Queries)
	}
	switch {
	case pc.Warm:
		fmt.Fprintf(&b, "; warm at the start: %s were before the first answer", percent(*pc.FirstHitRate))
	case pc.FirstHitRate != nil:
		fmt.Fprintf(&b, "; cold at the start: %s were before the first answer", percent(*pc.FirstHitRate))
	}
	if pc.Reset {
		b.WriteString("; the cache was reset before the run")
	}
	b.WriteString(".")
	return b.String()
}

func percent(share float64) string { return fmt.Sprintf("%.1f %%", share*100) }
