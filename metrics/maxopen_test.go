package metrics

import "testing"

// MaxOpen counts the requests open at once: one ending as another starts
// is not open with it, nor is one of no latency.
func TestMaxOpen(t *testing.T) {
	results := []RequestResult{
		{StartNs: 0, LatencyNs: 10},
		{StartNs: 5, LatencyNs: 10},
		{StartNs: 10, LatencyNs: 3}, // starts as the first ends
		{StartNs: 7, LatencyNs: 0},  // never open
	}
	if got, ok := MaxOpen(LogOf(results...)); !ok || got != 2 {
		t.Errorf("MaxOpen = %d, %v; want 2", got, ok)
	}
	if got, ok := MaxOpen(LogOf(results[3:]...)); ok || got != 0 {
		t.Errorf("none ran: %d, %v", got, ok)
	}
}
