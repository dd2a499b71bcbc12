package report

import (
	"flag"
	"os/exec"
	"path/filepath"
	"testing"
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

// runPyRef runs dir/pyref.py, which checks the golden files in dir against
// its own Python computation and exits non-zero on a difference.
func runPyRef(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command(python3(t), "pyref.py")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: %v\n%s", filepath.Join(dir, "pyref.py"), err, out)
	}
}

// python3 is the path of the python3 interpreter; the test is skipped
// when there is none.
func python3(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	return python
}
