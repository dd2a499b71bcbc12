package search

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/internal/py"
)

// OwnFlag is a flag of stampede's run-based commands (sweep, slo,
// --num-runs) that the `vllm bench serve` parser must not see.
type OwnFlag struct {
	Name string // long name without dashes
	// Value is set for a flag taking a value; a switch takes none.
	Value bool
	// Repeat allows the flag more than once.
	Repeat bool
}

// SplitOwnFlags takes own's flags ("--name value" or "--name=value") out
// of args, leaving serve's in their order. A repeated non-Repeat flag
// keeps its last value, as argparse does.
func SplitOwnFlags(args []string, own []OwnFlag) (map[string][]string, []string, error) {
	found := map[string][]string{}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		var f *OwnFlag
		for j := range own {
			if strings.HasPrefix(a, "--") && own[j].Name == name {
				f = &own[j]
			}
		}
		if f == nil {
			rest = append(rest, a)
			continue
		}
		switch {
		case !f.Value && hasValue:
			return nil, nil, &py.UsageError{Msg: fmt.Sprintf("argument --%s: ignored explicit argument '%s'", name, value)}
		case !f.Value:
			value = "true"
		case !hasValue:
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				return nil, nil, &py.UsageError{Msg: fmt.Sprintf("argument --%s: expected one argument", name)}
			}
			i++
			value = args[i]
		}
		if f.Repeat {
			found[name] = append(found[name], value)
		} else {
			found[name] = []string{value}
		}
	}
	return found, rest, nil
}

// ParseNumRuns reads --num-runs: a whole number of runs, at least 1.
func ParseNumRuns(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, &py.UsageError{Msg: fmt.Sprintf("argument --num-runs: invalid value %q: a whole number of runs, 1 or more", s)}
	}
	return n, nil
}
