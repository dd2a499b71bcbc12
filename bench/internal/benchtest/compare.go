package benchtest

import (
	"testing"

	"github.com/stampede-bench/stampede/bench/search"
)

// CompareSides loads each argument as one side of a comparison.
func CompareSides(t *testing.T, args ...string) []*search.CompareSide {
	t.Helper()
	var sides []*search.CompareSide
	for _, a := range args {
		s, err := search.LoadCompareSide(a)
		if err != nil {
			t.Fatal(err)
		}
		sides = append(sides, s)
	}
	return sides
}

// CompareRow is c's row of metric.
func CompareRow(t *testing.T, c *search.Comparison, metric string) search.ComparisonRow {
	t.Helper()
	for _, r := range c.Rows {
		if r.Metric == metric {
			return r
		}
	}
	t.Fatalf("no row %s", metric)
	return search.ComparisonRow{}
}
