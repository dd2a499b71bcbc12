package bench

import (
	"flag"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/metrics"
)

// go test ./bench -update rewrites the golden files of bench's own blocks
// (testdata/trim, testdata/timeline) from the current code; review the
// diff before committing it. Python's outputs have theirs in bench/pyout.
var update = flag.Bool("update", false, "rewrite golden files in testdata")

const ms = int64(time.Millisecond)

// goldenRun is the fixed 12-request generation run of pyout's report
// goldens (bench/pyout/output_golden_test.go, whose pyref.py the trim
// reference imports): the trimmed and timeline goldens are computed from
// the same requests, so the two copies must stay equal.
func goldenRun() *metrics.RunData {
	d := &metrics.RunData{DurationNs: 5432 * ms}
	for i := range 12 {
		start := int64(i) * 100 * ms
		r := metrics.RequestResult{
			Index: i, PromptLen: 100 + 7*i, StartNs: start, ArrivalNs: start - int64(i%4)*5*ms,
			QueueNs: int64(i%4) * 5 * ms, NumInputSequences: 1,
		}
		switch {
		case i == 4:
			r.Error = "Internal Server Error"
		case i == 9:
			r.Error = "Traceback (most recent call last):\n  ConnectionResetError: [Errno 104]"
			r.TTFTNs = 80 * ms
		default:
			r.Success = true
			r.TTFTNs = int64(60+13*i) * ms
			gaps := 2 + i%5
			if i == 7 {
				gaps = 0
			}
			for g := range gaps {
				r.ITLNs = append(r.ITLNs, int64(20+(i*7+g*3)%17)*ms+int64(i*1357)%1000*1000)
			}
			r.ChunkEvents = len(r.ITLNs) + 1
			r.LatencyNs = r.TTFTNs
			for _, gap := range r.ITLNs {
				r.LatencyNs += gap
			}
			if i%3 != 0 {
				r.OutputTokens = r.ChunkEvents * 2
			}
			r.GeneratedText = strings.Repeat("tok ", r.ChunkEvents) + "é€"
		}
		d.Results = append(d.Results, r)
	}
	return d
}

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
