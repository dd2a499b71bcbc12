package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The report's charts are SVG laid out here and written by
// assets/chart.html: a chart is a few
// hundred path points at most (distributions are drawn from quantiles,
// series from bins), so a page for 10,000 requests stays small, needs no
// script to draw, and tests can count its marks without a browser.

// chartColors is a palette readable on white and by most colour-blind
// readers (Okabe–Ito, without yellow).
var chartColors = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#000000", "#999999"}

func chartColor(i int) string { return chartColors[i%len(chartColors)] }

// svgLine is one series of a chart: a polyline, a step line or bars.
type svgLine struct {
	Name  string
	Color string
	X, Y  []float64
	Step  bool // a step function: each value holds until the next x
	Bars  bool // bars of width BarW centred on X
	Dots  bool // a dot per point, no line
	BarW  float64
	Dash  bool
}

// svgChart is one chart: axes with ticks, lines, an optional shaded span.
type svgChart struct {
	ID             string
	Title          string
	XLabel, YLabel string
	W, H           int
	// X0..X1 and Y0..Y1 are the axes' ranges; when Y1 <= Y0 the range is
	// taken from the data (from 0).
	X0, X1, Y0, Y1 float64
	LogX           bool
	Lines          []svgLine
	// Shade is a span of x drawn as a band (the steady-state window).
	Shade      *[2]float64
	ShadeLabel string
	// Note is shown instead of marks when there is nothing to draw.
	Note string
}

const (
	chartMarginL = 64
	chartMarginR = 16
	chartMarginT = 28
	chartMarginB = 40
)

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []float64{lo}
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		ticks = append(ticks, v)
	}
	return ticks
}

// fmtTick writes a tick label compactly.
func fmtTick(v float64) string {
	a := math.Abs(v)
	switch {
	case v == 0:
		return "0"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// marks counts the drawable points of the chart's lines.
func (c *svgChart) marks() int {
	n := 0
	for _, l := range c.Lines {
		for i := range l.X {
			if !math.IsNaN(l.Y[i]) && !math.IsNaN(l.X[i]) {
				n++
			}
		}
	}
	return n
}

// chartView is a chart laid out for assets/chart.html: every position in
// the SVG's user units, every series as one path's d attribute.
type chartView struct {
	ID, Title string
	W, H      int
	// Left, Top, PlotW and PlotH are the plot area; Right and Bottom its
	// far edges, MidX and MidY its centre.
	Left              int
	Top, PlotW, PlotH float64
	Right, Bottom     float64
	MidX, MidY        float64
	XLabelY           int
	XLabel, YLabel    string
	Shade             *chartShade
	YTicks, XTicks    []chartTick
	Note              string // shown when nothing is drawn
	Paths             []chartPath
	Legend            []chartLegend
}

type chartShade struct {
	X, W  float64
	Label string
}

// chartTick is one tick: Pos is its y (Y ticks) or x (X ticks); the
// label sits at LabelX, LabelY (Y ticks) or at TextY under the tick mark
// that ends at LabelY (X ticks).
type chartTick struct {
	Pos           float64
	LabelX        int
	LabelY, TextY float64
	Label         string
}

// chartPath is one drawn series, a mark for the page's self-check: a
// stroked line when Stroke is set, else filled bars or dots.
type chartPath struct {
	Class, Fill, Stroke, D, Title string
	Dash, Translucent             bool
}

type chartLegend struct {
	X, TextX    float64
	Color, Name string
}

// view lays the chart out. Every drawn series is a path of class "mark";
// a chart with no data shows its Note.
func (c *svgChart) view() *chartView {
	w, h := c.W, c.H
	if w == 0 {
		w = 560
	}
	if h == 0 {
		h = 260
	}
	legend := len(c.Lines) > 1 || (len(c.Lines) == 1 && c.Lines[0].Name != "")
	mt := float64(chartMarginT)
	if legend {
		mt += 16
	}
	pw, ph := float64(w-chartMarginL-chartMarginR), float64(h-chartMarginB)-mt
	x0, x1, y0, y1 := c.X0, c.X1, c.Y0, c.Y1
	if !(y1 > y0) {
		y0, y1 = 0, 0
		for _, l := range c.Lines {
			for i, y := range l.Y {
				if !math.IsNaN(y) && !math.IsInf(y, 0) && !math.IsNaN(l.X[i]) {
					y1 = max(y1, y)
					y0 = min(y0, y)
				}
			}
		}
		if y1 <= y0 {
			y1 = y0 + 1
		}
		y1 *= 1.05
	}
	if !(x1 > x0) {
		x1 = x0 + 1
	}
	lx0, lx1 := x0, x1
	if c.LogX {
		lx0, lx1 = math.Log10(max(x0, 1e-9)), math.Log10(max(x1, 1e-9))
		if !(lx1 > lx0) {
			lx1 = lx0 + 1
		}
	}
	xOf := func(x float64) float64 {
		if c.LogX {
			x = math.Log10(max(x, 1e-9))
		}
		return chartMarginL + (x-lx0)/(lx1-lx0)*pw
	}
	yOf := func(y float64) float64 { return mt + ph - (y-y0)/(y1-y0)*ph }
	clampX := func(px float64) float64 { return min(max(px, chartMarginL), chartMarginL+pw) }

	v := &chartView{
		ID: c.ID, Title: c.Title, W: w, H: h,
		Left: chartMarginL, Top: mt, PlotW: pw, PlotH: ph,
		Right: chartMarginL + pw, Bottom: mt + ph, MidX: chartMarginL + pw/2, MidY: mt + ph/2,
		XLabelY: h - 6, XLabel: c.XLabel, YLabel: c.YLabel,
	}
	if c.Shade != nil {
		a, z := clampX(xOf(c.Shade[0])), clampX(xOf(c.Shade[1]))
		v.Shade = &chartShade{X: a, W: max(z-a, 0), Label: c.ShadeLabel}
	}
	for _, t := range niceTicks(y0, y1, 5) {
		y := yOf(t)
		v.YTicks = append(v.YTicks, chartTick{Pos: y, LabelX: chartMarginL - 4, LabelY: y + 4, Label: fmtTick(t)})
	}
	var xt []float64
	if c.LogX {
		for e := math.Floor(lx0); e <= math.Ceil(lx1); e++ {
			if e >= lx0-1e-9 && e <= lx1+1e-9 {
				xt = append(xt, math.Pow(10, e))
			}
		}
	} else {
		xt = niceTicks(x0, x1, 6)
	}
	for _, t := range xt {
		v.XTicks = append(v.XTicks, chartTick{Pos: xOf(t), LabelY: mt + ph + 4, TextY: mt + ph + 16, Label: fmtTick(t)})
	}
	if c.marks() == 0 {
		v.Note = c.Note
		if v.Note == "" {
			v.Note = "no data"
		}
	}
	for _, l := range c.Lines {
		if p, ok := l.path(xOf, yOf, y0); ok {
			v.Paths = append(v.Paths, p)
		}
	}
	if legend {
		lx := float64(chartMarginL)
		for _, l := range c.Lines {
			if l.Name == "" {
				continue
			}
			v.Legend = append(v.Legend, chartLegend{X: lx, TextX: lx + 15, Color: l.Color, Name: l.Name})
			lx += float64(len([]rune(l.Name)))*6.2 + 26
		}
	}
	return v
}

// path draws the series with the chart's scales; false when it has
// nothing to draw. y0 is the axis the bars stand on.
func (l *svgLine) path(xOf, yOf func(float64) float64, y0 float64) (chartPath, bool) {
	if len(l.X) == 0 {
		return chartPath{}, false
	}
	var d strings.Builder
	switch {
	case l.Bars:
		for i := range l.X {
			if math.IsNaN(l.Y[i]) || l.Y[i] <= y0 {
				continue
			}
			a, z := xOf(l.X[i]-l.BarW/2), xOf(l.X[i]+l.BarW/2)
			top := yOf(l.Y[i])
			fmt.Fprintf(&d, "M%.1f %.1fV%.1fH%.1fV%.1fZ", a, yOf(y0), top, max(z-0.5, a+0.5), yOf(y0))
		}
		return chartPath{Class: "mark bars", Fill: l.Color, Translucent: true, D: d.String(), Title: l.Name}, d.Len() > 0
	case l.Dots:
		for i := range l.X {
			if math.IsNaN(l.Y[i]) || math.IsNaN(l.X[i]) {
				continue
			}
			x, y := xOf(l.X[i]), yOf(l.Y[i])
			fmt.Fprintf(&d, "M%.1f %.1fa3.5 3.5 0 1 0 7 0a3.5 3.5 0 1 0 -7 0", x-3.5, y)
		}
		return chartPath{Class: "mark dots", Fill: l.Color, D: d.String(), Title: l.Name}, d.Len() > 0
	}
	pen := false
	for i := range l.X {
		if math.IsNaN(l.Y[i]) || math.IsNaN(l.X[i]) {
			pen = false
			continue
		}
		x, y := xOf(l.X[i]), yOf(l.Y[i])
		switch {
		case !pen:
			fmt.Fprintf(&d, "M%.1f %.1f", x, y)
		case l.Step:
			fmt.Fprintf(&d, "H%.1fV%.1f", x, y)
		default:
			fmt.Fprintf(&d, "L%.1f %.1f", x, y)
		}
		pen = true
	}
	if l.Step && pen {
		fmt.Fprintf(&d, "H%.1f", xOf(l.X[len(l.X)-1])+0.5)
	}
	return chartPath{Class: "mark", Stroke: l.Color, Dash: l.Dash, D: d.String(), Title: l.Name}, d.Len() > 0
}
