// Package metricstest gathers recorders' results for tests of the packages
// that record (shard, engine): the run's records sorted by request, copied
// out of the record log so that a test can index them.
package metricstest

import "github.com/stampede-bench/stampede/metrics"

// Merged is a gathered run: its requests in order, and what else the run
// data holds.
type Merged struct {
	metrics.RunData
	Results []metrics.RequestResult
}

// Merge gathers n requests from recorders as the engine does (a request
// no recorder saw is failed "cancelled"); it panics on an error, which
// only a damaged log gives.
func Merge(n int, recorders ...*metrics.Recorder) Merged {
	d, err := metrics.Gather(metrics.SortOptions{Requests: n}, recorders...)
	if err != nil {
		panic(err)
	}
	return Merged{RunData: *d, Results: d.Log.Collect()}
}
