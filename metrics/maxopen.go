package metrics

import (
	"cmp"
	"slices"
)

// MaxOpen is the most of results open at once, each from its start to its
// end (start + latency); false when none ran. A request ending as another
// starts is not counted open with it, nor one of no latency. The engine's
// tests and a cluster agent's memory (its most open streams) share it.
func MaxOpen(results []RequestResult) (int, bool) {
	type edge struct {
		at    int64
		delta int
	}
	edges := make([]edge, 0, 2*len(results))
	for i := range results {
		if r := &results[i]; r.LatencyNs > 0 {
			edges = append(edges, edge{r.StartNs, 1}, edge{r.StartNs + r.LatencyNs, -1})
		}
	}
	if len(edges) == 0 {
		return 0, false
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // ends before starts
	})
	open, most := 0, 0
	for _, e := range edges {
		open += e.delta
		most = max(most, open)
	}
	return most, true
}
