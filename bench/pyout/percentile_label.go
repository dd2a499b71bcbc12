package pyout

import (
	"math"
	"strconv"

	"github.com/stampede-bench/stampede/internal/py"
)

// PercentileWord is the percentile's text in labels and keys, Python's
// `str(int(p)) if int(p) == p else str(p)`: "99", "99.9", "12.5".
func PercentileWord(p float64) string {
	if p == math.Trunc(p) && !math.IsInf(p, 0) {
		if p == 0 {
			return "0" // int(-0.0) is 0
		}
		return strconv.FormatFloat(p, 'f', 0, 64)
	}
	return py.FloatRepr(p)
}
