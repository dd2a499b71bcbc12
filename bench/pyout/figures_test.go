package pyout

import (
	"slices"
	"testing"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/metrics"
)

func TestSectionFigure(t *testing.T) {
	tests := []struct {
		sec   Section
		stat  Statistic
		label string
		key   string
	}{
		{TTFT, StatMean, "Mean TTFT (ms):", "mean_ttft_ms"},
		{TPOT, StatMedian, "Median TPOT (ms):", "median_tpot_ms"},
		{ITL, StatStd, "Std ITL (ms):", "std_itl_ms"},
		{E2EL, StatPercentile(99.9), "P99.9 E2EL (ms):", "p99.9_e2el_ms"},
		{E2ELInclQueue, StatPercentile(50), "P50 E2EL incl. Client Queue (ms):", "p50_e2el_including_client_queue_ms"},
	}
	for _, tc := range tests {
		f := tc.sec.Figure(tc.stat)
		if f.Label() != tc.label || f.Key != tc.key {
			t.Errorf("%s %s: %q %q, want %q %q", tc.sec.Key, tc.stat.Name, f.Label(), f.Key, tc.label, tc.key)
		}
	}
}

func TestPercentileOfKey(t *testing.T) {
	tests := []struct {
		sec Section
		key string
		p   float64
		ok  bool
	}{
		{TTFT, "p99_ttft_ms", 99, true},
		{TTFT, "p99.9_ttft_ms", 99.9, true},
		{E2EL, "p12.5_e2el_ms", 12.5, true},
		{E2EL, "probe_p99_e2el_ms", 0, false},
		{E2EL, "probe_median_e2el_ms", 0, false},
		{E2EL, "p99_e2el_including_client_queue_ms", 0, false},
		{TTFT, "p99.0_ttft_ms", 0, false}, // StatPercentile writes "p99"
		{TTFT, "mean_ttft_ms", 0, false},
		{TTFT, "p99_tpot_ms", 0, false},
	}
	for _, tc := range tests {
		p, ok := tc.sec.PercentileOfKey(tc.key)
		if p != tc.p || ok != tc.ok {
			t.Errorf("%s.PercentileOfKey(%q) = %v, %v; want %v, %v", tc.sec.Key, tc.key, p, ok, tc.p, tc.ok)
		}
	}
}

// TestPyTorchMetricKeys pins Python's record order.
func TestPyTorchMetricKeys(t *testing.T) {
	want := []string{
		"median_ttft_ms", "mean_ttft_ms", "std_ttft_ms", "p99_ttft_ms",
		"mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms",
		"median_itl_ms", "mean_itl_ms", "std_itl_ms", "p99_itl_ms",
	}
	if !slices.Equal(pytorchMetrics, want) {
		t.Errorf("pytorchMetrics = %q, want %q", pytorchMetrics, want)
	}
}

// TestSideFieldForms: a side report's counts are integers and its other
// figures floats, so each row prints as Python's "{:<10}" or
// "{:<10.2f}" does for that value.
func TestSideFieldForms(t *testing.T) {
	var fields []SideField
	fields = append(fields, probeFields(&metrics.ProbeStats{})...)
	fields = append(fields, specDecodeFields(&metrics.SpecDecodeStats{})...)
	fields = append(fields, diffusionFields(&metrics.DiffusionStats{})...)
	for _, f := range fields {
		if _, integer := f.Value.(int64); integer != f.Count {
			t.Errorf("%s: value %T, Count %v", f.Name, f.Value, f.Count)
		}
	}
}

// The names --percentile-metrics is checked against are the sections'
// keys, in their order.
func TestPercentileMetricNamesAreSectionKeys(t *testing.T) {
	var keys []string
	for _, sec := range []Section{TTFT, TPOT, ITL, E2EL, ClientQueueTime, E2ELInclQueue} {
		keys = append(keys, sec.Key)
	}
	if !slices.Equal(keys, plan.PercentileMetricNames) {
		t.Errorf("section keys %q, plan.PercentileMetricNames %q", keys, plan.PercentileMetricNames)
	}
}
