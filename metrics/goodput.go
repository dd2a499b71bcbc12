package metrics

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stampede-bench/stampede/internal/py"
)

// GoodputMetrics are the per-request metrics a --goodput SLO may name, in
// Python's order (VALID_NAMES).
var GoodputMetrics = []string{"ttft", "tpot", "e2el"}

// errGoodputFormat is Python's parse_goodput error text, word for word.
//
//lint:ignore ST1005 the text is Python's, which users and scripts match.
var errGoodputFormat = errors.New("Invalid format found for service level objectives. " +
	`Specify service level objectives for goodput as "KEY:VALUE" ` +
	"pairs, where the key is a metric name, and the value is a " +
	"number in milliseconds.")

// ParseGoodput parses --goodput KEY:VALUE pairs (VALUE in milliseconds) as
// Python's parse_goodput and check_goodput_args do, with their messages:
// every pair must split on ":" into exactly two parts whose value Python's
// float() accepts; then, in first-appearance order (a repeated key keeps
// its last value), the key must be ttft, tpot or e2el and the value must
// not be negative. No pairs give an empty, non-nil map.
func ParseGoodput(pairs []string) (map[string]float64, error) {
	slo := make(map[string]float64, len(pairs))
	var order []string
	for _, pair := range pairs {
		parts := strings.Split(pair, ":")
		if len(parts) != 2 {
			return nil, errGoodputFormat
		}
		v, err := py.ParseFloat(parts[1])
		if err != nil {
			return nil, errGoodputFormat
		}
		if _, seen := slo[parts[0]]; !seen {
			order = append(order, parts[0])
		}
		slo[parts[0]] = v
	}
	for _, name := range order {
		v := slo[name]
		if !isGoodputMetric(name) {
			//lint:ignore ST1005 the text is Python's, which users and scripts match.
			return nil, fmt.Errorf("Invalid metric name found, %s: %s. "+
				"The service level objective name should be one of "+
				"['ttft', 'tpot', 'e2el']. ", name, py.FloatRepr(v))
		}
		if v < 0 {
			//lint:ignore ST1005 the text is Python's, which users and scripts match.
			return nil, fmt.Errorf("Invalid value found, %s: %s. "+
				"The service level objective value should be non-negative.",
				name, py.FloatRepr(v))
		}
	}
	return slo, nil
}

func isGoodputMetric(name string) bool {
	for _, m := range GoodputMetrics {
		if m == name {
			return true
		}
	}
	return false
}

// ParsePercentiles parses --metric-percentiles ("50,90,99.9") as Python's
// [float(p) for p in s.split(",")], then requires each value to lie in
// [0, 100], which np.percentile would otherwise reject after the run.
func ParsePercentiles(s string) ([]float64, error) {
	pieces := strings.Split(s, ",")
	out := make([]float64, 0, len(pieces))
	for _, piece := range pieces {
		p, err := py.ParseFloat(piece)
		if err != nil {
			return nil, fmt.Errorf("--metric-percentiles: could not convert string to float: '%s'", piece)
		}
		if err := checkPercentile(p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func checkPercentile(p float64) error {
	if !(p >= 0 && p <= 100) {
		return fmt.Errorf("--metric-percentiles: percentile %s is outside [0, 100]", py.FloatRepr(p))
	}
	return nil
}
