// Package reporttest holds the checks that bench/report's tests and
// bench's end-to-end tests both make on stampede's outputs: a page that
// needs nothing from outside, the marks of its charts, and the bars of
// the dataset-stats figure.
package reporttest

import (
	"image"
	"image/color"
	"regexp"
	"strings"
	"testing"
)

// CheckSelfContained fails when the page points at anything outside
// itself: a src or href, a CSS url() or @import, or a script fetching.
func CheckSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, re := range []string{`(?i)\ssrc\s*=`, `(?i)\shref\s*=\s*["']?[a-z]+:`, `(?i)url\(`, `(?i)@import`, `fetch\(`, `XMLHttpRequest`, `(?i)<link\b`, `(?i)<iframe\b`} {
		if loc := regexp.MustCompile(re).FindStringIndex(page); loc != nil {
			t.Errorf("page references something outside itself (%s): %q", re, page[max(loc[0]-40, 0):min(loc[1]+60, len(page))])
		}
	}
}

// ChartMarks counts the marks of every SVG chart in a page, by id.
func ChartMarks(page string) map[string]int {
	out := map[string]int{}
	figs := regexp.MustCompile(`<figure class="chart" id="([^"]*)">`).FindAllStringSubmatchIndex(page, -1)
	for i, f := range figs {
		end := len(page)
		if i+1 < len(figs) {
			end = figs[i+1][0]
		}
		out[page[f[2]:f[3]]] = strings.Count(page[f[1]:end], `class="mark`)
	}
	return out
}

// FillOf is col at alpha 0.7 over white, as the figure's bars are painted.
func FillOf(col color.RGBA) color.RGBA {
	mix := func(c uint8) uint8 { return uint8(255*0.3 + float64(c)*0.7 + 0.5) }
	return color.RGBA{mix(col.R), mix(col.G), mix(col.B), 0xff}
}

func near(a, b color.RGBA) bool {
	d := func(x, y uint8) int { return max(int(x)-int(y), int(y)-int(x)) }
	return d(a.R, b.R) <= 6 && d(a.G, b.G) <= 6 && d(a.B, b.B) <= 6
}

// RunUp walks up column x from y while pixels have colour want, stepping
// over up to three others (a grid line), and returns the topmost match, or
// y+1 when y itself does not match after the allowed gap.
func RunUp(img image.Image, x, y int, want color.RGBA) int {
	top, gap := y+1, 0
	for ; y >= img.Bounds().Min.Y && gap <= 3; y-- {
		r, g, b, _ := img.At(x, y).RGBA()
		if near(color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 0xff}, want) {
			top, gap = y, 0
		} else {
			gap++
		}
	}
	return top
}
