package report

import (
	"bytes"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stampede-bench/stampede/bench/report/reporttest"
)

func TestDatasetStatsPath(t *testing.T) {
	// pathlib.Path(p).with_suffix(".dataset_stats.png").
	for _, c := range [][2]string{
		{"results.json", "results.dataset_stats.png"},
		{"out/run-inf-qps.json", "out/run-inf-qps.dataset_stats.png"},
		{"res", "res.dataset_stats.png"},
		{"a.b.json", "a.b.dataset_stats.png"},
		{".hidden", ".hidden.dataset_stats.png"},
		{"dir.d/res", "dir.d/res.dataset_stats.png"},
		{"./x.json", "x.dataset_stats.png"},
		{"d//./x.json", "d/x.dataset_stats.png"},
		{"/abs/x.json", "/abs/x.dataset_stats.png"},
	} {
		if got := DatasetStatsPath(c[0]); got != c[1] {
			t.Errorf("DatasetStatsPath(%q) = %q, want %q", c[0], got, c[1])
		}
	}
}

func TestLengthHistogram(t *testing.T) {
	cases := []struct {
		values []int
		bins   int
		counts []int
		edges  []float64
	}{
		// The largest value falls in the last bin, closed on the right.
		{[]int{1, 2, 2, 3, 3, 3, 10}, 3, []int{6, 0, 1}, []float64{1, 4, 7, 10}},
		// All equal: numpy widens the range to ±0.5.
		{[]int{5, 5}, 4, []int{0, 0, 2, 0}, []float64{4.5, 4.75, 5, 5.25, 5.5}},
		{[]int{0, 1}, 2, []int{1, 1}, []float64{0, 0.5, 1}},
	}
	for _, c := range cases {
		h := newLengthHistogram(c.values, c.bins)
		if !reflect.DeepEqual(h.counts, c.counts) || !reflect.DeepEqual(h.edges, c.edges) {
			t.Errorf("%v in %d bins: counts %v edges %v, want %v %v", c.values, c.bins, h.counts, h.edges, c.counts, c.edges)
		}
	}
	// Against the definition: each value in [edge i, edge i+1), the last
	// bin closed, for ranges where the scaled index rounds badly.
	r := rand.New(rand.NewPCG(1, 1))
	for range 200 {
		values := make([]int, 1+r.IntN(300))
		lo, span := r.IntN(5000), 1+r.IntN(4000)
		for i := range values {
			values[i] = lo + r.IntN(span)
		}
		h := newLengthHistogram(values, 30)
		want := make([]int, 30)
		for _, v := range values {
			x := float64(v)
			for b := range 30 {
				if x >= h.edges[b] && (x < h.edges[b+1] || b == 29 && x <= h.edges[30]) {
					want[b]++
					break
				}
			}
		}
		if !reflect.DeepEqual(h.counts, want) {
			t.Fatalf("%v: counts %v, want %v", values, h.counts, want)
		}
	}
}

func TestDatasetStatsFigureReflectsData(t *testing.T) {
	// Twelve requests, short ones first (so the legend sits top left, over
	// no bar), tall ones last.
	in := []int{10, 12, 12, 30, 31, 33, 60, 61, 62, 64, 100, 120}
	out := []int{5, 0, 8, 8, 8, 20, 20, 21, 40, 40, 41, 90}
	var buf bytes.Buffer
	if err := WriteDatasetStats(&buf, in, out); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 2100 || b.Dy() != 1500 {
		t.Fatalf("figure is %v, want 14×10 in at 150 dpi", b)
	}
	totals := make([]int, len(in))
	top := 0
	for i := range in {
		totals[i] = in[i] + out[i]
		top = max(top, totals[i])
	}
	areas := statsLayout()
	for k, hs := range []struct {
		values []int
		fill   color.RGBA
	}{{in, steelBlue}, {out, coral}, {totals, mediumSeaGreen}} {
		h := newLengthHistogram(hs.values, statsBins)
		p := histPanel(areas[k], h)
		bottom := p.area.Max.Y - 3
		for b, n := range h.counts {
			x := int((p.x(h.edges[b]) + p.x(h.edges[b+1])) / 2)
			got := reporttest.RunUp(img, x, bottom, reporttest.FillOf(hs.fill))
			if n == 0 {
				if got <= bottom {
					t.Errorf("panel %d bin %d: empty, but a bar reaches y=%d", k, b, got)
				}
				continue
			}
			if want := p.y(float64(n)); math.Abs(float64(got)-want) > 3 {
				t.Errorf("panel %d bin %d (count %d): bar top at y=%d, want %.1f", k, b, n, got, want)
			}
		}
	}
	p := stackedPanel(areas[3], len(in), top)
	for i := range in {
		x := int(p.x(float64(i)))
		blueTop := reporttest.RunUp(img, x, p.area.Max.Y-3, reporttest.FillOf(steelBlue))
		if want := p.y(float64(in[i])); math.Abs(float64(blueTop)-want) > 3 {
			t.Errorf("request %d: prompt bar top at y=%d, want %.1f", i, blueTop, want)
		}
		if out[i] == 0 {
			continue
		}
		coralTop := reporttest.RunUp(img, x, blueTop-1, reporttest.FillOf(coral))
		if want := p.y(float64(totals[i])); math.Abs(float64(coralTop)-want) > 3 {
			t.Errorf("request %d: output bar top at y=%d, want %.1f", i, coralTop, want)
		}
	}
}

func TestDatasetStatsRefusesMismatchedLengths(t *testing.T) {
	for _, c := range [][2][]int{{nil, nil}, {{1, 2}, {3}}} {
		if err := WriteDatasetStats(&bytes.Buffer{}, c[0], c[1]); err == nil {
			t.Errorf("%v, %v: no error", c[0], c[1])
		}
	}
}

// TestWriteDatasetStatsExample writes a figure of 2,000 requests to
// $STAMPEDE_PLOT_DUMP (for a look in a browser) when it is set.
func TestWriteDatasetStatsExample(t *testing.T) {
	dir := os.Getenv("STAMPEDE_PLOT_DUMP")
	if dir == "" {
		t.Skip("STAMPEDE_PLOT_DUMP not set")
	}
	r := rand.New(rand.NewPCG(3, 4))
	in, out := make([]int, 2000), make([]int, 2000)
	for i := range in {
		in[i] = 200 + int(math.Abs(r.NormFloat64())*600)
		out[i] = 50 + r.IntN(300)
	}
	if err := WriteDatasetStatsFile(filepath.Join(dir, "example.dataset_stats.png"), in, out); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkDatasetStats10k(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	in, out := make([]int, 10000), make([]int, 10000)
	for i := range in {
		in[i], out[i] = 100+r.IntN(2000), r.IntN(500)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteDatasetStats(&bytes.Buffer{}, in, out); err != nil {
			b.Fatal(err)
		}
	}
}

// DatasetStatsBar, which end-to-end tests read a run's figure with, names
// the bars the figure draws.
func TestDatasetStatsBar(t *testing.T) {
	in := []int{10, 12, 12, 30, 31, 33, 60, 61, 62, 64, 100, 120}
	out := []int{5, 0, 8, 8, 8, 20, 20, 21, 40, 40, 41, 90}
	totals := make([]int, len(in))
	for i := range in {
		totals[i] = in[i] + out[i]
	}
	var buf bytes.Buffer
	if err := WriteDatasetStats(&buf, in, out); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for panel, values := range [][]int{in, out, totals} {
		h := newLengthHistogram(values, statsBins)
		for b, n := range h.counts {
			x, base, top, fill := DatasetStatsBar(panel, values, b)
			got := reporttest.RunUp(img, x, base, reporttest.FillOf(fill))
			if n == 0 && got <= base {
				t.Errorf("panel %d bin %d: empty, but a bar reaches y=%d", panel, b, got)
			}
			if n > 0 && math.Abs(float64(got)-top) > 3 {
				t.Errorf("panel %d bin %d (count %d): bar top at y=%d, want %.1f", panel, b, n, got, top)
			}
		}
	}
}
