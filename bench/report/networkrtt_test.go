package report

import (
	"math"
	"testing"

	"github.com/stampede-bench/stampede/engine"
)

func TestNetworkRTT(t *testing.T) {
	if NewSidecarNetworkRTT([]engine.ShardHealth{{}}, []float64{50}) != nil {
		t.Error("a run without round trips has a network_rtt section")
	}
	s := NewSidecarNetworkRTT([]engine.ShardHealth{{RTTs: []engine.ConnRTT{{RTTUs: 100, MinRTTUs: 40}}}, {RTTs: []engine.ConnRTT{{RTTUs: 300, MinRTTUs: 60}}}}, []float64{50})
	if s.Connections != 2 || math.Abs(s.RTT.MeanMs-0.2) > 1e-12 || math.Abs(s.MinRTT.MedianMs-0.05) > 1e-12 {
		t.Errorf("section %+v", s)
	}
}
