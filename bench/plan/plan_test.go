package plan

import "testing"

// TestAgentConcurrencySplit: the shares add up to --max-concurrency, and
// differ by at most one, the larger ones on the lowest indices.
func TestAgentConcurrencySplit(t *testing.T) {
	for _, tc := range []struct{ total, n int }{{10, 3}, {9, 3}, {4, 4}, {10000, 7}} {
		sum, prev := 0, tc.total
		for i := range tc.n {
			c := &Plan{AgentIndex: i}
			c.ClusterSize, c.MaxConcurrency = tc.n, &tc.total
			share := c.AgentConcurrency()
			if share > prev || share < tc.total/tc.n || share > tc.total/tc.n+1 {
				t.Errorf("%d over %d: agent %d gets %d after %d", tc.total, tc.n, i, share, prev)
			}
			sum, prev = sum+share, share
		}
		if sum != tc.total {
			t.Errorf("%d over %d: shares add up to %d", tc.total, tc.n, sum)
		}
	}
}
