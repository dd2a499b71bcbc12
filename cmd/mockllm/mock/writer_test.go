package mock

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDueHeap drives the heap the way runDue does (push, replace the top
// with a later time, pop) and checks it always yields the earliest entry.
func TestDueHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h dueHeap
	var model []int64 // the same due times, kept sorted
	for i := 0; i < 5000; i++ {
		switch op := r.IntN(3); {
		case op == 0 || len(model) == 0:
			d := r.Int64N(1000)
			h.push(dueEntry{dueNs: d})
			model = append(model, d)
			slices.Sort(model)
		case op == 1:
			d := h.top().dueNs + r.Int64N(100)
			h.replaceTop(d)
			model[0] = d
			slices.Sort(model)
		default:
			h.pop()
			model = model[1:]
		}
		if h.Len() != len(model) || (h.Len() > 0 && h.top().dueNs != model[0]) {
			t.Fatalf("step %d: heap top %v of %d, want %v of %d", i, h.top(), h.Len(), model[0], len(model))
		}
	}
}
