package search

import (
	"bytes"
	"fmt"
	"io"

	"github.com/stampede-bench/stampede/bench/plan"
)

// warningPrefix starts every warning a run prints, Python's and stampede's.
var warningPrefix = []byte("WARNING: ")

// onceWarnings passes writes through to w, except a warning written
// through it before: the runs of one search sample the same dataset with
// the same flags, so each would repeat the warnings of the first. A
// warning must come in one Write, as fmt.Fprintf and fmt.Fprintln write
// it; only a Write identical to an earlier warning is dropped.
type onceWarnings struct {
	w    io.Writer
	seen map[string]bool
}

func newOnceWarnings(w io.Writer) *onceWarnings {
	return &onceWarnings{w: w, seen: map[string]bool{}}
}

func (o *onceWarnings) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, warningPrefix) {
		if o.seen[string(p)] {
			return len(p), nil
		}
		o.seen[string(p)] = true
	}
	return o.w.Write(p)
}

// writeParseWarnings prints, once for the search, the warnings parsing
// the serve flags raised (the runs' own parses raise them again).
func writeParseWarnings(w io.Writer, base *plan.Plan) {
	for _, msg := range base.Warnings {
		fmt.Fprintf(w, "%s%s\n", warningPrefix, msg)
	}
}
