package shard

import "sync/atomic"

// Queue is the hand-over from the arrival schedule to the shards. The
// schedule releases requests in order (Release, one producer); any shard
// with a free connection slot takes the oldest released request (take), so
// the order is FIFO across all shards. Queue also holds the global
// concurrency cap: a request is taken only while fewer than the cap are in
// flight, and the shard that finishes one frees its slot (finish) and takes
// the next at once, so the cap never sits idle while requests wait.
//
// Request positions double as queue positions: release order is request
// order (spec §c dispatches in dataset order), so the queue needs no slots,
// only the arrival time of each position.
type Queue struct {
	arrivalNs []int64
	released  atomic.Int64 // positions [0, released) are released
	next      atomic.Int64 // positions [0, next) have been taken
	inflight  atomic.Int64
	limit     int64 // 0 = no cap
	closed    atomic.Bool
	finished  atomic.Int64
	done      chan struct{} // closed when every request finished
}

// NewQueue makes a queue for n requests with at most limit in flight
// (0 = unlimited).
func NewQueue(n, limit int) *Queue {
	q := &Queue{arrivalNs: make([]int64, n), limit: int64(limit), done: make(chan struct{})}
	if n == 0 {
		close(q.done)
	}
	return q
}

// Len is the number of requests the queue was made for.
func (q *Queue) Len() int { return len(q.arrivalNs) }

// Release makes request i available, arrived at arrivalNs (run time).
// Releases must come from one goroutine, in order i = 0, 1, 2, ...
func (q *Queue) Release(i int, arrivalNs int64) {
	q.arrivalNs[i] = arrivalNs
	q.released.Store(int64(i) + 1)
}

// Close stops handing out requests; Released requests not yet taken stay
// untaken (the caller accounts for them).
func (q *Queue) Close() { q.closed.Store(true) }

// Taken returns how many requests shards have taken.
func (q *Queue) Taken() int { return int(q.next.Load()) }

// Released returns how many requests the schedule has released.
func (q *Queue) Released() int { return int(q.released.Load()) }

// ArrivalNs returns request i's arrival time; valid once i was released.
func (q *Queue) ArrivalNs(i int) int64 { return q.arrivalNs[i] }

// InFlight returns how many taken requests have not finished.
func (q *Queue) InFlight() int { return int(q.inflight.Load()) }

// take returns the oldest released request and counts it in flight, or
// ok=false when none is waiting, the cap is reached, or the queue is closed.
func (q *Queue) take() (i int, arrivalNs int64, ok bool) {
	for {
		if q.closed.Load() {
			return 0, 0, false
		}
		h := q.next.Load()
		if h >= q.released.Load() {
			return 0, 0, false
		}
		if !q.reserve() {
			// Every slot is held by a running request; whichever shard
			// finishes one takes the next.
			return 0, 0, false
		}
		if q.next.CompareAndSwap(h, h+1) {
			return int(h), q.arrivalNs[h], true
		}
		// Another shard took position h first. Give the slot back and look
		// again: a shard that held a slot only briefly must retry, or a
		// shard that saw the cap full because of it could sleep on work.
		q.inflight.Add(-1)
	}
}

func (q *Queue) reserve() bool {
	if q.limit <= 0 {
		q.inflight.Add(1)
		return true
	}
	for {
		v := q.inflight.Load()
		if v >= q.limit {
			return false
		}
		if q.inflight.CompareAndSwap(v, v+1) {
			return true
		}
	}
}

// finish frees the slot of a request that ended.
func (q *Queue) finish() {
	q.inflight.Add(-1)
	if q.finished.Add(1) == int64(len(q.arrivalNs)) {
		close(q.done)
	}
}

// Finished returns how many taken requests have ended.
func (q *Queue) Finished() int { return int(q.finished.Load()) }

// Done is closed when every request of the queue has ended.
func (q *Queue) Done() <-chan struct{} { return q.done }
