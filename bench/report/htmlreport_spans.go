package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// serverSpansView is the report's section of --otlp-receiver's join: the
// join rate, a stacked per-request TTFT chart (requests sorted by TTFT,
// p50/p90/p99 marked) and where the slowest 1 % spent their time.
type serverSpansView struct {
	Heading, Summary, Why, Warning string
	Slowest                        []slowestLine
	SlowestCount                   string
	SlowestTTFT                    string
	Chart                          *spansChart
	Correlation                    []slowestLine
}

// slowestLine is one phase's row: its name, mean (ms) and share.
type slowestLine struct {
	Phase, Mean, Share string
}

// spansChart is the stacked chart: one path per phase over columns of
// requests sorted by TTFT, and the percentile marks.
type spansChart struct {
	MaxMs  string
	Phases []spansPhase
	Marks  []spansMark
}

type spansPhase struct {
	Name, Color, D string
	LegendX        float64
}

type spansMark struct {
	Label string
	X     float64
}

// Chart geometry: at most spansColumns columns (a column averages the
// requests it covers, sorted by TTFT), plotted in a spansW × spansH box
// under the title, the legend below it; the template's 900 × 240 SVG
// holds them.
const (
	spansColumns     = 400
	spansX0, spansY0 = 20.0, 24.0
	spansW, spansH   = 860.0, 180.0
	spansLegendStep  = 140.0
)

func newServerSpansView(r *ReportRun, many bool) *serverSpansView {
	var s ServerSpans
	if !r.sidecarSection("server_spans", &s) {
		return nil
	}
	v := &serverSpansView{Heading: runHeading(r, many), Summary: s.Summary, Why: s.Why, Warning: s.Warning}
	if s.Joined == 0 {
		return v
	}
	v.SlowestCount = strconv.Itoa(s.Slowest.Requests)
	v.SlowestTTFT = fixed2(s.Slowest.MeanTTFTMs)
	for _, p := range s.Slowest.Phases {
		v.Slowest = append(v.Slowest, slowestLine{p.Phase, fixed2(p.MeanMs), strconv.FormatFloat(100*p.Share, 'f', 1, 64) + " %"})
	}
	for _, c := range s.TTFTCorrelation {
		v.Correlation = append(v.Correlation, slowestLine{Phase: c.Phase, Mean: strconv.FormatFloat(c.R, 'f', 2, 64)})
	}
	v.Chart = newSpansChart(s.PerRequest)
	return v
}

// newSpansChart stacks each request's TTFT phases (negative stretches,
// where the sides disagree, drawn as 0), requests sorted by TTFT; nil
// without per-request rows (--save-detailed keeps them).
func newSpansChart(rows []ServerSpanRequest) *spansChart {
	if len(rows) == 0 {
		return nil
	}
	sorted := slices.Clone(rows)
	slices.SortStableFunc(sorted, func(a, b ServerSpanRequest) int { return int(a.TTFTNs - b.TTFTNs) })
	cols := min(len(sorted), spansColumns)
	// means[c][p] is phase p's mean over column c's requests.
	means := make([][]float64, cols)
	top := 0.0
	for c := range cols {
		lo, hi := c*len(sorted)/cols, (c+1)*len(sorted)/cols
		means[c] = make([]float64, len(stackedPhases))
		total := 0.0
		for p, ph := range stackedPhases {
			sum := 0.0
			for i := lo; i < hi; i++ {
				sum += float64(max(ph.of(&sorted[i]), 0))
			}
			means[c][p] = sum / float64(hi-lo)
			total += means[c][p]
		}
		top = max(top, total)
	}
	if top <= 0 {
		return nil
	}
	ch := &spansChart{MaxMs: fixed2(top / 1e6)}
	colW := spansW / float64(cols)
	base := make([]float64, cols)
	for p, ph := range stackedPhases {
		var d strings.Builder
		for c := range cols {
			h := means[c][p] / top * spansH
			if h <= 0 {
				continue
			}
			y := spansY0 + spansH - base[c] - h
			fmt.Fprintf(&d, "M%.1f %.1fh%.2fv%.1fh-%.2fZ", spansX0+float64(c)*colW, y, colW, h, colW)
			base[c] += h
		}
		ch.Phases = append(ch.Phases, spansPhase{ph.name, chartColor(p), d.String(), spansX0 + float64(p)*spansLegendStep})
	}
	for _, q := range []struct {
		label string
		p     float64
	}{{"p50", 0.50}, {"p90", 0.90}, {"p99", 0.99}} {
		ch.Marks = append(ch.Marks, spansMark{q.label, spansX0 + q.p*spansW})
	}
	return ch
}
