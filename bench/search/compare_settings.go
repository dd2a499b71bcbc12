package search

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/stampede-bench/stampede/bench/report"
)

// A run's settings: the keys of the result JSON that say how the run was
// set up rather than what it measured (the backend, the model, the number
// of prompts, the arrival rate and burstiness, the concurrency cap, the
// ramp-up). They are not statistics: one run each does not make a
// difference in them uncertain, and a run of 16 concurrent requests does
// not measure the same thing as one of 64. So compare reads them beside
// the fingerprint, as the setup of the run, never as a row of the table: a
// setting that differs is a difference of the setup, shown as
// "setting.KEY" with the fingerprint's, and it makes the pair unlike for
// like unless --vary names it (a sweep over --max-concurrency compares as
// --vary setting.max_concurrency).
//
// The label, the --metadata pairs and the tokenizer's name are names, not
// settings (the tokenizer's content is client.tokenizer_sha256), and the
// date always differs: none is compared.

// settingKeys are the result JSON's settings, in Python's order.
var settingKeys = []string{
	"backend", "model_id", "num_prompts", "request_rate", "burstiness", "max_concurrency",
	"ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps",
}

// settingPrefix is the prefix of a setting's key among the differences.
const settingPrefix = "setting."

// isSetting reports whether key is one of the result's settings.
func isSetting(key string) bool { return slices.Contains(settingKeys, key) }

// settingText is a setting's value as the differences show it: a string's
// text, else the value's JSON ("16", "null", "1.0").
func settingText(v json.RawMessage) string {
	var s string
	if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// loadSettings takes the side's settings from its first run and notes
// those its other runs hold otherwise.
func (s *CompareSide) loadSettings() {
	if len(s.runs) == 0 {
		return
	}
	s.fp.Settings = s.runs[0].settings
	for _, r := range s.runs[1:] {
		for _, d := range diffSettings(s.fp.Settings, r.settings) {
			k := d.Key[len(settingPrefix):]
			if !slices.Contains(s.fp.MixedSettings, k) {
				s.fp.MixedSettings = append(s.fp.MixedSettings, k)
			}
		}
	}
}

// diffSettings lists the settings that differ between a and b, as
// "setting.KEY", in settingKeys' order.
func diffSettings(a, b map[string]string) []report.FingerprintDiff {
	var out []report.FingerprintDiff
	for _, k := range settingKeys {
		va, okA := a[k]
		vb, okB := b[k]
		if va != vb || okA != okB {
			out = append(out, report.FingerprintDiff{Key: settingPrefix + k, A: va, B: vb, AHas: okA, BHas: okB})
		}
	}
	return out
}
