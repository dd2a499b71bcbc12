package search

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/stampede-bench/stampede/bench/report"
)

// Like for like: before any number, compare checks the sides' settings
// (compare_settings.go) and fingerprints (the sidecar's "fingerprint",
// report.Fingerprint) and lists every one that differs from the first
// side's: the concurrency, rate and prompts, the server's version, model,
// context length, cache settings, stampede's build, the machine, the
// dataset's and the tokenizer's hashes. A difference the user
// named with --vary (a key, or a prefix of keys such as "server.version"
// or "server.info") is the change under test; any other makes the pair
// "unlike for like". A side whose files have no sidecar (vLLM's own tool
// wrote them) has no fingerprint, and compare says the check could not be
// made.

// SideFingerprint is one side's fingerprint, as compare found it.
type SideFingerprint struct {
	// Fingerprint is the side's first file's; nil when a file of the
	// side has none.
	Fingerprint *report.Fingerprint `json:"fingerprint"`
	// Missing names the side's files without one: no sidecar (vLLM's own
	// tool), or a sidecar older than fingerprints.
	Missing []string `json:"missing,omitempty"`
	// Mixed is set when the side's runs have fingerprints that differ.
	Mixed bool `json:"mixed,omitempty"`
	// Settings are the side's first run's settings from its result JSON
	// (compare_settings.go), which every file has, sidecar or not;
	// MixedSettings those its runs hold otherwise.
	Settings      map[string]string `json:"settings"`
	MixedSettings []string          `json:"mixed_settings,omitempty"`
}

// FingerprintCheck is one side's fingerprint and settings against the
// first side's.
type FingerprintCheck struct {
	// Checked is false when either side has no fingerprint.
	Checked bool `json:"checked"`
	// Diffs are the settings that differ ("setting.KEY"), then the
	// fingerprint's facts ("server.KEY", "client.KEY").
	Diffs []report.FingerprintDiff `json:"differences"`
	// Unnamed are the differing keys --vary did not name.
	Unnamed []string `json:"unnamed"`
	// LikeForLike is a checked fingerprint with no unnamed difference.
	LikeForLike bool `json:"like_for_like"`
}

// loadFingerprint adds the fingerprint of the result file path to the side.
func (s *CompareSide) loadFingerprint(path string) error {
	fp, _, exists, err := report.ReadSidecarHead(path)
	if err != nil {
		return err
	}
	if !exists || fp == nil {
		s.fp.Missing = append(s.fp.Missing, path)
		s.fp.Fingerprint = nil
		return nil
	}
	if len(s.fp.Missing) > 0 {
		return nil
	}
	if s.fp.Fingerprint == nil {
		s.fp.Fingerprint = fp
		return nil
	}
	s.fp.Mixed = s.fp.Mixed || len(report.DiffFingerprints(s.fp.Fingerprint, fp)) > 0
	return nil
}

// checkFingerprint is side b's settings and fingerprint against a's, vary
// naming the differences under test. The settings are checked without a
// fingerprint too: every result JSON holds them.
func checkFingerprint(a, b *SideFingerprint, vary []string) FingerprintCheck {
	c := FingerprintCheck{Diffs: diffSettings(a.Settings, b.Settings), Unnamed: []string{}}
	c.Checked = a.Fingerprint != nil && b.Fingerprint != nil
	if c.Checked {
		c.Diffs = append(c.Diffs, report.DiffFingerprints(a.Fingerprint, b.Fingerprint)...)
	}
	if c.Diffs == nil {
		c.Diffs = []report.FingerprintDiff{}
	}
	for _, d := range c.Diffs {
		if !named(d.Key, vary) {
			c.Unnamed = append(c.Unnamed, d.Key)
		}
	}
	c.LikeForLike = c.Checked && len(c.Unnamed) == 0
	return c
}

// named reports whether --vary names key: the key itself, or a prefix of
// it ending at a dot.
func named(key string, vary []string) bool {
	for _, v := range vary {
		v = strings.TrimSuffix(v, ".")
		if key == v || strings.HasPrefix(key, v+".") {
			return true
		}
	}
	return false
}

// writeFingerprints prints the like-for-like check of each side against
// the first, before the table.
func (c *Comparison) writeFingerprints(bw *bufio.Writer) {
	for i, chk := range c.Fingerprints {
		a, b := &c.Sides[0], &c.Sides[i+1]
		pair := fmt.Sprintf("A vs %c", 'B'+rune(i%25))
		if chk.Checked && len(chk.Diffs) == 0 {
			fmt.Fprintf(bw, "%s: fingerprints alike (server, client, data), settings alike\n", pair)
		}
		for _, d := range chk.Diffs {
			mark := ""
			if !named(d.Key, c.Vary) {
				mark = "  (not named by --vary)"
			}
			fmt.Fprintf(bw, "%s: %s: %s → %s%s\n", pair, d.Key, factOrNone(d.A, d.AHas), factOrNone(d.B, d.BHas), mark)
		}
		if !chk.Checked {
			var missing []string
			for _, s := range []*SideFingerprint{a, b} {
				missing = append(missing, s.Missing...)
			}
			fmt.Fprintf(bw, "%s: no fingerprint in %s (no stampede sidecar: vLLM's own tool, or an older stampede): "+
				"like for like cannot be checked beyond the settings\n", pair, strings.Join(missing, ", "))
		}
		if len(chk.Unnamed) > 0 {
			fmt.Fprintf(bw, "%s: unlike for like: %s differ%s; name the change under test with --vary KEY\n",
				pair, strings.Join(chk.Unnamed, ", "), plural1(len(chk.Unnamed)))
		}
	}
	for i, s := range c.Sides {
		if s.Mixed {
			fmt.Fprintf(bw, "%c: its runs' fingerprints differ from one another\n", 'A'+rune(i%26))
		}
		if len(s.MixedSettings) > 0 {
			fmt.Fprintf(bw, "%c: its runs' settings differ from one another (%s)\n", 'A'+rune(i%26), strings.Join(s.MixedSettings, ", "))
		}
	}
}

// plural1 is the verb's "s" for one subject.
func plural1(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

func factOrNone(v string, has bool) string {
	if !has {
		return "(none)"
	}
	return fmt.Sprintf("%q", v)
}
