package search_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/bench/search"
)

// writeRun writes a result JSON of one run whose requests had the given
// TTFTs (ms), with the TTFT statistics Python would print.
func writeRun(t *testing.T, dir, name string, ttftMs []float64) string {
	t.Helper()
	s := slices.Clone(ttftMs)
	slices.Sort(s)
	pct := func(p float64) float64 {
		h := p / 100 * float64(len(s)-1)
		lo := int(math.Floor(h))
		hi := min(lo+1, len(s)-1)
		return s[lo] + (h-float64(lo))*(s[hi]-s[lo])
	}
	var sum float64
	for _, v := range s {
		sum += v
	}
	res := map[string]any{
		"completed": len(s), "mean_ttft_ms": sum / float64(len(s)), "median_ttft_ms": pct(50), "p99_ttft_ms": pct(99),
	}
	ttfts := make([]float64, len(ttftMs))
	latencies := make([]float64, len(ttftMs))
	for i, v := range ttftMs {
		ttfts[i] = v / 1000
		latencies[i] = v/1000 + 0.5
	}
	res["ttfts"], res["latencies"] = ttfts, latencies
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o666); err != nil {
		t.Fatal(err)
	}
	return path
}

// lognormal draws n TTFTs around 30 ms.
func lognormal(r *rand.Rand, n int, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = scale * 30 * math.Exp(0.3*r.NormFloat64())
	}
	return out
}

func verdictOf(t *testing.T, c *search.Comparison, metric string) search.CompareCell {
	t.Helper()
	return benchtest.CompareRow(t, c, metric).Versus[0]
}

func TestVerdictSameDistributionIsNoChange(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	a := writeRun(t, dir, "a.json", lognormal(r, 20000, 1))
	b := writeRun(t, dir, "b.json", lognormal(r, 20000, 1))
	c := search.Compare(benchtest.CompareSides(t, a, b), search.CompareOptions{})
	for _, m := range []string{"mean_ttft_ms", "median_ttft_ms"} {
		if cell := verdictOf(t, c, m); cell.Verdict != search.VerdictSame || cell.Test != "bootstrap" {
			t.Errorf("%s: %+v, want no change by bootstrap", m, cell)
		}
	}
}

// A tail that moves while the median stands still is caught on the tail's
// row: 3 % of the requests held back 300 ms.
func TestVerdictTailOnlyRegression(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	base := lognormal(r, 5000, 1)
	slow := lognormal(r, 5000, 1)
	for i := range slow {
		if i%33 == 0 {
			slow[i] += 300
		}
	}
	c := search.Compare(benchtest.CompareSides(t, writeRun(t, dir, "a.json", base), writeRun(t, dir, "b.json", slow)), search.CompareOptions{})
	if cell := verdictOf(t, c, "p99_ttft_ms"); cell.Verdict != search.VerdictWorse || *cell.CILowPct <= 0 {
		t.Errorf("p99: %+v, want worse with an interval above 0", cell)
	}
	// The median moves only by the 3 % of requests that left the body.
	if cell := verdictOf(t, c, "median_ttft_ms"); math.Abs(*cell.DeltaPct) > 5 {
		t.Errorf("median: %s %+.1f%%, want a small change", cell.Verdict, *cell.DeltaPct)
	}
}

// Runs of one setting that differ from run to run (a busy host) are not a
// change, however many requests each run has; the pooled requests alone
// would call it. The spread between runs gives the runs a side would need.
func TestVerdictBetweenRunSpreadCounts(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 6))
	side := func(name string, scales ...float64) string {
		var paths []string
		for k, s := range scales {
			paths = append(paths, writeRun(t, dir, name+string(rune('0'+k))+".json", lognormal(r, 4000, s)))
		}
		return strings.Join(paths, ",")
	}
	a := side("a", 0.95, 1.06, 0.99)
	b := side("b", 1.03, 0.94, 1.08)
	c := search.Compare(benchtest.CompareSides(t, a, b), search.CompareOptions{})
	cell := verdictOf(t, c, "median_ttft_ms")
	if cell.Verdict != search.VerdictCantTell || cell.RunsNeeded < 3 {
		t.Errorf("median over 3 wobbling runs a side: %+v, want can't tell with the runs needed", cell)
	}
	var out strings.Builder
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "can't tell (need ~") {
		t.Errorf("table does not say how many runs are needed:\n%s", out.String())
	}
}

// A throughput that rose is better; a latency that rose is worse.
func TestVerdictDirection(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, thr float64) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(`{"request_throughput": `+jsonNum(thr)+`, "probe_p99_e2el_ms": `+jsonNum(100/thr)+`}`), 0o666)
		return p
	}
	a := write("a1.json", 10) + "," + write("a2.json", 10.1) + "," + write("a3.json", 9.9)
	b := write("b1.json", 12) + "," + write("b2.json", 12.1) + "," + write("b3.json", 11.9)
	c := search.Compare(benchtest.CompareSides(t, a, b), search.CompareOptions{})
	if cell := verdictOf(t, c, "request_throughput"); cell.Verdict != search.VerdictBetter || cell.Test != "welch" {
		t.Errorf("throughput 10 → 12: %+v, want better", cell)
	}
	if cell := verdictOf(t, c, "probe_p99_e2el_ms"); cell.Verdict != search.VerdictBetter {
		t.Errorf("probe p99 10 → 8.3 ms: %+v, want better (lower)", cell)
	}
}

func jsonNum(v float64) string {
	b, _ := json.Marshal(v)
	return string(b)
}
