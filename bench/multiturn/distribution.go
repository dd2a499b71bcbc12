package multiturn

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Distribution draws whole numbers (token and turn counts) or seconds
// (think time). The kinds and fields are those of vLLM's multi-turn
// generator config:
//
//	{"distribution": "constant", "value": V}
//	{"distribution": "uniform", "min": A, "max": B}       integers when A and B are, else reals
//	{"distribution": "zipf", "alpha": S, "max": M}        P(k) ∝ k^-S, k ≥ 1, S > 1; capped at M
//	{"distribution": "poisson", "alpha": L, "max": M}     mean L; capped at M
//	{"distribution": "lognormal", "average": A, "median_ratio": R, "max": M}
//	{"distribution": "lognormal", "mean": MU, "sigma": SIGMA, "max": M}
//	{"distribution": "exponential", "mean": A}           (think time)
//
// A lognormal given by its average has median A·R (R in (0, 1), default
// 0.85): with X = exp(Z), Z ~ N(mu, sigma²), mean(X) = exp(mu + sigma²/2)
// and median(X) = exp(mu), so median/mean = exp(-sigma²/2), which gives
// sigma = sqrt(2·ln(1/R)) and mu = ln(A·R). As in vLLM, a batch drawn
// from it is then scaled so that its own mean is A. Draws use Go's PCG
// generator, not numpy's: a seed gives the same conversations every run,
// not the ones vLLM's tool would generate.
type Distribution struct {
	Kind            string
	Value, Min, Max float64
	Integer         bool // uniform: draw integers in [Min, Max]
	Alpha           float64
	Mu, Sigma       float64
	Average         float64 // lognormal by average; exponential's mean
	HasMax          bool
	field           string // where it came from, for errors
	// zipf is the generator drawing from zipfOf, made on first use.
	zipf   *rand.Zipf
	zipfOf *rand.Rand
}

// distributionJSON is the config form.
type distributionJSON struct {
	Distribution *string      `json:"distribution"`
	Value        *float64     `json:"value"`
	Min          *json.Number `json:"min"`
	Max          *json.Number `json:"max"`
	Alpha        *float64     `json:"alpha"`
	Mean         *float64     `json:"mean"`
	Sigma        *float64     `json:"sigma"`
	Average      *float64     `json:"average"`
	MedianRatio  *float64     `json:"median_ratio"`
}

// parseDistribution reads one distribution object; field names it in
// errors (e.g. "prompt_input.num_tokens").
func parseDistribution(raw json.RawMessage, field string) (*Distribution, error) {
	var j distributionJSON
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("%s: want an object such as {\"distribution\": \"uniform\", \"min\": 1, \"max\": 10}: %v", field, err)
	}
	if j.Distribution == nil {
		return nil, fmt.Errorf("%s: missing field \"distribution\" (constant, uniform, zipf, poisson, lognormal)", field)
	}
	d := &Distribution{Kind: *j.Distribution, field: field}
	need := func(name string, v *float64) (float64, error) {
		if v == nil {
			return 0, fmt.Errorf("%s: %s distribution needs field %q", field, d.Kind, name)
		}
		return *v, nil
	}
	num := func(name string, n *json.Number) (float64, bool, error) {
		if n == nil {
			return 0, false, nil
		}
		v, err := n.Float64()
		if err != nil {
			return 0, false, fmt.Errorf("%s.%s %q: want a number", field, name, n.String())
		}
		_, ierr := strconv.ParseInt(n.String(), 10, 64)
		return v, ierr == nil, nil
	}
	maxV, maxInt, err := num("max", j.Max)
	if err != nil {
		return nil, err
	}
	d.Max, d.HasMax = maxV, j.Max != nil
	if d.HasMax && d.Max <= 0 && d.Kind != "uniform" {
		return nil, fmt.Errorf("%s.max %v: want a positive cap", field, d.Max)
	}
	switch d.Kind {
	case "constant":
		if d.Value, err = need("value", j.Value); err != nil {
			return nil, err
		}
		if d.Value < 0 {
			return nil, fmt.Errorf("%s.value %v: want 0 or more", field, d.Value)
		}
	case "uniform":
		minV, minInt, err := num("min", j.Min)
		if err != nil {
			return nil, err
		}
		if j.Min == nil || j.Max == nil {
			return nil, fmt.Errorf("%s: uniform distribution needs fields \"min\" and \"max\"", field)
		}
		if minV <= 0 || minV > maxV {
			return nil, fmt.Errorf("%s: uniform min %v, max %v: want 0 < min <= max", field, minV, maxV)
		}
		d.Min, d.Integer = minV, minInt && maxInt
	case "zipf":
		if d.Alpha, err = need("alpha", j.Alpha); err != nil {
			return nil, err
		}
		if d.Alpha <= 1 {
			return nil, fmt.Errorf("%s.alpha %v: zipf needs alpha > 1", field, d.Alpha)
		}
	case "poisson":
		if d.Alpha, err = need("alpha", j.Alpha); err != nil {
			return nil, err
		}
		if d.Alpha < 0 {
			return nil, fmt.Errorf("%s.alpha %v: poisson needs a mean of 0 or more", field, d.Alpha)
		}
	case "lognormal":
		if j.Average != nil {
			if j.Mean != nil || j.Sigma != nil {
				return nil, fmt.Errorf("%s: lognormal takes \"average\" (and \"median_ratio\") or \"mean\" and \"sigma\", not both", field)
			}
			d.Average = *j.Average
			if d.Average < 1 {
				return nil, fmt.Errorf("%s.average %v: want 1 or more", field, d.Average)
			}
			ratio := 0.85
			if j.MedianRatio != nil {
				ratio = *j.MedianRatio
			}
			if ratio <= 0 || ratio >= 1 {
				return nil, fmt.Errorf("%s.median_ratio %v: want a value in (0, 1)", field, ratio)
			}
			d.Mu, d.Sigma = math.Log(d.Average*ratio), math.Sqrt(2*math.Log(1/ratio))
			break
		}
		if j.Mean == nil || j.Sigma == nil {
			return nil, fmt.Errorf("%s: lognormal distribution needs \"average\", or both \"mean\" and \"sigma\"", field)
		}
		d.Mu, d.Sigma = *j.Mean, *j.Sigma
		if d.Mu <= 0 || d.Sigma < 0 {
			return nil, fmt.Errorf("%s: lognormal mean %v, sigma %v: want mean > 0 and sigma >= 0", field, d.Mu, d.Sigma)
		}
	case "exponential":
		if d.Average, err = need("mean", j.Mean); err != nil {
			return nil, err
		}
		if d.Average < 0 {
			return nil, fmt.Errorf("%s.mean %v: want 0 or more", field, d.Average)
		}
	default:
		return nil, fmt.Errorf("%s: distribution %q: want constant, uniform, zipf, poisson, lognormal or exponential", field, d.Kind)
	}
	return d, nil
}

// Sample draws n values from r.
func (d *Distribution) Sample(r *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = d.draw(r)
	}
	if d.Kind == "lognormal" && d.Average > 0 && n > 0 {
		sum := 0.0
		for _, v := range out {
			sum += v
		}
		if sum > 0 {
			scale := d.Average / (sum / float64(n))
			for i := range out {
				out[i] *= scale
			}
		}
	}
	for i := range out {
		if d.HasMax && d.Kind != "uniform" {
			out[i] = min(out[i], d.Max)
		}
		if d.Kind == "lognormal" {
			out[i] = math.Round(out[i])
		}
	}
	return out
}

// Ints draws n whole numbers (rounded).
func (d *Distribution) Ints(r *rand.Rand, n int) []int {
	vs := d.Sample(r, n)
	out := make([]int, n)
	for i, v := range vs {
		out[i] = int(math.Round(v))
	}
	return out
}

func (d *Distribution) draw(r *rand.Rand) float64 {
	switch d.Kind {
	case "constant":
		return d.Value
	case "uniform":
		if d.Integer {
			return d.Min + float64(r.IntN(int(d.Max-d.Min)+1))
		}
		return d.Min + r.Float64()*(d.Max-d.Min)
	case "zipf":
		if d.zipfOf != r {
			// rand.Zipf draws k in [0, imax] with P(k) ∝ (1+k)^-alpha; k+1
			// is then numpy's zipf(alpha). Capped draws need no tail past
			// the cap.
			imax := uint64(math.MaxInt64)
			if d.HasMax {
				imax = uint64(d.Max)
			}
			d.zipf, d.zipfOf = rand.NewZipf(r, d.Alpha, 1, imax), r
		}
		return float64(d.zipf.Uint64() + 1)
	case "poisson":
		return float64(poisson(r, d.Alpha))
	case "lognormal":
		return math.Exp(d.Mu + d.Sigma*r.NormFloat64())
	case "exponential":
		return d.Average * r.ExpFloat64()
	}
	return 0
}

// poisson draws from Poisson(mean) by Knuth's product of uniforms, in
// slices of mean at most 500 (a sum of Poissons is Poisson), so that
// exp(-mean) never underflows.
func poisson(r *rand.Rand, mean float64) int {
	n := 0
	for mean > 0 {
		part := min(mean, 500)
		mean -= part
		limit, p := math.Exp(-part), 1.0
		for {
			p *= r.Float64()
			if p <= limit {
				break
			}
			n++
		}
	}
	return n
}

// String is the distribution's config form, for the printed parameters.
func (d *Distribution) String() string {
	switch d.Kind {
	case "constant":
		return fmt.Sprintf("constant(%g)", d.Value)
	case "uniform":
		return fmt.Sprintf("uniform(%g, %g)", d.Min, d.Max)
	case "zipf":
		return fmt.Sprintf("zipf(alpha=%g, max=%g)", d.Alpha, d.Max)
	case "poisson":
		return fmt.Sprintf("poisson(%g, max=%g)", d.Alpha, d.Max)
	case "lognormal":
		if d.Average > 0 {
			return fmt.Sprintf("lognormal(average=%g, max=%g)", d.Average, d.Max)
		}
		return fmt.Sprintf("lognormal(mu=%g, sigma=%g, max=%g)", d.Mu, d.Sigma, d.Max)
	case "exponential":
		return fmt.Sprintf("exponential(mean=%g)", d.Average)
	}
	return d.Kind
}

// ParseThinkTime reads --think-time-sec: a number of seconds (constant),
// or KIND:ARGS with KIND constant:V, uniform:MIN,MAX, exponential:MEAN or
// lognormal:MEDIAN,SIGMA.
func ParseThinkTime(s string) (*Distribution, error) {
	bad := func() (*Distribution, error) {
		return nil, fmt.Errorf("argument --think-time-sec: invalid value %q: seconds, or constant:V, uniform:MIN,MAX, exponential:MEAN or lognormal:MEDIAN,SIGMA (all 0 or more)", s)
	}
	kind, args, hasKind := strings.Cut(s, ":")
	if !hasKind {
		kind, args = "constant", s
	}
	var vs []float64
	for _, a := range strings.Split(args, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(a), 64)
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return bad()
		}
		vs = append(vs, v)
	}
	d := &Distribution{Kind: kind, field: "--think-time-sec"}
	switch {
	case kind == "constant" && len(vs) == 1:
		d.Value = vs[0]
	case kind == "uniform" && len(vs) == 2 && vs[0] <= vs[1]:
		d.Min, d.Max = vs[0], vs[1]
	case kind == "exponential" && len(vs) == 1:
		d.Average = vs[0]
	case kind == "lognormal" && len(vs) == 2 && vs[0] > 0:
		d.Mu, d.Sigma = math.Log(vs[0]), vs[1]
	default:
		return bad()
	}
	return d, nil
}
