package search

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/stampede-bench/stampede/bench/plan"
)

// warningPrefix starts every warning a run prints, Python's and stampede's.
var warningPrefix = []byte("WARNING: ")

// onceWarnings passes writes through to w, except a warning written
// through it before: the runs of one search sample the same dataset with
// the same flags, so each would repeat the warnings of the first. A
// warning must come in one Write, as fmt.Fprintf and fmt.Fprintln write
// it; only a Write identical to an earlier warning is dropped. It may be
// written from several goroutines (a run's progress bar beside its
// phases), as the writer under it may.
type onceWarnings struct {
	w    io.Writer
	mu   sync.Mutex
	seen map[string]bool
}

func newOnceWarnings(w io.Writer) *onceWarnings {
	return &onceWarnings{w: w, seen: map[string]bool{}}
}

func (o *onceWarnings) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, warningPrefix) {
		o.mu.Lock()
		seen := o.seen[string(p)]
		o.seen[string(p)] = true
		o.mu.Unlock()
		if seen {
			return len(p), nil
		}
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
