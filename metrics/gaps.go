package metrics

import (
	"iter"
	"slices"
)

// NumITLs returns how many inter-token gaps the request has.
func (r *RequestResult) NumITLs() int { return len(r.ITLNs) }

// ITLs yields the request's inter-token gaps in nanoseconds, in order:
// Python's itl list, exactly.
func (r *RequestResult) ITLs() iter.Seq[int64] { return slices.Values(r.ITLNs) }
