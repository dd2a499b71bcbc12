package cli

import (
	"strconv"

	"github.com/stampede-bench/stampede/datasets"
)

// What stampede can run today. Everything `vllm bench serve` accepts
// parses; a run that would need something listed here as not built stops
// with a usage error naming the flag and value, instead of measuring
// something other than what Python would.

// DatasetBuilt reports whether stampede implements --dataset-name name.
func DatasetBuilt(name string) bool {
	d := datasets.Lookup(name)
	return d != nil && d.Built()
}

// unbuiltFlag is a flag whose effect is not built; value is the text
// naming the flag in the message ("" when unused).
type unbuiltFlag struct {
	flag  string
	value func(c *Config) (text string, used bool)
}

func boolFlag(get func(c *Config) bool) func(c *Config) (string, bool) {
	return func(c *Config) (string, bool) { return "", get(c) }
}

// unbuiltFlags are the flags that change a run in a way stampede does not
// implement yet. Flags that change nothing here (--use-beam-search, which
// changes nothing in Python either; --trust-remote-code, as stampede runs
// no repository code) are accepted and stored; README's "Not supported
// yet" names them, and TestFlagAudit keeps that list whole.
var unbuiltFlags = []unbuiltFlag{
	{"--tokenizer-mode", tokenizerModeUnbuilt},
	// custom_image inlines its images only with this flag; Python re-encodes
	// each through PIL, whose PNG bytes stampede cannot reproduce.
	{"--custom-ensure-client-side-data", boolFlag(func(c *Config) bool {
		return c.CustomEnsureClientSideData && c.DatasetName == "custom_image"
	})},
}

// checkSupported refuses runs that need something not built yet.
func checkSupported(c *Config) error {
	if c.backend == nil {
		return UsageErrorf("--backend %s is not supported yet", c.Backend)
	}
	if !DatasetBuilt(c.DatasetName) {
		return UsageErrorf("--dataset-name %s is not supported yet", c.DatasetName)
	}
	for _, f := range unbuiltFlags {
		if text, used := f.value(c); used {
			if text == "" {
				return UsageErrorf("%s is not supported yet", f.flag)
			}
			return UsageErrorf("%s %s is not supported yet", f.flag, text)
		}
	}
	if c.MaxConnectionsPerWorker != nil && *c.MaxConnectionsPerWorker < 1 {
		// The fork asserts at least one worker; K < 1 cannot give that.
		return UsageErrorf("argument --max-connections-per-worker: must be at least 1, got %s",
			strconv.Itoa(*c.MaxConnectionsPerWorker))
	}
	return nil
}

// RegisteredTokenizerModes are the other modes of vLLM's tokenizer
// registry: each loads a tokenizer class of its own.
var RegisteredTokenizerModes = []string{"deepseek_v32", "deepseek_v4", "fastokens", "grok2", "kimi_audio", "qwen_vl"}

// tokenizerModeUnbuilt is --tokenizer-mode's entry in unbuiltFlags: a
// registered mode stampede does not implement, when a tokenizer is loaded.
func tokenizerModeUnbuilt(c *Config) (string, bool) {
	if c.SkipTokenizerInit || !contains(RegisteredTokenizerModes, c.TokenizerMode) {
		return "", false
	}
	return c.TokenizerMode, true
}
