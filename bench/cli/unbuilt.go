package cli

import (
	"strconv"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/internal/py"
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
	value func(c *draft) (text string, used bool)
}

func boolFlag(get func(c *draft) bool) func(c *draft) (string, bool) {
	return func(c *draft) (string, bool) { return "", get(c) }
}

// unbuiltFlags are the flags that change a run in a way stampede does not
// implement yet. Flags that change nothing here (--use-beam-search, which
// changes nothing in Python either; --trust-remote-code, as stampede runs
// no repository code) are accepted and stored; docs/cli.md's "Not supported
// yet" names them, and TestFlagAudit keeps that list whole.
var unbuiltFlags = []unbuiltFlag{
	{"--tokenizer-mode", tokenizerModeUnbuilt},
	// custom_image inlines its images only with this flag; Python re-encodes
	// each through PIL, whose PNG bytes stampede cannot reproduce.
	{"--custom-ensure-client-side-data", boolFlag(func(c *draft) bool {
		return c.CustomEnsureClientSideData && c.DatasetName == "custom_image"
	})},
}

// checkSupported refuses runs that need something not built yet.
func checkSupported(c *draft) error {
	if c.backend == nil {
		return py.UsageErrorf("--backend %s is not supported yet", c.Backend)
	}
	if !DatasetBuilt(c.DatasetName) {
		return py.UsageErrorf("--dataset-name %s is not supported yet", c.DatasetName)
	}
	for _, f := range unbuiltFlags {
		if text, used := f.value(c); used {
			if text == "" {
				return py.UsageErrorf("%s is not supported yet", f.flag)
			}
			return py.UsageErrorf("%s %s is not supported yet", f.flag, text)
		}
	}
	if c.MaxConnectionsPerWorker != nil && *c.MaxConnectionsPerWorker < 1 {
		// The fork asserts at least one worker; K < 1 cannot give that.
		return py.UsageErrorf("argument --max-connections-per-worker: must be at least 1, got %s",
			strconv.Itoa(*c.MaxConnectionsPerWorker))
	}
	return nil
}

// tokenizerModeUnbuilt is --tokenizer-mode's entry in unbuiltFlags: a
// registered mode stampede does not implement, when a tokenizer is loaded.
func tokenizerModeUnbuilt(c *draft) (string, bool) {
	if c.SkipTokenizerInit || !contains(plan.RegisteredTokenizerModes, c.TokenizerMode) {
		return "", false
	}
	return c.TokenizerMode, true
}
