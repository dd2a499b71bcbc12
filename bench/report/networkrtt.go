package report

import (
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
}

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
		RTT: sidecarStats(metrics.Summarize(rtt, percentiles)), MinRTT: sidecarStats(metrics.Summarize(minRTT, percentiles))}
}
