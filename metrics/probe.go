package metrics

import "slices"

// ProbeStats summarises the side probe requests (--probe-request-rate):
// how many succeeded and failed, and the median, 99th percentile and
// maximum of the successful ones' E2EL in milliseconds.
type ProbeStats struct {
	Completed    int
	Failed       int
	MedianE2ELMs float64
	P99E2ELMs    float64
	MaxE2ELMs    float64
}

// ComputeProbes summarises probe results as Python does; it returns nil
// when no probe succeeded, and then the report shows no probe block.
func ComputeProbes(results []RequestResult) *ProbeStats {
	var lats []float64
	for i := range results {
		if results[i].Success {
			lats = append(lats, Seconds(results[i].LatencyNs))
		}
	}
	if len(lats) == 0 {
		return nil
	}
	sorted := slices.Clone(lats)
	slices.Sort(sorted)
	return &ProbeStats{
		Completed:    len(lats),
		Failed:       len(results) - len(lats),
		MedianE2ELMs: npMedianSorted(sorted) * 1000,
		P99E2ELMs:    npPercentileSorted(sorted, 99) * 1000,
		MaxE2ELMs:    sorted[len(sorted)-1] * 1000,
	}
}
