package report

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// --plot-dataset-stats: vLLM draws one matplotlib figure
// (vllm/benchmarks/plot.py, generate_dataset_stats_plot), 14 × 10 inches
// saved at 150 dpi, of four panels from the result's input_lens and
// output_lens (every request, failed ones with 0 output tokens):
//
//	Prompt Tokens Distribution   | Output Tokens Distribution
//	  (hist, 30 bins, steelblue) |   (hist, 30 bins, coral)
//	Total Tokens Distribution    | Tokens per Request (Stacked)
//	  (prompt + output, 30 bins, |   (bar per request id: prompt in
//	  mediumseagreen)            |   steelblue, output coral on top)
//
// Histogram bars have black edges, every fill has alpha 0.7, and a light
// grid (alpha 0.3) is drawn over them (the stacked panel only along y).
// The file is the result path with its suffix replaced
// (pathlib.Path.with_suffix): results.json → results.dataset_stats.png.
//
// stampede draws the same figure, same size, titles, labels, colours and
// bin counts (numpy.histogram's bins, edges included), with its own small
// rasteriser and Go's PNG encoder; text is set in the Go font through
// golang.org/x/image. Tick positions follow matplotlib's choice of 1, 2,
// 2.5 or 5 × 10^k steps (niceTicks, at most nine intervals); fonts and anti-aliasing are not matplotlib's, so
// the pixels are not.

// DatasetStatsPath is where --plot-dataset-stats writes its figure:
// pathlib's Path(resultPath).with_suffix(".dataset_stats.png").
func DatasetStatsPath(resultPath string) string {
	p := pyPathlibNormalize(resultPath)
	dir, name := "", p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		dir, name = p[:i+1], p[i+1:]
	}
	// pathlib's suffix: from the last dot, unless the name starts there or
	// ends with it.
	if i := strings.LastIndexByte(name, '.'); i > 0 && i < len(name)-1 {
		name = name[:i]
	}
	return dir + name + ".dataset_stats.png"
}

// pyPathlibNormalize is str(pathlib.PurePosixPath(p)): repeated slashes
// and "." parts dropped, no trailing slash (two leading slashes stay).
func pyPathlibNormalize(p string) string {
	lead := ""
	switch {
	case strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "///"):
		lead = "//"
	case strings.HasPrefix(p, "/"):
		lead = "/"
	}
	var parts []string
	for _, s := range strings.Split(p, "/") {
		if s != "" && s != "." {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 && lead == "" {
		return "."
	}
	return lead + strings.Join(parts, "/")
}

// lengthHistogram is numpy.histogram(values, bins=n): n equal bins over [min,
// max] (widened to ±0.5 when all values are equal), the last bin closed on
// the right.
type lengthHistogram struct {
	edges  []float64 // n+1, as numpy.linspace computes them
	counts []int
}

func newLengthHistogram(values []int, n int) lengthHistogram {
	lo, hi := float64(values[0]), float64(values[0])
	for _, v := range values {
		lo, hi = min(lo, float64(v)), max(hi, float64(v))
	}
	if lo == hi {
		lo, hi = lo-0.5, hi+0.5
	}
	h := lengthHistogram{edges: make([]float64, n+1), counts: make([]int, n)}
	step := (hi - lo) / float64(n)
	for i := range h.edges {
		h.edges[i] = lo + float64(i)*step
	}
	h.edges[n] = hi
	// numpy's fast path: the bin from the scaled offset, then nudged by
	// one where rounding put a value on the wrong side of an edge.
	norm := float64(n) / (hi - lo)
	for _, v := range values {
		x := float64(v)
		i := int((x - lo) * norm)
		if i == n {
			i--
		}
		if x < h.edges[i] {
			i--
		} else if i != n-1 && x >= h.edges[i+1] {
			i++
		}
		h.counts[i]++
	}
	return h
}

// The figure's geometry, in pixels of the 150 dpi canvas.
const (
	statsDPI     = 150
	statsWidth   = 14 * statsDPI
	statsHeight  = 10 * statsDPI
	statsBins    = 30
	statsMarginL = 150 // tick labels and the y label
	statsMarginR = 40
	statsMarginT = 70 // the title
	statsMarginB = 120
)

// Colours of vLLM's figure (matplotlib's named colours).
var (
	steelBlue      = color.RGBA{0x46, 0x82, 0xb4, 0xff}
	coral          = color.RGBA{0xff, 0x7f, 0x50, 0xff}
	mediumSeaGreen = color.RGBA{0x3c, 0xb3, 0x71, 0xff}
	gridGray       = color.RGBA{0xb0, 0xb0, 0xb0, 0xff}
	black          = color.RGBA{0, 0, 0, 0xff}
)

// statsPanel is one subplot: its plot area on the canvas and its axes.
type statsPanel struct {
	area           image.Rectangle
	xmin, xmax     float64
	ymin, ymax     float64
	title          string
	xlabel, ylabel string
}

func (p *statsPanel) x(v float64) float64 {
	return float64(p.area.Min.X) + (v-p.xmin)/(p.xmax-p.xmin)*float64(p.area.Dx())
}

func (p *statsPanel) y(v float64) float64 {
	return float64(p.area.Max.Y) - (v-p.ymin)/(p.ymax-p.ymin)*float64(p.area.Dy())
}

// statsLayout places the four panels: row-major, a 2 × 2 grid.
func statsLayout() [4]image.Rectangle {
	var out [4]image.Rectangle
	cw, ch := statsWidth/2, statsHeight/2
	for i := range out {
		x0, y0 := (i%2)*cw, (i/2)*ch
		out[i] = image.Rect(x0+statsMarginL, y0+statsMarginT, x0+cw-statsMarginR, y0+ch-statsMarginB)
	}
	return out
}

// histPanel sets a histogram panel's axes as matplotlib autoscales them:
// x over the edges with 5% margins, y from 0 to the tallest bar plus 5%.
func histPanel(area image.Rectangle, h lengthHistogram) statsPanel {
	span := h.edges[len(h.edges)-1] - h.edges[0]
	top := 0
	for _, c := range h.counts {
		top = max(top, c)
	}
	return statsPanel{area: area,
		xmin: h.edges[0] - 0.05*span, xmax: h.edges[len(h.edges)-1] + 0.05*span,
		ymin: 0, ymax: 1.05 * float64(top)}
}

// stackedPanel sets the stacked bars' axes: bars of width 0.8 at 0 … n-1
// with 5% margins, y from 0 to the tallest total plus 5%.
func stackedPanel(area image.Rectangle, n, top int) statsPanel {
	span := float64(n) - 0.2
	p := statsPanel{area: area, xmin: -0.4 - 0.05*span, xmax: float64(n) - 0.6 + 0.05*span,
		ymin: 0, ymax: 1.05 * float64(top),
		title: "Tokens per Request (Stacked)", xlabel: "Request ID", ylabel: "Tokens"}
	if top == 0 {
		p.ymax = 1
	}
	return p
}

// DatasetStatsBar says where the figure draws bar bin of the histogram of
// values in panel 0, 1 or 2 (prompt, output or total tokens): its centre
// column x, a row inside it just above the x axis, the row its top
// reaches, and its colour before the bars' alpha. A caller reading a
// figure back checks its bars with it.
func DatasetStatsBar(panel int, values []int, bin int) (x, base int, top float64, fill color.RGBA) {
	h := newLengthHistogram(values, statsBins)
	p := histPanel(statsLayout()[panel], h)
	x = int((p.x(h.edges[bin]) + p.x(h.edges[bin+1])) / 2)
	return x, p.area.Max.Y - 3, p.y(float64(h.counts[bin])), [3]color.RGBA{steelBlue, coral, mediumSeaGreen}[panel]
}

// WriteDatasetStats draws the figure of inputLens and outputLens (one
// entry per request) as a PNG.
func WriteDatasetStats(w io.Writer, inputLens, outputLens []int) error {
	img, err := drawDatasetStats(inputLens, outputLens)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(bw, img); err != nil {
		return err
	}
	return bw.Flush()
}

func drawDatasetStats(inputLens, outputLens []int) (*image.RGBA, error) {
	if len(inputLens) == 0 || len(inputLens) != len(outputLens) {
		return nil, fmt.Errorf("dataset statistics need one input and one output length per request (got %d and %d)", len(inputLens), len(outputLens))
	}
	faces, err := statsFaces()
	if err != nil {
		return nil, err
	}
	statsDrawMu.Lock()
	defer statsDrawMu.Unlock()
	totals := make([]int, len(inputLens))
	top := 0
	for i := range totals {
		totals[i] = inputLens[i] + outputLens[i]
		top = max(top, totals[i])
	}
	c := &canvas{img: image.NewRGBA(image.Rect(0, 0, statsWidth, statsHeight)), faces: faces}
	draw.Draw(c.img, c.img.Bounds(), image.White, image.Point{}, draw.Src)

	areas := statsLayout()
	hists := []struct {
		values       []int
		fill         color.RGBA
		title, label string
	}{
		{inputLens, steelBlue, "Prompt Tokens Distribution", "Prompt Tokens"},
		{outputLens, coral, "Output Tokens Distribution", "Output Tokens"},
		{totals, mediumSeaGreen, "Total Tokens Distribution", "Total Tokens (Prompt + Output)"},
	}
	for i, hs := range hists {
		h := newLengthHistogram(hs.values, statsBins)
		p := histPanel(areas[i], h)
		p.title, p.xlabel, p.ylabel = hs.title, hs.label, "Frequency"
		for b, n := range h.counts {
			if n == 0 {
				continue
			}
			x0, x1, y0 := p.x(h.edges[b]), p.x(h.edges[b+1]), p.y(float64(n))
			c.fillRect(x0, y0, x1, p.y(0), hs.fill, 0.7)
			c.strokeRect(x0, y0, x1, p.y(0), black, 0.7, 2)
		}
		c.axes(&p, true, true)
	}

	// The stacked bars: width 0.8 around each request id.
	n := len(inputLens)
	p := stackedPanel(areas[3], n, top)
	for i := range n {
		x0, x1 := p.x(float64(i)-0.4), p.x(float64(i)+0.4)
		c.fillRect(x0, p.y(float64(inputLens[i])), x1, p.y(0), steelBlue, 0.7)
		c.fillRect(x0, p.y(float64(totals[i])), x1, p.y(float64(inputLens[i])), coral, 0.7)
	}
	c.axes(&p, false, true)
	c.legend(&p, totals, []string{"Prompt Tokens", "Output Tokens"}, []color.RGBA{steelBlue, coral})
	return c.img, nil
}

// statsFaceSet are the fonts of the figure: matplotlib's defaults of 10
// points for labels and 12 for titles, at the figure's 150 dpi.
type statsFaceSet struct{ label, title font.Face }

var statsFontOnce = sync.OnceValues(func() (statsFaceSet, error) {
	f, err := opentype.Parse(goregular.TTF)
	if err != nil {
		return statsFaceSet{}, err
	}
	label, err := opentype.NewFace(f, &opentype.FaceOptions{Size: 10, DPI: statsDPI, Hinting: font.HintingFull})
	if err != nil {
		return statsFaceSet{}, err
	}
	title, err := opentype.NewFace(f, &opentype.FaceOptions{Size: 12, DPI: statsDPI, Hinting: font.HintingFull})
	return statsFaceSet{label, title}, err
})

// statsFaces returns the faces; a face is not safe for concurrent use, so
// figures are drawn one at a time (statsDrawMu).
func statsFaces() (statsFaceSet, error) { return statsFontOnce() }

// statsDrawMu serialises drawing, which shares the font faces.
var statsDrawMu sync.Mutex

// canvas is the figure being drawn.
type canvas struct {
	img   *image.RGBA
	faces statsFaceSet
}

// blend paints c with opacity a (0..1) over pixel (x, y).
func (c *canvas) blend(x, y int, col color.RGBA, a float64) {
	if !(image.Point{x, y}.In(c.img.Rect)) || a <= 0 {
		return
	}
	i := c.img.PixOffset(x, y)
	p := c.img.Pix[i : i+3 : i+3]
	p[0] = uint8(float64(p[0])*(1-a) + float64(col.R)*a + 0.5)
	p[1] = uint8(float64(p[1])*(1-a) + float64(col.G)*a + 0.5)
	p[2] = uint8(float64(p[2])*(1-a) + float64(col.B)*a + 0.5)
}

// fillRect fills [x0, x1) × [y0, y1) with opacity alpha, edge pixels by
// the fraction of them covered, so bars narrower than a pixel still show.
func (c *canvas) fillRect(x0, y0, x1, y1 float64, col color.RGBA, alpha float64) {
	if x1 < x0 {
		x0, x1 = x1, x0
	}
	if y1 < y0 {
		y0, y1 = y1, y0
	}
	for py := int(math.Floor(y0)); float64(py) < y1; py++ {
		cy := math.Min(y1, float64(py+1)) - math.Max(y0, float64(py))
		for px := int(math.Floor(x0)); float64(px) < x1; px++ {
			cx := math.Min(x1, float64(px+1)) - math.Max(x0, float64(px))
			c.blend(px, py, col, alpha*cx*cy)
		}
	}
}

// strokeRect draws a rectangle's outline of width w centred on its edges.
func (c *canvas) strokeRect(x0, y0, x1, y1 float64, col color.RGBA, alpha, w float64) {
	h := w / 2
	c.fillRect(x0-h, y0-h, x1+h, y0+h, col, alpha)
	c.fillRect(x0-h, y1-h, x1+h, y1+h, col, alpha)
	c.fillRect(x0-h, y0+h, x0+h, y1-h, col, alpha)
	c.fillRect(x1-h, y0+h, x1+h, y1-h, col, alpha)
}

// text draws s with its anchor at (x, y): ax and ay are 0 (left / top),
// 0.5 (centre) or 1 (right / bottom).
func (c *canvas) text(face font.Face, s string, x, y, ax, ay float64) {
	d := font.Drawer{Dst: c.img, Src: image.Black, Face: face}
	m := face.Metrics()
	width := float64(d.MeasureString(s)) / 64
	height := float64(m.Ascent+m.Descent) / 64
	d.Dot = fixed.Point26_6{
		X: fixed.Int26_6((x - ax*width) * 64),
		Y: fixed.Int26_6((y-ay*height)*64) + m.Ascent,
	}
	d.DrawString(s)
}

// vtext draws s turned 90° anticlockwise, centred on (x, y).
func (c *canvas) vtext(face font.Face, s string, x, y float64) {
	m := face.Metrics()
	w := font.MeasureString(face, s).Ceil()
	h := (m.Ascent + m.Descent).Ceil()
	tmp := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(tmp, tmp.Bounds(), image.White, image.Point{}, draw.Src)
	d := font.Drawer{Dst: tmp, Src: image.Black, Face: face, Dot: fixed.Point26_6{Y: m.Ascent}}
	d.DrawString(s)
	x0, y0 := int(x)-h/2, int(y)-w/2
	for ty := range h {
		for tx := range w {
			// (tx, ty) lands at (ty, w-1-tx): turned anticlockwise.
			v := tmp.RGBAAt(tx, ty).R
			if v < 0xff {
				c.blend(x0+ty, y0+w-1-tx, black, 1-float64(v)/255)
			}
		}
	}
}

// axes draws the grid, the frame, the ticks and their labels, the axis
// labels and the title of p.
func (c *canvas) axes(p *statsPanel, xgrid, ygrid bool) {
	a := p.area
	lf := c.faces.label
	xt := niceTicks(p.xmin, p.xmax, 9)
	yt := niceTicks(p.ymin, p.ymax, 9)
	for _, v := range xt {
		x := p.x(v)
		if xgrid {
			c.fillRect(x-0.8, float64(a.Min.Y), x+0.8, float64(a.Max.Y), gridGray, 0.3)
		}
		c.fillRect(x-0.8, float64(a.Max.Y), x+0.8, float64(a.Max.Y)+7, black, 1)
		c.text(lf, tickLabel(v, xt), x, float64(a.Max.Y)+11, 0.5, 0)
	}
	for _, v := range yt {
		y := p.y(v)
		if ygrid {
			c.fillRect(float64(a.Min.X), y-0.8, float64(a.Max.X), y+0.8, gridGray, 0.3)
		}
		c.fillRect(float64(a.Min.X)-7, y-0.8, float64(a.Min.X), y+0.8, black, 1)
		c.text(lf, tickLabel(v, yt), float64(a.Min.X)-11, y, 1, 0.5)
	}
	c.strokeRect(float64(a.Min.X), float64(a.Min.Y), float64(a.Max.X), float64(a.Max.Y), black, 1, 1.6)
	c.text(lf, p.xlabel, float64(a.Min.X+a.Max.X)/2, float64(a.Max.Y)+48, 0.5, 0)
	c.vtext(lf, p.ylabel, float64(a.Min.X)-115, float64(a.Min.Y+a.Max.Y)/2)
	c.text(c.faces.title, p.title, float64(a.Min.X+a.Max.X)/2, float64(a.Min.Y)-14, 0.5, 1)
}

// legend draws the stacked panel's legend in whichever upper corner its
// bars reach least, as matplotlib's "best" mostly ends up.
func (c *canvas) legend(p *statsPanel, totals []int, labels []string, cols []color.RGBA) {
	lf := c.faces.label
	const pad, swatchW, swatchH, row = 14, 40, 20, 36
	w := 0
	for _, l := range labels {
		w = max(w, font.MeasureString(lf, l).Ceil())
	}
	boxW, boxH := float64(pad*3+swatchW+w), float64(pad*2+row*len(labels))
	a := p.area
	// How high the bars reach under each corner's box.
	reach := func(x0, x1 float64) float64 {
		h := 0.0
		for i, t := range totals {
			if x := p.x(float64(i)); x >= x0 && x <= x1 {
				h = max(h, float64(t))
			}
		}
		return h
	}
	right := float64(a.Max.X) - 16 - boxW
	left := float64(a.Min.X) + 16
	x0 := right
	if reach(left, left+boxW) < reach(right, right+boxW) {
		x0 = left
	}
	y0 := float64(a.Min.Y) + 16
	c.fillRect(x0, y0, x0+boxW, y0+boxH, color.RGBA{0xff, 0xff, 0xff, 0xff}, 0.8)
	c.strokeRect(x0, y0, x0+boxW, y0+boxH, color.RGBA{0xcc, 0xcc, 0xcc, 0xff}, 0.8, 1.6)
	for i, l := range labels {
		ry := y0 + pad + float64(i*row) + row/2
		c.fillRect(x0+pad, ry-swatchH/2, x0+pad+swatchW, ry+swatchH/2, cols[i], 0.7)
		c.text(lf, l, x0+2*pad+swatchW, ry, 0, 0.5)
	}
}

// tickLabel writes v with as many decimals as the ticks' step needs.
func tickLabel(v float64, ticks []float64) string {
	if v == 0 {
		v = 0 // no "-0"
	}
	dec := 0
	if len(ticks) > 1 {
		step := ticks[1] - ticks[0]
		for dec < 6 && math.Abs(step*math.Pow(10, float64(dec))-math.Round(step*math.Pow(10, float64(dec)))) > 1e-6 {
			dec++
		}
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// WriteDatasetStatsFile writes the figure to path; on failure it leaves
// no file behind.
func WriteDatasetStatsFile(path string, inputLens, outputLens []int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteDatasetStats(f, inputLens, outputLens); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
