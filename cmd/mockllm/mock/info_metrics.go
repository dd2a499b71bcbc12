package mock

import (
	"strconv"
	"strings"
)

// appendInfoMetrics appends the *_info gauges a client reads for a
// fingerprint of the server (value 1, the facts in the labels): vLLM's
// vllm:cache_config_info with the mock's prefix cache, and mockllm's own
// mockllm:config_info with the settings that shape its timing and faults,
// so that two runs against differently configured mocks do not pass for
// like for like.
func (s *Server) appendInfoMetrics(b []byte, labels string) []byte {
	c := &s.cfg
	info := func(name, help string, pairs ...string) []byte {
		var l strings.Builder
		l.WriteString(labels)
		for i := 0; i+1 < len(pairs); i += 2 {
			l.WriteString("," + pairs[i] + `="` + escapeLabel(pairs[i+1]) + `"`)
		}
		b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" gauge\n"...)
		return sample(b, name, l.String(), 1)
	}
	caching := "False"
	if c.PrefixCache != PrefixCacheOff {
		caching = "True"
	}
	b = info("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
		"block_size", "16", "enable_prefix_caching", caching,
		"prefix_cache_tokens", strconv.Itoa(c.PrefixCacheTokens), "gpu_memory_utilization", "0.9")
	faults := make([]string, len(c.Faults))
	for i, f := range c.Faults {
		faults[i] = f.String()
	}
	return info("mockllm:config_info", "The mock server's timing and fault settings",
		"version", c.Version, "mode", c.Mode.String(),
		"ttft", c.TTFT.String(), "itl", c.ITL.String(), "jitter", c.Jitter.String(),
		"prefill_per_token", c.PrefillPerToken.String(), "max_num_seqs", strconv.Itoa(c.MaxNumSeqs),
		"prefix_cache", c.PrefixCache, "tokens_per_chunk", strconv.Itoa(c.TokensPerChunk),
		"seed", strconv.FormatUint(c.Seed, 10), "faults", strings.Join(faults, ";"))
}
