package shard

import (
	"strconv"
	"sync/atomic"
)

// Budget bounds the response bytes that all requests of a run hold at once
// without having parsed them: the unfinished SSE event of a stream (a line
// without its end, data lines before the blank line) and the body of a
// non-streaming answer, which is parsed only once complete. Each stream's
// own bound (sse.MaxEventBytes) stops one runaway event; this one stops a
// thousand of them from adding up. Shards and TLS workers charge it as
// their responses grow and shrink; a request whose growth takes the total
// over the limit fails, giving its bytes back, and the run goes on.
//
// Well-behaved streams hold next to nothing: an OpenAI chunk is a few
// hundred bytes and usually arrives whole in one read, so only the tail of
// a read that splits an event is held, until the next read.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// DefaultBudgetBytes is the default of --max-buffered-bytes. It is far
// above what honest answers hold at once (10,000 streams each holding a
// split 1 KiB chunk use 10 MB; 32 embedding bodies of 1 MiB received
// halfway, 16 MiB), and it keeps a client facing 1,000 endless lines near
// 150 MB of memory: what a stream holds grows by reallocation, so the heap
// briefly holds up to about four times the budget before the collector
// catches up.
const DefaultBudgetBytes = 32 << 20

// NewBudget returns a budget of limit bytes; limit <= 0 means no budget
// (nil, which every method accepts).
func NewBudget(limit int64) *Budget {
	if limit <= 0 {
		return nil
	}
	return &Budget{limit: limit}
}

// Limit returns the budget's size, 0 for no budget.
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// Used returns the bytes held now over all requests.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// charge adds delta (negative to give bytes back) and reports the new
// total and whether it is within the limit.
func (b *Budget) charge(delta int64) (total int64, ok bool) {
	if b == nil || delta == 0 {
		return 0, true
	}
	total = b.used.Add(delta)
	return total, total <= b.limit
}

// byteCount writes n bytes for an error text: exact below 1 KiB, else in
// KiB, MiB or GiB with one decimal.
func byteCount(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 2; m /= unit {
		div *= unit
		exp++
	}
	return strconv.FormatFloat(float64(n)/float64(div), 'f', 1, 64) + " " + [...]string{"KiB", "MiB", "GiB"}[exp]
}
