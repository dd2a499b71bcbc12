package cluster

import (
	"testing"

	"github.com/stampede-bench/stampede/engine"
)

// An agent drops every request's encoded bytes once its share is taken
// (the share's own are held by the engine's copy), and calls Shed once.
func TestShedDropsEveryRequestsBytes(t *testing.T) {
	wire := []engine.Request{{Index: 0, Wire: []byte("a"), PromptLen: 3}, {Index: 1, Wire: []byte("b"), PromptLen: 4}}
	share := shareOf(wire, []int64{10, 20}, 2, 1)
	calls := 0
	a := &Agent{Wire: wire, Shed: func() { calls++ }}
	a.shed()
	for i, q := range a.Wire {
		if q.Wire != nil {
			t.Errorf("request %d still holds %q", i, q.Wire)
		}
		if q.PromptLen != 3+i {
			t.Errorf("request %d: prompt length %d, want %d", i, q.PromptLen, 3+i)
		}
	}
	if len(share) != 1 || string(share[0].Wire) != "b" || share[0].OffsetNs != 20 {
		t.Errorf("agent 1 of 2's share after the shed: %+v, want request 1 holding \"b\" at 20 ns", share)
	}
	if calls != 1 {
		t.Errorf("Shed called %d times, want 1", calls)
	}
}
