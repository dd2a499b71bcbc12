package metrics

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// golden.json holds scipy.stats' answers for the same inputs
// (testdata/inference/gen.py writes it).
type inferenceGolden struct {
	MannWhitney []struct {
		A, B []float64
		U, P float64
	}
	TQuantile []struct{ P, DF, Q float64 }   `json:"t_quantile"`
	TCDF      []struct{ T, DF, CDF float64 } `json:"t_cdf"`
	Welch     []struct {
		A, B []float64
		P    float64
	}
	Spread []struct {
		Xs                       []float64
		Mean, StdDev, Lo, Hi, CV float64
	}
}

func loadInferenceGolden(t *testing.T) *inferenceGolden {
	t.Helper()
	b, err := os.ReadFile("testdata/inference/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g inferenceGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.MannWhitney) == 0 || len(g.TQuantile) == 0 || len(g.Spread) == 0 {
		t.Fatal("golden.json has empty sections")
	}
	return &g
}

func near(got, want, rel float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= rel*math.Max(1e-300, math.Abs(want)) || math.Abs(got-want) < 1e-300
}

func TestMannWhitneyUMatchesScipy(t *testing.T) {
	for i, c := range loadInferenceGolden(t).MannWhitney {
		got := MannWhitneyU(c.A, c.B)
		if got.U != c.U {
			t.Errorf("case %d: U = %v, scipy %v", i, got.U, c.U)
		}
		if !near(got.P, c.P, 1e-9) {
			t.Errorf("case %d: p = %v, scipy %v", i, got.P, c.P)
		}
	}
}

func TestMannWhitneyUDegenerate(t *testing.T) {
	if p := MannWhitneyU(nil, []float64{1}).P; p != 1 {
		t.Errorf("empty sample: p = %v, want 1", p)
	}
	if p := MannWhitneyU([]float64{2, 2}, []float64{2, 2, 2}).P; p != 1 {
		t.Errorf("all tied: p = %v, want 1", p)
	}
	// Disjoint samples are as different as samples of this size can be.
	a := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	b := []float64{11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	if p := MannWhitneyU(a, b).P; p > 0.001 {
		t.Errorf("disjoint samples: p = %v, want < 0.001", p)
	}
}

func TestStudentTMatchesScipy(t *testing.T) {
	g := loadInferenceGolden(t)
	// scipy 1.10's t.ppf is itself good to about 1e-9 (see the closed
	// forms below); its cdf is far closer.
	for _, c := range g.TQuantile {
		if got := StudentTQuantile(c.P, c.DF); !near(got, c.Q, 1e-8) {
			t.Errorf("t.ppf(%v, %v) = %v, scipy %v", c.P, c.DF, got, c.Q)
		}
	}
	for _, c := range g.TCDF {
		if got := StudentTCDF(c.T, c.DF); !near(got, c.CDF, 1e-12) {
			t.Errorf("t.cdf(%v, %v) = %v, scipy %v", c.T, c.DF, got, c.CDF)
		}
	}
	for _, c := range g.Welch {
		if got := WelchT(c.A, c.B); !near(got, c.P, 1e-9) {
			t.Errorf("Welch p(%v, %v) = %v, scipy %v", c.A, c.B, got, c.P)
		}
	}
}

// For one and two degrees of freedom t's quantile has closed forms:
// tan(π(p − ½)) and (2p − 1)/√(2p(1 − p)).
func TestStudentTQuantileClosedForms(t *testing.T) {
	for _, p := range []float64{0.55, 0.6, 0.9, 0.975, 0.995} {
		if got, want := StudentTQuantile(p, 1), math.Tan(math.Pi*(p-0.5)); !near(got, want, 1e-13) {
			t.Errorf("df 1, p %v: %v, want %v", p, got, want)
		}
		if got, want := StudentTQuantile(p, 2), (2*p-1)/math.Sqrt(2*p*(1-p)); !near(got, want, 1e-13) {
			t.Errorf("df 2, p %v: %v, want %v", p, got, want)
		}
		if got := StudentTQuantile(1-p, 7); !near(got, -StudentTQuantile(p, 7), 1e-15) {
			t.Errorf("df 7: quantile not symmetric at p %v", p)
		}
	}
}

func TestSpreadOfMatchesNumpy(t *testing.T) {
	for _, c := range loadInferenceGolden(t).Spread {
		s := SpreadOf(c.Xs)
		if s.N != len(c.Xs) || !near(s.Mean, c.Mean, 1e-14) || !near(s.StdDev, c.StdDev, 1e-12) ||
			!near(s.CILow, c.Lo, 1e-8) || !near(s.CIHigh, c.Hi, 1e-8) || !near(s.CV, c.CV, 1e-12) {
			t.Errorf("SpreadOf(%v) = %+v, want mean %v sd %v ci [%v, %v] cv %v", c.Xs, s, c.Mean, c.StdDev, c.Lo, c.Hi, c.CV)
		}
	}
	one := SpreadOf([]float64{4})
	if one.Mean != 4 || !math.IsNaN(one.CV) || one.CILow != 4 {
		t.Errorf("SpreadOf one value = %+v", one)
	}
}

// BenchmarkMannWhitneyU is the cost of comparing two runs' ITLs of a
// million tokens each.
func BenchmarkMannWhitneyU(b *testing.B) {
	const n = 1 << 20
	a, c := make([]float64, n), make([]float64, n)
	x := uint64(1)
	for i := range a {
		x = x*6364136223846793005 + 1442695040888963407
		a[i] = float64(x>>40) / 1e3
		x = x*6364136223846793005 + 1442695040888963407
		c[i] = float64(x>>40)/1e3 + 1
	}
	b.ReportAllocs()
	for b.Loop() {
		MannWhitneyU(a, c)
	}
}
