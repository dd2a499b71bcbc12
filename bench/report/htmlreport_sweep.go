package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stampede-bench/stampede/bench/pyout"
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

// sweepView is one sweep's section: throughput against each P99 latency
// with the Pareto front, and the table of its points.
type sweepView struct {
	ID, Name string
	Points   int
	Axes     string
	Charts   []*chartView
	Columns  []string
	Rows     []sweepLine
}

type sweepLine struct {
	Point  string
	Values []string
	Failed int
}

// sweepLatencies are the latencies a sweep is drawn against, each point's
// P99.
var sweepLatencies = []struct {
	sec pyout.Section
	get func(*PointMetrics) float64
}{
	{pyout.TTFT, func(p *PointMetrics) float64 { return p.TTFTP99 }},
	{pyout.TPOT, func(p *PointMetrics) float64 { return p.TPOTP99 }},
	{pyout.ITL, func(p *PointMetrics) float64 { return p.ITLP99 }},
	{pyout.E2EL, func(p *PointMetrics) float64 { return p.E2ELP99 }},
}

func sweepViews(sweeps []*ReportSweep) []*sweepView {
	var views []*sweepView
	p99 := pyout.StatPercentile(99)
	for k, s := range sweeps {
		rows := s.Result.Rows
		var axes []string
		for _, a := range s.Result.Axes {
			axes = append(axes, "--"+a.Flag)
		}
		v := &sweepView{ID: fmt.Sprintf("sweep-%d", k), Name: shortName(s.Name), Points: len(rows),
			Axes: strings.Join(axes, ", "), Columns: []string{"Point", "Output tok/s", "Req/s"}}
		tput := make([]float64, len(rows))
		for i, r := range rows {
			tput[i] = r.Metrics.OutputThroughput
		}
		for _, m := range sweepLatencies {
			title := p99.Name + " " + m.sec.Name
			v.Columns = append(v.Columns, m.sec.Figure(p99).Name)
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
			for _, l := range lat {
				if !math.IsNaN(l) {
					x1 = max(x1, l)
				}
			}
			c := &svgChart{ID: fmt.Sprintf("sweep-%d-%s", k, m.sec.Key), Title: "Output throughput vs " + title,
				XLabel: title + " (ms)", YLabel: "tokens/s", X0: 0, X1: x1 * 1.05,
				Lines: []svgLine{
					{Name: "Pareto front", Color: chartColor(1), X: fx, Y: fy},
					{Name: "points", Color: chartColor(0), X: lat, Y: tput, Dots: true},
				}}
			v.Charts = append(v.Charts, c.view())
		}
		v.Columns = append(v.Columns, "Failed")
		for _, r := range rows {
			p := r.Metrics
			v.Rows = append(v.Rows, sweepLine{Point: r.Point, Failed: p.Failed, Values: []string{
				fixed2(p.OutputThroughput), fixed2(p.RequestThroughput),
				fixed2(p.TTFTP99), fixed2(p.TPOTP99), fixed2(p.ITLP99), fixed2(p.E2ELP99),
			}})
		}
		views = append(views, v)
	}
	return views
}
