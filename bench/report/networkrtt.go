package report

import (
	"slices"

	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
)

// SidecarNetworkRTT is the sidecar's network_rtt section: the kernel's
// round-trip times of the run's connections (TCP_INFO's tcpi_rtt, the
// smoothed estimate, and tcpi_min_rtt, the least it saw), read once per
// connection when it closed, never per token. Set beside TTFT, min_rtt
// says how much of it the network alone explains: one round trip carries
// the request and brings the first token back.
type SidecarNetworkRTT struct {
	Connections int          `json:"connections"`
	RTT         SidecarStats `json:"rtt"`
	MinRTT      SidecarStats `json:"min_rtt"`
	// RTTSortedMs and MinRTTSortedMs are the connections' round trips in
	// ms, each list sorted ascending on its own, thinned to at most
	// rttSortedPoints evenly ranked values (all of them when fewer): what
	// the report draws the distribution from.
	RTTSortedMs    []float64 `json:"rtt_sorted_ms"`
	MinRTTSortedMs []float64 `json:"min_rtt_sorted_ms"`
}

// rttSortedPoints bounds the sorted lists: a chart 500 px wide shows no
// more, and 10,000 connections keep the sidecar small.
const rttSortedPoints = 200

// NewSidecarNetworkRTT is the section of the shards' connections; nil
// when none reported a round trip (the goroutine TLS transport reads
// none).
func NewSidecarNetworkRTT(shards []engine.ShardHealth, percentiles []float64) *SidecarNetworkRTT {
	var rtt, minRTT []float64
	for _, s := range shards {
		for _, r := range s.RTTs {
			rtt = append(rtt, float64(r.RTTUs)/1e6)
			minRTT = append(minRTT, float64(r.MinRTTUs)/1e6)
		}
	}
	if len(rtt) == 0 {
		return nil
	}
	return &SidecarNetworkRTT{Connections: len(rtt),
		RTT: sidecarStats(metrics.Summarize(rtt, percentiles)), MinRTT: sidecarStats(metrics.Summarize(minRTT, percentiles)),
		RTTSortedMs: sortedByRank(rtt, rttSortedPoints), MinRTTSortedMs: sortedByRank(minRTT, rttSortedPoints)}
}

// sortedByRank is sec sorted, in ms, thinned to at most n values by
// quantiles (the charts' own sampling), so the first and the last (the
// least and the most) are always kept.
func sortedByRank(sec []float64, n int) []float64 {
	sorted := slices.Clone(sec)
	slices.Sort(sorted)
	ms, _ := quantiles(sorted, n-1)
	for i := range ms {
		ms[i] *= 1000
	}
	return ms
}
