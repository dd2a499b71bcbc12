package report

import (
	"flag"
	"time"

	"github.com/stampede-bench/stampede/bench/pyout/pyouttest"
	"github.com/stampede-bench/stampede/metrics"
)

// go test ./bench/report -update rewrites the golden files of stampede's
// own outputs (testdata/trim, testdata/timeline) from the current code; review the
// diff before committing it. Python's outputs have theirs in bench/pyout.
var update = flag.Bool("update", false, "rewrite golden files in testdata")

const ms = int64(time.Millisecond)

// goldenRun is the run pyout's report goldens are computed from (its
// pyref.py, which the trim reference imports, rebuilds the same requests).
func goldenRun() *metrics.RunData { return pyouttest.GoldenRun() }
