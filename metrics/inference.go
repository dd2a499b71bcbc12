package metrics

import (
	"math"
	"slices"
)

// The statistics below say whether two runs differ (compare) and how far
// repeated runs can be trusted (--num-runs). They are the textbook forms
// scipy.stats implements, so its results can serve as test oracles.

// MannWhitney is the outcome of a two-sided Mann–Whitney U test.
type MannWhitney struct {
	// U is the statistic of the first sample: R1 - n1(n1+1)/2, where R1 is
	// the sum of its ranks in the pooled sample (ties take their mean rank).
	U float64
	// Z is the normal deviate of max(U, n1n2 - U), continuity-corrected.
	Z float64
	// P is the two-sided p-value of the normal approximation.
	P float64
}

// MannWhitneyU tests whether a and b come from the same distribution,
// with the large-sample normal approximation scipy.stats.mannwhitneyu
// uses (method="asymptotic", use_continuity=True, two-sided):
//
//	U1 = R1 − n1(n1+1)/2,  U = max(U1, n1·n2 − U1)
//	μ = n1·n2/2,  σ = √(n1·n2/12 · ((n+1) − Σ(t³−t)/(n(n−1))))
//	z = (U − μ − ½)/σ,  p = 2·(1 − Φ(z)) = erfc(z/√2), at most 1
//
// with n = n1 + n2 and t the size of each group of tied values. Per-request
// samples are large (hundreds to millions), where the approximation is
// accurate. With an empty sample, or every value tied (σ = 0), there is
// no evidence of a difference: P is 1.
func MannWhitneyU(a, b []float64) MannWhitney {
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		return MannWhitney{P: 1}
	}
	type obs struct {
		v     float64
		first bool
	}
	pooled := make([]obs, 0, n1+n2)
	for _, v := range a {
		pooled = append(pooled, obs{v, true})
	}
	for _, v := range b {
		pooled = append(pooled, obs{v, false})
	}
	slices.SortFunc(pooled, func(x, y obs) int {
		switch {
		case x.v < y.v:
			return -1
		case x.v > y.v:
			return 1
		}
		return 0
	})
	var r1, ties float64
	for i := 0; i < len(pooled); {
		j := i + 1
		for j < len(pooled) && pooled[j].v == pooled[i].v {
			j++
		}
		// Ranks i+1 .. j share their mean.
		rank := float64(i+1+j) / 2
		for k := i; k < j; k++ {
			if pooled[k].first {
				r1 += rank
			}
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	fn1, fn2 := float64(n1), float64(n2)
	n := fn1 + fn2
	u1 := r1 - fn1*(fn1+1)/2
	u := math.Max(u1, fn1*fn2-u1)
	sigma := math.Sqrt(fn1 * fn2 / 12 * ((n + 1) - ties/(n*(n-1))))
	if sigma == 0 || math.IsNaN(sigma) {
		return MannWhitney{U: u1, P: 1}
	}
	z := (u - fn1*fn2/2 - 0.5) / sigma
	return MannWhitney{U: u1, Z: z, P: math.Min(1, math.Erfc(z/math.Sqrt2))}
}

// Spread is what repeated measurements of one figure say about it.
type Spread struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	// StdDev is the sample standard deviation (n − 1 in the denominator).
	StdDev float64 `json:"stddev"`
	// CILow and CIHigh bound the 95 % confidence interval of the mean:
	// mean ± t(0.975, n−1)·s/√n (Student's t, as the runs are few).
	CILow  float64 `json:"ci95_low"`
	CIHigh float64 `json:"ci95_high"`
	// CV is the coefficient of variation s/mean; 0 when the mean is 0.
	CV float64 `json:"cv"`
}

// SpreadOf summarises repeated measurements. With fewer than two values
// the standard deviation, interval and CV cannot be estimated: they are
// NaN (the interval collapses to the mean for one value).
func SpreadOf(xs []float64) Spread {
	s := Spread{N: len(xs)}
	if len(xs) == 0 {
		nan := math.NaN()
		return Spread{Mean: nan, StdDev: nan, CILow: nan, CIHigh: nan, CV: nan}
	}
	for _, x := range xs {
		s.Mean += x
	}
	s.Mean /= float64(len(xs))
	if len(xs) < 2 {
		s.StdDev, s.CV = math.NaN(), math.NaN()
		s.CILow, s.CIHigh = s.Mean, s.Mean
		return s
	}
	var ss float64
	for _, x := range xs {
		d := x - s.Mean
		ss += d * d
	}
	s.StdDev = math.Sqrt(ss / float64(len(xs)-1))
	half := StudentTQuantile(0.975, float64(len(xs)-1)) * s.StdDev / math.Sqrt(float64(len(xs)))
	s.CILow, s.CIHigh = s.Mean-half, s.Mean+half
	if s.Mean != 0 {
		s.CV = s.StdDev / math.Abs(s.Mean)
	}
	return s
}

// WelchT is the two-sided p-value of Welch's t test between the means of
// two small samples (run-level figures of repeated runs):
//
//	t = (m1 − m2)/√(v1/n1 + v2/n2)
//	ν = (v1/n1 + v2/n2)² / ((v1/n1)²/(n1−1) + (v2/n2)²/(n2−1))
//	p = 2·(1 − F_ν(|t|))
//
// with v the sample variances. It needs two values on each side; otherwise,
// or when both samples are constant and equal, it returns NaN / 1.
func WelchT(a, b []float64) float64 {
	if len(a) < 2 || len(b) < 2 {
		return math.NaN()
	}
	sa, sb := SpreadOf(a), SpreadOf(b)
	va := sa.StdDev * sa.StdDev / float64(len(a))
	vb := sb.StdDev * sb.StdDev / float64(len(b))
	if va+vb == 0 {
		if sa.Mean == sb.Mean {
			return 1
		}
		return 0
	}
	t := math.Abs(sa.Mean-sb.Mean) / math.Sqrt(va+vb)
	df := (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
	return math.Min(1, 2*(1-StudentTCDF(t, df)))
}

// StudentTCDF is the distribution function of Student's t with df degrees
// of freedom: for t ≥ 0, 1 − ½·I_x(df/2, ½) with x = df/(df + t²), I the
// regularised incomplete beta function; symmetric for t < 0.
func StudentTCDF(t, df float64) float64 {
	x := df / (df + t*t)
	tail := 0.5 * regIncBeta(df/2, 0.5, x)
	if t >= 0 {
		return 1 - tail
	}
	return tail
}

// StudentTQuantile is the inverse of StudentTCDF for 0 < p < 1, found by
// bisection to full float64 precision.
func StudentTQuantile(p, df float64) float64 {
	if !(p > 0 && p < 1) || !(df > 0) {
		return math.NaN()
	}
	if p < 0.5 {
		return -StudentTQuantile(1-p, df)
	}
	lo, hi := 0.0, 1.0
	for StudentTCDF(hi, df) < p {
		lo, hi = hi, hi*2
		if math.IsInf(hi, 1) {
			return hi
		}
	}
	for range 200 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			break
		}
		if StudentTCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// regIncBeta is the regularised incomplete beta function I_x(a, b): the
// power-series prefactor x^a (1−x)^b / (a·B(a, b)) times a continued
// fraction evaluated by the modified Lentz method, on the side of the
// symmetry I_x(a,b) = 1 − I_{1−x}(b,a) where the fraction converges fast.
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	if x > (a+1)/(a+b+2) {
		return 1 - regIncBeta(b, a, 1-x)
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(a*math.Log(x)+b*math.Log1p(-x)-(la+lb-lab)) / a
	return front * betaFraction(a, b, x)
}

// betaFraction is the continued fraction 1/(1+ d1/(1+ d2/(1+ …))) of the
// incomplete beta function, with d_{2m+1} = −(a+m)(a+b+m)x/((a+2m)(a+2m+1))
// and d_{2m} = m(b−m)x/((a+2m−1)(a+2m)).
func betaFraction(a, b, x float64) float64 {
	const tiny = 1e-300
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 1000; m++ {
		fm := float64(m)
		for _, num := range [2]float64{
			fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm)),
			-(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1)),
		} {
			d = 1 + num*d
			if math.Abs(d) < tiny {
				d = tiny
			}
			c = 1 + num/c
			if math.Abs(c) < tiny {
				c = tiny
			}
			d = 1 / d
			h *= d * c
		}
		if math.Abs(d*c-1) < 1e-16 {
			break
		}
	}
	return h
}
