package report

import (
	"slices"
	"strconv"

	"github.com/stampede-bench/stampede/bench/pyout"
)

// statsTable is a table of latency figures in milliseconds, one row per
// figure and one column per statistic (mean, median, std, then each
// percentile any row has, ascending), written by assets/stats_table.html.
type statsTable struct {
	Columns []string
	Rows    []statsLine
}

// statsLine is one figure's row: its words, the sidecar or result key it
// came from (shown on hover), and its values ("" where it has none).
type statsLine struct {
	Label, Key string
	Values     []string
}

// statsRow is a figure given to newStatsTable.
type statsRow struct {
	label, key string
	stats      SidecarStats
}

// newStatsTable tables rows, each value with digits decimals.
func newStatsTable(digits int, rows ...statsRow) *statsTable {
	ms := func(v float64) string { return strconv.FormatFloat(v, 'f', digits, 64) }
	var ps []float64
	for _, r := range rows {
		for _, p := range r.stats.Percentiles {
			if !slices.Contains(ps, p.P) {
				ps = append(ps, p.P)
			}
		}
	}
	slices.Sort(ps)
	t := &statsTable{Columns: []string{"Mean (ms)", "Median (ms)", "Std (ms)"}}
	for _, p := range ps {
		t.Columns = append(t.Columns, pyout.StatPercentile(p).Name+" (ms)")
	}
	for _, r := range rows {
		line := statsLine{Label: r.label, Key: r.key, Values: []string{ms(r.stats.MeanMs), ms(r.stats.MedianMs), ms(r.stats.StdMs)}}
		for _, p := range ps {
			v := ""
			if i := slices.IndexFunc(r.stats.Percentiles, func(q SidecarPercentile) bool { return q.P == p }); i >= 0 {
				v = ms(r.stats.Percentiles[i].ValueMs)
			}
			line.Values = append(line.Values, v)
		}
		t.Rows = append(t.Rows, line)
	}
	return t
}

// resultStats reads a latency section's statistics from Python's result
// JSON, at the percentiles given (those the run was asked for); false
// when the result lacks its mean.
func (r *ReportRun) resultStats(sec pyout.Section, percentiles []SidecarPercentile) (SidecarStats, bool) {
	var s SidecarStats
	var ok bool
	if s.MeanMs, ok = r.number(sec.Figure(pyout.StatMean).Key); !ok {
		return s, false
	}
	s.MedianMs, _ = r.number(sec.Figure(pyout.StatMedian).Key)
	s.StdMs, _ = r.number(sec.Figure(pyout.StatStd).Key)
	for _, p := range percentiles {
		if v, ok := r.number(sec.Figure(pyout.StatPercentile(p.P)).Key); ok {
			s.Percentiles = append(s.Percentiles, SidecarPercentile{p.P, v})
		}
	}
	return s, true
}
