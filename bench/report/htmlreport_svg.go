package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// The report's charts are SVG written here, in Go: a chart is a few
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

// render writes the chart as an <svg> element. Every drawn series is a
// <path class="mark">; a chart with no data shows its Note.
func (c *svgChart) render(b *strings.Builder) {
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

	fmt.Fprintf(b, `<figure class="chart" id="%s"><svg viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		html.EscapeString(c.ID), w, h, w, h, html.EscapeString(c.Title))
	fmt.Fprintf(b, `<text class="title" x="%d" y="16">%s</text>`, chartMarginL, html.EscapeString(c.Title))
	if c.Shade != nil {
		a, z := clampX(xOf(c.Shade[0])), clampX(xOf(c.Shade[1]))
		fmt.Fprintf(b, `<rect class="shade" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`,
			a, mt, max(z-a, 0), ph, html.EscapeString(c.ShadeLabel))
	}
	// Grid and ticks.
	b.WriteString(`<g class="axis">`)
	for _, t := range niceTicks(y0, y1, 5) {
		y := yOf(t)
		fmt.Fprintf(b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`,
			chartMarginL, chartMarginL+pw, y, y, chartMarginL-4, y+4, fmtTick(t))
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
		x := xOf(t)
		fmt.Fprintf(b, `<line class="xt" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`,
			x, x, mt+ph, mt+ph+4, x, mt+ph+16, fmtTick(t))
	}
	fmt.Fprintf(b, `<rect class="frame" x="%d" y="%.1f" width="%.1f" height="%.1f"/>`, chartMarginL, mt, pw, ph)
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, chartMarginL+pw/2, h-6, html.EscapeString(c.XLabel))
	fmt.Fprintf(b, `<text x="12" y="%.1f" text-anchor="middle" transform="rotate(-90 12 %.1f)">%s</text>`,
		mt+ph/2, mt+ph/2, html.EscapeString(c.YLabel))
	b.WriteString(`</g>`)

	if c.marks() == 0 {
		note := c.Note
		if note == "" {
			note = "no data"
		}
		fmt.Fprintf(b, `<text class="note" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, chartMarginL+pw/2, mt+ph/2, html.EscapeString(note))
	}
	fmt.Fprintf(b, `<svg x="%d" y="%.1f" width="%.1f" height="%.1f" viewBox="%d %.1f %.1f %.1f" overflow="hidden">`,
		chartMarginL, mt, pw, ph, chartMarginL, mt, pw, ph)
	for _, l := range c.Lines {
		if len(l.X) == 0 {
			continue
		}
		var d strings.Builder
		pen := false
		if l.Bars {
			for i := range l.X {
				if math.IsNaN(l.Y[i]) || l.Y[i] <= y0 {
					continue
				}
				a, z := xOf(l.X[i]-l.BarW/2), xOf(l.X[i]+l.BarW/2)
				top := yOf(l.Y[i])
				fmt.Fprintf(&d, "M%.1f %.1fV%.1fH%.1fV%.1fZ", a, yOf(y0), top, max(z-0.5, a+0.5), yOf(y0))
			}
			if d.Len() > 0 {
				fmt.Fprintf(b, `<path class="mark bars" fill="%s" fill-opacity="0.55" d="%s"><title>%s</title></path>`, l.Color, d.String(), html.EscapeString(l.Name))
			}
			continue
		}
		if l.Dots {
			for i := range l.X {
				if math.IsNaN(l.Y[i]) || math.IsNaN(l.X[i]) {
					continue
				}
				x, y := xOf(l.X[i]), yOf(l.Y[i])
				fmt.Fprintf(&d, "M%.1f %.1fa3.5 3.5 0 1 0 7 0a3.5 3.5 0 1 0 -7 0", x-3.5, y)
			}
			if d.Len() > 0 {
				fmt.Fprintf(b, `<path class="mark dots" fill="%s" d="%s"><title>%s</title></path>`, l.Color, d.String(), html.EscapeString(l.Name))
			}
			continue
		}
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
		if d.Len() == 0 {
			continue
		}
		dash := ""
		if l.Dash {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(b, `<path class="mark" fill="none" stroke="%s" stroke-width="1.6"%s d="%s"><title>%s</title></path>`,
			l.Color, dash, d.String(), html.EscapeString(l.Name))
	}
	b.WriteString(`</svg>`)
	// Legend, under the title.
	if legend {
		lx := float64(chartMarginL)
		for _, l := range c.Lines {
			if l.Name == "" {
				continue
			}
			fmt.Fprintf(b, `<g class="legend"><rect x="%.1f" y="22" width="12" height="10" fill="%s"/><text x="%.1f" y="31">%s</text></g>`,
				lx, l.Color, lx+15, html.EscapeString(l.Name))
			lx += float64(len([]rune(l.Name)))*6.2 + 26
		}
	}
	b.WriteString("</svg></figure>\n")
}
