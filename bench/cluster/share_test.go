package cluster

import (
	"slices"
	"testing"
)

// An agent's share is every size-th request from its index, at its time
// on the global schedule.
func TestShareOfTakesEverySizethRequest(t *testing.T) {
	offsets := []int64{10, 20, 30, 40, 50}
	for _, c := range []struct {
		index int
		want  []int64
	}{{0, []int64{10, 40}}, {1, []int64{20, 50}}, {2, []int64{30}}} {
		if got := shareOf(offsets, 3, c.index); !slices.Equal(got, c.want) {
			t.Errorf("agent %d of 3: %v, want %v", c.index, got, c.want)
		}
		for i := range offsets {
			if Shares(i, 3, c.index) != (i%3 == c.index) {
				t.Errorf("Shares(%d, 3, %d) = %v", i, c.index, !(i%3 == c.index))
			}
		}
	}
}
