package report

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ReportSweep is a `stampede sweep` summary (sweep.json) for the report:
// throughput against latency per point, with the Pareto front.
type ReportSweep struct {
	Name   string
	Result *SweepResult
}

// IsSweepFile says whether the JSON at path is a sweep.json.
func IsSweepFile(path string) bool {
	body, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var probe struct {
		Axes json.RawMessage `json:"axes"`
		Rows json.RawMessage `json:"rows"`
	}
	return json.Unmarshal(body, &probe) == nil && probe.Axes != nil && probe.Rows != nil
}

// LoadReportSweep reads a sweep.json and the results of its points that
// are still on disk (paths relative to the sweep's directory), for the
// report's overlaid distributions.
func LoadReportSweep(path string) (*ReportSweep, []*ReportRun, error) {
	res, err := LoadSweep(path)
	if err != nil {
		return nil, nil, err
	}
	var runs []*ReportRun
	for _, row := range res.Rows {
		for _, f := range row.Files {
			if !filepath.IsAbs(f) {
				if _, err := os.Stat(f); err != nil {
					f = filepath.Join(filepath.Dir(path), filepath.Base(f))
				}
			}
			rs, err := LoadReportRuns(f)
			if err != nil {
				continue
			}
			for _, r := range rs {
				r.Name = row.Point
			}
			runs = append(runs, rs...)
		}
	}
	return &ReportSweep{Name: path, Result: res}, runs, nil
}

// paretoFront returns the indices of the points no other point beats on
// both throughput (higher) and latency (lower), by ascending latency.
func paretoFront(latency, throughput []float64) []int {
	idx := make([]int, 0, len(latency))
	for i := range latency {
		if !math.IsNaN(latency[i]) && !math.IsNaN(throughput[i]) {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case latency[a] != latency[b]:
			if latency[a] < latency[b] {
				return -1
			}
			return 1
		case throughput[a] > throughput[b]:
			return -1
		case throughput[a] < throughput[b]:
			return 1
		}
		return 0
	})
	var front []int
	best := math.Inf(-1)
	for _, i := range idx {
		if throughput[i] > best {
			front = append(front, i)
			best = throughput[i]
		}
	}
	return front
}

func writeSweeps(b *strings.Builder, sweeps []*ReportSweep) {
	for k, s := range sweeps {
		rows := s.Result.Rows
		section(b, fmt.Sprintf("sweep-%d", k), "Sweep — "+shortName(s.Name))
		var axes []string
		for _, a := range s.Result.Axes {
			axes = append(axes, "--"+a.Flag)
		}
		fmt.Fprintf(b, "<p class=\"meta\">%d points over %s; the line joins the Pareto front (no other point has both more throughput and less latency).</p>\n",
			len(rows), html.EscapeString(strings.Join(axes, ", ")))
		tput := make([]float64, len(rows))
		for i, r := range rows {
			tput[i] = r.Metrics.OutputThroughput
		}
		b.WriteString(`<div class="grid">`)
		for _, m := range []struct {
			id, title string
			get       func(*PointMetrics) float64
		}{
			{"ttft", "P99 TTFT", func(p *PointMetrics) float64 { return p.TTFTP99 }},
			{"tpot", "P99 TPOT", func(p *PointMetrics) float64 { return p.TPOTP99 }},
			{"itl", "P99 ITL", func(p *PointMetrics) float64 { return p.ITLP99 }},
			{"e2el", "P99 E2EL", func(p *PointMetrics) float64 { return p.E2ELP99 }},
		} {
			lat := make([]float64, len(rows))
			for i := range rows {
				lat[i] = m.get(&rows[i].Metrics)
			}
			front := paretoFront(lat, tput)
			fx, fy := make([]float64, len(front)), make([]float64, len(front))
			for j, i := range front {
				fx[j], fy[j] = lat[i], tput[i]
			}
			x1 := 0.0
			for _, v := range lat {
				if !math.IsNaN(v) {
					x1 = max(x1, v)
				}
			}
			c := &svgChart{ID: fmt.Sprintf("sweep-%d-%s", k, m.id), Title: "Output throughput vs " + m.title,
				XLabel: m.title + " (ms)", YLabel: "tokens/s", X0: 0, X1: x1 * 1.05,
				Lines: []svgLine{
					{Name: "Pareto front", Color: chartColor(1), X: fx, Y: fy},
					{Name: "points", Color: chartColor(0), X: lat, Y: tput, Dots: true},
				}}
			c.render(b)
		}
		b.WriteString("</div>\n")
		b.WriteString(`<table class="summary"><thead><tr><th>Point</th><th>Output tok/s</th><th>Req/s</th><th>P99 TTFT (ms)</th><th>P99 TPOT (ms)</th><th>P99 ITL (ms)</th><th>P99 E2EL (ms)</th><th>Failed</th></tr></thead><tbody>`)
		for _, r := range rows {
			p := r.Metrics
			fmt.Fprintf(b, "<tr><td>%s</td><td class=\"num\">%.2f</td><td class=\"num\">%.2f</td><td class=\"num\">%.2f</td><td class=\"num\">%.2f</td><td class=\"num\">%.2f</td><td class=\"num\">%.2f</td><td class=\"num\">%d</td></tr>\n",
				html.EscapeString(r.Point), p.OutputThroughput, p.RequestThroughput, p.TTFTP99, p.TPOTP99, p.ITLP99, p.E2ELP99, p.Failed)
		}
		b.WriteString("</tbody></table>\n")
	}
}
