package datasets

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/stampede-bench/stampede/internal/py"
)

// RangeRatio is --random-range-ratio resolved into its input and output
// parts; a single number applies to both.
type RangeRatio struct {
	Input, Output float64
}

// ParseRangeRatio reads --random-range-ratio as Python does: float(s)
// first, else json.loads(s), which must give {"input": r1, "output": r2}.
// Ranges are checked later, when sampling, as in Python.
func ParseRangeRatio(s string) (RangeRatio, error) {
	if f, err := py.ParseFloat(s); err == nil {
		return RangeRatio{f, f}, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return RangeRatio{}, fmt.Errorf("--random-range-ratio %q: want a number in [0, 1) or a JSON object {\"input\": r, \"output\": r}: %v", s, err)
	}
	in, okIn := obj["input"]
	out, okOut := obj["output"]
	if !okIn || !okOut {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, "'"+k+"'")
		}
		sort.Strings(keys)
		return RangeRatio{}, valueError("When range_ratio is a dict it must contain 'input' and 'output' keys, got: [" + strings.Join(keys, ", ") + "]")
	}
	var r RangeRatio
	for _, p := range []struct {
		name string
		raw  json.RawMessage
		dst  *float64
	}{{"input", in, &r.Input}, {"output", out, &r.Output}} {
		if err := json.Unmarshal(p.raw, p.dst); err != nil {
			var text string
			if json.Unmarshal(p.raw, &text) != nil {
				return RangeRatio{}, fmt.Errorf("--random-range-ratio %q: %q must be a number, got %s", s, p.name, p.raw)
			}
			f, err := py.ParseFloat(text)
			if err != nil {
				return RangeRatio{}, fmt.Errorf("--random-range-ratio %q: %q must be a number, got %s", s, p.name, p.raw)
			}
			*p.dst = f
		}
	}
	return r, nil
}

// check is get_sampling_params' range test.
func (r RangeRatio) check() error {
	if !(r.Input >= 0 && r.Input < 1) {
		return valueError("input_range_ratio must be in [0, 1).")
	}
	if !(r.Output >= 0 && r.Output < 1) {
		return valueError("output_range_ratio must be in [0, 1).")
	}
	return nil
}
