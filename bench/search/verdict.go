package search

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/metrics"
)

// How compare judges one row, on that row's own statistic:
//
//   - A statistic of a per-request family (TTFT, TPOT, ITL, E2EL: the mean,
//     median, std or a percentile of the successful requests' values) when
//     both sides carry the samples: a bootstrap confidence interval of the
//     statistic's difference, B − A, relative to A. Each replicate draws a
//     side's runs with replacement and, within each drawn run, its
//     requests with replacement, then computes the statistic on the pool;
//     so with repeated runs (--num-runs, comma-joined files) the spread
//     between runs widens the interval, and a single run's requests alone
//     cannot make a run-to-run wobble look real. The p99 row is judged on
//     the p99 and the median row on the median: a tail that moved while the
//     median stood still is caught on the tail's row only.
//   - Any other figure with at least two runs on both sides: Welch's
//     interval for the difference of the runs' means.
//   - Otherwise no interval: one run each says nothing of run-to-run spread.
//
// The verdict reads the interval against the smallest change worth
// calling (MinEffect, 2 % by default) and the direction the figure improves
// in (lower latency, higher throughput): "better" or "worse" when the
// interval excludes 0 and the change is at least MinEffect, "no change"
// when the whole interval lies within ±MinEffect, "can't tell" otherwise —
// with, where the runs' spread is known, how many runs a side would need
// for a change of that size to be called (two-sided level Alpha, power
// 0.8).

// bootstrapReplicates is how many replicates an interval is read from:
// enough for the 2.5th and 97.5th percentiles of the replicates to settle
// to about a tenth of the interval's width.
const bootstrapReplicates = 400

// maxBootstrapSamples bounds the requests (or token gaps) a side keeps for
// its interval; a side with more keeps an even random share of each run.
// The interval is then a little wider than it needs to be, never
// narrower, and a comparison of million-token ITL samples stays a second
// of work.
const maxBootstrapSamples = 50_000

// bootstrapSeed makes intervals, and so verdicts, the same on every
// compare of the same files.
const bootstrapSeed = 0x5354414d50454445

// statistic is what a result key measures of a per-request family.
type statistic struct {
	family string
	kind   statKind
	p      float64 // the percentile, for kindPercentile
}

type statKind uint8

const (
	kindMean statKind = iota
	kindMedian
	kindStd
	kindPercentile
)

// sections are the per-request families compare has samples of.
var sections = map[string]pyout.Section{"ttft": pyout.TTFT, "tpot": pyout.TPOT, "itl": pyout.ITL, "e2el": pyout.E2EL}

// statisticOf reads key as a statistic of a family: "p99_ttft_ms",
// "mean_itl_ms", "sample_median_e2el_ms". Keys that merely end like one
// ("probe_p99_e2el_ms") are not.
func statisticOf(key string) (statistic, bool) {
	for _, f := range sampleFamilies {
		sec := sections[f]
		if key == sampleMedianKey(f) {
			return statistic{family: f, kind: kindMedian}, true
		}
		switch key {
		case sec.Figure(pyout.StatMean).Key:
			return statistic{family: f, kind: kindMean}, true
		case sec.Figure(pyout.StatMedian).Key:
			return statistic{family: f, kind: kindMedian}, true
		case sec.Figure(pyout.StatStd).Key:
			return statistic{family: f, kind: kindStd}, true
		}
		if p, ok := sec.PercentileOfKey(key); ok {
			return statistic{family: f, kind: kindPercentile, p: p}, true
		}
	}
	return statistic{}, false
}

// directions are the figures of Python's result block that improve one
// way; every latency statistic improves downwards.
var directions = func() map[string]pyout.Direction {
	m := map[string]pyout.Direction{}
	for _, f := range []pyout.Figure{
		pyout.Completed, pyout.Failed, pyout.RequestThroughput, pyout.InputThroughput, pyout.RequestGoodput,
		pyout.OutputThroughput, pyout.PeakOutputThroughput, pyout.RTFx, pyout.TotalTokenThroughput,
		pyout.ProbeCompleted, pyout.ProbeFailed, pyout.ProbeMedianE2EL, pyout.ProbeP99E2EL, pyout.ProbeMaxE2EL,
		pyout.SpecAcceptanceRate, pyout.SpecAcceptanceLength, pyout.SpecAcceptedTokens,
		pyout.DiffusionCommittedThroughput, pyout.DiffusionStepsPerCanvas, pyout.DiffusionCommittedPerStep,
	} {
		if f.Key != "" {
			m[f.Key] = f.Better
		}
	}
	return m
}()

// directionOf is which way key improves.
func directionOf(key string) pyout.Direction {
	if d, ok := directions[key]; ok {
		return d
	}
	if _, ok := statisticOf(key); ok {
		return pyout.LowerIsBetter
	}
	if strings.HasSuffix(key, "_ms") {
		return pyout.LowerIsBetter
	}
	return pyout.Neutral
}

// pool is one side's samples of a family for the bootstrap: every value
// sorted once, and each run's values as positions in that order, so a
// replicate is a count per position and no replicate sorts.
type pool struct {
	sorted []float64
	runs   [][]int32
}

// newPool pools runs (each a run's values), keeping at most
// maxBootstrapSamples in all by an even random share of each run.
func newPool(runs [][]float64, rng *rand.Rand) *pool {
	total := 0
	for _, r := range runs {
		total += len(r)
	}
	keep := 1.0
	if total > maxBootstrapSamples {
		keep = float64(maxBootstrapSamples) / float64(total)
	}
	type tagged struct {
		v   float64
		run int32
	}
	var all []tagged
	for i, r := range runs {
		if keep < 1 {
			n := max(1, int(math.Round(keep*float64(len(r)))))
			r = slices.Clone(r)
			rng.Shuffle(len(r), func(a, b int) { r[a], r[b] = r[b], r[a] })
			r = r[:n]
		}
		for _, v := range r {
			all = append(all, tagged{v, int32(i)})
		}
	}
	slices.SortFunc(all, func(a, b tagged) int {
		if a.v < b.v {
			return -1
		} else if a.v > b.v {
			return 1
		}
		return 0
	})
	p := &pool{sorted: make([]float64, len(all)), runs: make([][]int32, len(runs))}
	for i, t := range all {
		p.sorted[i] = t.v
		p.runs[t.run] = append(p.runs[t.run], int32(i))
	}
	return p
}

// resample fills counts with one bootstrap replicate: runs drawn with
// replacement, then each drawn run's values with replacement.
func (p *pool) resample(rng *rand.Rand, counts []int32) {
	clear(counts)
	for range p.runs {
		run := p.runs[rng.IntN(len(p.runs))]
		for range run {
			counts[run[rng.IntN(len(run))]]++
		}
	}
}

// all is the pool as it is: every value once.
func (p *pool) all(counts []int32) {
	for i := range counts {
		counts[i] = 1
	}
}

// eval computes st on the multiset of sorted values with the given counts,
// as numpy does on the expanded list: the mean, the population standard
// deviation, and percentiles by linear interpolation between order
// statistics.
func eval(st statistic, sorted []float64, counts []int32) float64 {
	n := 0
	for _, c := range counts {
		n += int(c)
	}
	if n == 0 {
		return math.NaN()
	}
	switch st.kind {
	case kindMean, kindStd:
		var sum float64
		for i, c := range counts {
			sum += float64(c) * sorted[i]
		}
		mean := sum / float64(n)
		if st.kind == kindMean {
			return mean
		}
		var ss float64
		for i, c := range counts {
			d := sorted[i] - mean
			ss += float64(c) * d * d
		}
		return math.Sqrt(ss / float64(n))
	}
	p := 50.0
	if st.kind == kindPercentile {
		p = st.p
	}
	h := float64(n-1) * p / 100
	lo := int(math.Floor(h))
	lower, upper := orderStat(sorted, counts, lo), orderStat(sorted, counts, min(lo+1, n-1))
	return lower + (h-float64(lo))*(upper-lower)
}

// orderStat is the k-th smallest (from 0) of the multiset.
func orderStat(sorted []float64, counts []int32, k int) float64 {
	seen := 0
	for i, c := range counts {
		seen += int(c)
		if seen > k {
			return sorted[i]
		}
	}
	return sorted[len(sorted)-1]
}

// interval is a verdict's evidence: the relative change B − A over |A|
// (percent) with its confidence bounds, the method that gave them, and the
// spread between runs where the runs tell it.
type interval struct {
	method        string // "bootstrap" or "welch"
	changePct     float64
	lowPct        float64
	highPct       float64
	p             float64
	base          float64 // A's value of the statistic
	runSpread     float64 // standard deviation of the statistic between runs; NaN when unknown
	fewestRunsPer int     // the smaller side's run count
}

// bootstrapInterval is the interval of st between two sides' samples.
func bootstrapInterval(st statistic, a, b [][]float64, alpha float64) (interval, bool) {
	rng := rand.New(rand.NewPCG(bootstrapSeed, uint64(len(st.family))))
	pa, pb := newPool(a, rng), newPool(b, rng)
	if len(pa.sorted) == 0 || len(pb.sorted) == 0 {
		return interval{}, false
	}
	ca, cb := make([]int32, len(pa.sorted)), make([]int32, len(pb.sorted))
	pa.all(ca)
	pb.all(cb)
	baseA, baseB := eval(st, pa.sorted, ca), eval(st, pb.sorted, cb)
	if baseA == 0 || math.IsNaN(baseA) || math.IsNaN(baseB) {
		return interval{}, false
	}
	diffs := make([]float64, bootstrapReplicates)
	below, above := 0, 0
	for i := range diffs {
		pa.resample(rng, ca)
		pb.resample(rng, cb)
		d := 100 * (eval(st, pb.sorted, cb) - eval(st, pa.sorted, ca)) / math.Abs(baseA)
		diffs[i] = d
		if d <= 0 {
			below++
		}
		if d >= 0 {
			above++
		}
	}
	slices.Sort(diffs)
	iv := interval{
		method:    "bootstrap",
		changePct: 100 * (baseB - baseA) / math.Abs(baseA),
		lowPct:    quantileSorted(diffs, alpha/2),
		highPct:   quantileSorted(diffs, 1-alpha/2),
		p:         math.Min(1, 2*float64(max(1, min(below, above)))/float64(len(diffs))),
		base:      baseA,
		runSpread: runSpread(st, a, b),
	}
	iv.fewestRunsPer = min(len(a), len(b))
	return iv, true
}

// runSpread is the pooled standard deviation, between runs, of st computed
// on each run alone; NaN unless some side has two runs.
func runSpread(st statistic, sides ...[][]float64) float64 {
	var perSide [][]float64
	for _, runs := range sides {
		var vals []float64
		for _, r := range runs {
			if len(r) == 0 {
				continue
			}
			s := slices.Clone(r)
			slices.Sort(s)
			c := make([]int32, len(s))
			for i := range c {
				c[i] = 1
			}
			vals = append(vals, eval(st, s, c))
		}
		perSide = append(perSide, vals)
	}
	return pooledSD(perSide...)
}

// pooledSD is the pooled sample standard deviation of groups; NaN when no
// group has two values.
func pooledSD(groups ...[]float64) float64 {
	var ss float64
	df := 0
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		m := metrics.SpreadOf(g)
		ss += m.StdDev * m.StdDev * float64(len(g)-1)
		df += len(g) - 1
	}
	if df == 0 {
		return math.NaN()
	}
	return math.Sqrt(ss / float64(df))
}

// welchInterval is the interval of the difference of two sides' run means.
func welchInterval(a, b []float64, alpha float64) (interval, bool) {
	if len(a) < 2 || len(b) < 2 {
		return interval{}, false
	}
	sa, sb := metrics.SpreadOf(a), metrics.SpreadOf(b)
	if sa.Mean == 0 {
		return interval{}, false
	}
	va, vb := sa.StdDev*sa.StdDev/float64(len(a)), sb.StdDev*sb.StdDev/float64(len(b))
	d := sb.Mean - sa.Mean
	half := 0.0
	if va+vb > 0 {
		df := (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
		half = metrics.StudentTQuantile(1-alpha/2, df) * math.Sqrt(va+vb)
	}
	scale := 100 / math.Abs(sa.Mean)
	return interval{
		method: "welch", changePct: d * scale, lowPct: (d - half) * scale, highPct: (d + half) * scale,
		p: metrics.WelchT(a, b), base: sa.Mean, runSpread: pooledSD(a, b), fewestRunsPer: min(len(a), len(b)),
	}, true
}

// quantileSorted is the q-quantile of sorted values, interpolated.
// Not metrics.NearestRank: the bootstrap interval's bounds are
// percentiles of the resampled differences, estimates that need not be
// one replicate's value, where NearestRank keeps values a run measured.
func quantileSorted(s []float64, q float64) float64 {
	h := q * float64(len(s)-1)
	lo := int(math.Floor(h))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (h-float64(lo))*(s[hi]-s[lo])
}

// Verdicts, in the words a user acts on.
const (
	VerdictBetter   = "better"
	VerdictWorse    = "worse"
	VerdictChanged  = "changed" // a figure with no better direction
	VerdictSame     = "no change"
	VerdictCantTell = "can't tell"
)

// verdict reads an interval against the smallest change worth calling.
func verdict(iv interval, minEffectPct float64, dir pyout.Direction) string {
	excludesZero := iv.lowPct > 0 || iv.highPct < 0
	switch {
	case excludesZero && math.Abs(iv.changePct) >= minEffectPct:
		up := iv.changePct > 0
		switch {
		case dir == pyout.Neutral:
			return VerdictChanged
		case up == (dir == pyout.HigherIsBetter):
			return VerdictBetter
		}
		return VerdictWorse
	case iv.lowPct >= -minEffectPct && iv.highPct <= minEffectPct:
		return VerdictSame
	}
	return VerdictCantTell
}

// runsNeeded estimates how many runs each side needs for a change of the
// observed size (at least minEffectPct) to be called at level alpha with
// power 0.8, from the spread between runs; 0 when the spread is unknown.
//
//	n = 2·(z₁₋α/₂ + z₀.₈)²·σ²/δ²
func runsNeeded(iv interval, minEffectPct, alpha float64) int {
	if math.IsNaN(iv.runSpread) || iv.runSpread == 0 || iv.base == 0 {
		return 0
	}
	delta := math.Max(math.Abs(iv.changePct), minEffectPct) / 100 * math.Abs(iv.base)
	z := metrics.StudentTQuantile(1-alpha/2, 1e9) + metrics.StudentTQuantile(0.8, 1e9)
	n := int(math.Ceil(2 * z * z * iv.runSpread * iv.runSpread / (delta * delta)))
	return max(n, 2)
}

// fmtInterval prints an interval as "[+12.1, +21.8]".
func fmtInterval(lo, hi float64) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	sign := func(v float64) string {
		if v >= 0 {
			return "+" + f(v)
		}
		return f(v)
	}
	return "[" + sign(lo) + ", " + sign(hi) + "]"
}
