package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/pyout/pyouttest"
	"github.com/stampede-bench/stampede/metrics"
)

// compareGolden checks data against testdata/<dir>/<name>, or rewrites
// the file with -update.
func compareGolden(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	pyouttest.CompareGolden(t, filepath.Join("testdata", dir, name), data, *update)
}

func TestGoldenTrimmed(t *testing.T) {
	tests := []struct {
		name             string
		warmup, cooldown float64
		pooling          bool
		metrics          []string
		percentiles      []float64
	}{
		// The fork README's own command selects "itl,tps,ttft,e2el" and
		// five percentiles; only ITL belongs to the trimmed block.
		{"readme", 0.3, 0.5, false, []string{"itl", "tps", "ttft", "e2el"}, []float64{10, 25, 50, 75, 90}},
		{"cooldown_only", 0, 1.25, false, []string{"ttft", "tpot", "itl"}, []float64{99, 99.9}},
		{"no_itl_section", 1, 0, false, []string{"ttft", "e2el"}, []float64{99}},
		{"pooling", 0.25, 0.25, true, []string{"e2el"}, []float64{99}},
		// A window between the tokens: no request counts, so no tip.
		{"empty_window", 0.56, 0.78, false, []string{"itl"}, []float64{99}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := metrics.ComputeTrimmed(trimmedGoldenRun(), metrics.TrimOptions{
				WarmupS: tc.warmup, CooldownS: tc.cooldown, Percentiles: tc.percentiles,
			})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := WriteTrimmed(&out, tr, tc.pooling, &pyout.RunSettings{PercentileMetrics: tc.metrics}); err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
				if strings.HasPrefix(line, "tip:") || line == TrimmedTitle {
					continue
				}
				if n := len([]rune(line)); n < pyout.BlockWidth {
					t.Errorf("line %q is %d characters, narrower than the block", line, n)
				}
			}
			compareGolden(t, "trim", tc.name+".txt", out.Bytes())
		})
	}
}

// trimmedGoldenRun is the report golden run, whose every request keeps
// its gaps in ITLNs, as a trimmed run keeps them.
func trimmedGoldenRun() *metrics.RunData { return goldenRun() }

// TestGoldenTrimmedMatchesPythonReference runs testdata/trim/pyref.py, an
// independent Python transcription of the fork's trimming with Python's
// own str.format, against the golden files.
func TestGoldenTrimmedMatchesPythonReference(t *testing.T) {
	pyouttest.RunPyRef(t, filepath.Join("testdata", "trim"))
}
