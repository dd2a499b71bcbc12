package report

import (
	"strconv"

	"github.com/stampede-bench/stampede/bench/pyout"
)

// networkRTTView is the report's section of the sidecar's network_rtt:
// the kernel's round-trip times of the run's connections as a table and
// as every connection's RTT sorted, set beside the median TTFT.
type networkRTTView struct {
	Heading     string
	Connections int
	Table       *statsTable
	Chart       *chartView
	// Beside puts the median minimum RTT beside the median TTFT in
	// words; "" without a TTFT.
	Beside string
}

func newNetworkRTTView(r *ReportRun, many bool) *networkRTTView {
	var s SidecarNetworkRTT
	if !r.sidecarSection("network_rtt", &s) || s.Connections == 0 {
		return nil
	}
	v := &networkRTTView{Heading: runHeading(r, many), Connections: s.Connections}
	// Round trips on a LAN are tens of µs: three decimals of a ms.
	v.Table = newStatsTable(3,
		statsRow{"Smoothed round-trip time (tcpi_rtt)", "network_rtt.rtt", s.RTT},
		statsRow{"Least round-trip time seen (tcpi_min_rtt)", "network_rtt.min_rtt", s.MinRTT})
	if ttft, ok := r.number(pyout.TTFT.Figure(pyout.StatMedian).Key); ok {
		v.Beside = "The median least round trip, " + strconv.FormatFloat(s.MinRTT.MedianMs, 'f', 3, 64) +
			" ms, is what the network alone adds to a TTFT (median " + fixed2(ttft) +
			" ms): one round trip carries the request out and brings the first token back."
	}
	v.Chart = rttChart(s.RTTSortedMs, s.MinRTTSortedMs)
	return v
}

// rttChart draws the sorted round trips as bars, one per listed value
// across the share of connections it stands for, with the least round
// trips as a step line over them; nil without the lists (a sidecar
// written before they were kept).
func rttChart(rtt, minRTT []float64) *chartView {
	if len(rtt) == 0 {
		return nil
	}
	c := &svgChart{ID: "network-rtt", Title: "Round-trip time of each connection, sorted", XLabel: "% of connections",
		YLabel: "round trip (ms)", X0: 0, X1: 100, W: 900, H: 240}
	rank := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = (float64(i) + 0.5) * 100 / float64(n)
		}
		return xs
	}
	c.Lines = append(c.Lines, svgLine{Name: "smoothed (tcpi_rtt)", Color: chartColor(0), X: rank(len(rtt)), Y: rtt, Bars: true, BarW: 100 / float64(len(rtt))})
	if len(minRTT) > 0 {
		c.Lines = append(c.Lines, svgLine{Name: "least (tcpi_min_rtt)", Color: chartColor(1), X: rank(len(minRTT)), Y: minRTT, Step: true})
	}
	return c.view()
}
