package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestPrefixCacheWarm: the run counts as started warm from WarmShare of
// the first lookups on, and only then does stderr get the warning; a
// counter that went back leaves the rate unknown.
func TestPrefixCacheWarm(t *testing.T) {
	before := PrefixCacheCounts{Queries: 1000, Hits: 100}
	after := PrefixCacheCounts{Queries: 2000, Hits: 300}
	for _, tt := range []struct {
		first PrefixCacheCounts
		warm  bool
	}{
		{PrefixCacheCounts{Queries: 1100, Hits: 149}, false},
		{PrefixCacheCounts{Queries: 1100, Hits: 150}, true},
		{PrefixCacheCounts{Queries: 1000, Hits: 100}, false}, // nothing looked up yet
	} {
		pc := NewPrefixCache("vLLM", "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", false, before, &tt.first, after)
		if pc.Warm != tt.warm || pc.HitRate == nil || *pc.HitRate != 0.2 {
			t.Errorf("first %+v: warm %v rate %v, want warm %v and 0.2", tt.first, pc.Warm, pc.HitRate, tt.warm)
		}
		var stderr bytes.Buffer
		WritePrefixCacheWarning(&stderr, pc)
		if got := strings.Contains(stderr.String(), "already held the run's prompts: 50.0 %"); got != tt.warm {
			t.Errorf("first %+v: warning %q", tt.first, stderr.String())
		}
		if !strings.Contains(pc.Line(), "20.0 % of the 1000 prompt tokens the run looked up were cached") {
			t.Errorf("line %q", pc.Line())
		}
	}
	restarted := NewPrefixCache("SGLang", "sglang:cached_tokens_total", "sglang:prompt_tokens_total", true, after, nil, before)
	if restarted.HitRate != nil || restarted.Warm || !strings.Contains(restarted.Line(), "unknown") ||
		!strings.Contains(restarted.Line(), "reset before the run") {
		t.Errorf("counters that went back: %+v, line %q", restarted, restarted.Line())
	}
	var stderr bytes.Buffer
	WritePrefixCacheWarning(&stderr, nil)
	if stderr.Len() != 0 {
		t.Errorf("a warning without an account: %q", stderr.String())
	}
}
