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
//
// The queue also holds the requests themselves, from when a loader puts
// one in (Load, one producer, in order) until it ended: a request is taken
// only once it is both released and loaded, so no shard ever finds a
// request whose bytes are not in memory, and the schedule's release time
// stays the request's arrival whatever the loader is doing. They are kept
// a page of pageLen positions at a time; a page is let go once every
// request on it ended, so a run holds the pages between its oldest request
// in flight and its newest loaded one, not one entry per request of the
// run.
type Queue struct {
	arrivalNs []int64
	released  atomic.Int64 // positions [0, released) are released
	loaded    atomic.Int64 // positions [0, loaded) have their request
	next      atomic.Int64 // positions [0, next) have been taken
	inflight  atomic.Int64
	limit     int64 // 0 = no cap
	closed    atomic.Bool
	finished  atomic.Int64
	done      chan struct{} // closed when every request finished

	pages []atomic.Pointer[requestPage]
	// loadedBytes and endedBytes sum the Wire bytes of the requests loaded
	// and of those ended: their difference is what the queue holds.
	loadedBytes, endedBytes atomic.Int64
	// wakeAt, when positive, is the take count the loader waits for
	// (WaitTaken); the take that reaches it sends on wake.
	wakeAt atomic.Int64
	wake   chan struct{}
}

// pageLen is how many positions one page of requests holds: a 64-byte
// Request each, 64 KiB a page.
const pageLen = 1024

// requestPage is the requests of pageLen consecutive positions.
type requestPage struct {
	reqs  [pageLen]Request
	ended atomic.Int32 // requests of the page that ended
}

// NewQueue makes a queue for n requests with at most limit in flight
// (0 = unlimited); the requests come in through Load.
func NewQueue(n, limit int) *Queue {
	q := &Queue{
		arrivalNs: make([]int64, n), limit: int64(limit), done: make(chan struct{}),
		pages: make([]atomic.Pointer[requestPage], (n+pageLen-1)/pageLen), wake: make(chan struct{}, 1),
	}
	if n == 0 {
		close(q.done)
	}
	return q
}

// NewQueueOf makes a queue for reqs, all loaded.
func NewQueueOf(reqs []Request, limit int) *Queue {
	q := NewQueue(len(reqs), limit)
	for i, r := range reqs {
		q.Load(i, r)
	}
	return q
}

// Len is the number of requests the queue was made for.
func (q *Queue) Len() int { return len(q.arrivalNs) }

// Load puts request i in the queue. Loads must come from one goroutine, in
// order i = 0, 1, 2, ...; the queue keeps r until request i ended.
func (q *Queue) Load(i int, r Request) {
	p := q.pages[i/pageLen].Load()
	if p == nil {
		p = new(requestPage)
		q.pages[i/pageLen].Store(p)
	}
	r.pos = i
	p.reqs[i%pageLen] = r
	q.loadedBytes.Add(int64(len(r.Wire)))
	// The store publishes the request to the shard that takes it.
	q.loaded.Store(int64(i) + 1)
}

// Loaded returns how many requests have been loaded.
func (q *Queue) Loaded() int { return int(q.loaded.Load()) }

// Held returns the Wire bytes and the number of the requests loaded and
// not yet ended: those the queue holds.
func (q *Queue) Held() (bytes int64, requests int) {
	ended := q.finished.Load()
	// Read the ends first: a request that ends in between is then counted
	// held, never twice gone.
	endedBytes := q.endedBytes.Load()
	return q.loadedBytes.Load() - endedBytes, int(q.loaded.Load() - ended)
}

// request returns request i; valid from its take until it ended.
func (q *Queue) request(i int) *Request {
	return &q.pages[i/pageLen].Load().reqs[i%pageLen]
}

// Request returns a loaded request i that has not ended, for callers
// outside the shards (accounting after a run).
func (q *Queue) Request(i int) *Request { return q.request(i) }

// WaitTaken blocks until shards have taken at least n requests, or stop is
// closed (it then returns false). One goroutine, the loader, may wait.
func (q *Queue) WaitTaken(n int, stop <-chan struct{}) bool {
	for {
		q.wakeAt.Store(int64(n))
		// Checked after the store: a take that came before it is seen
		// here, one after it sees the store.
		if q.next.Load() >= int64(n) {
			q.wakeAt.Store(0)
			return true
		}
		select {
		case <-q.wake:
		case <-stop:
			q.wakeAt.Store(0)
			return false
		}
	}
}

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

// take returns the oldest request released and loaded and counts it in
// flight, or ok=false when none is waiting, the cap is reached, or the
// queue is closed.
func (q *Queue) take() (i int, arrivalNs int64, ok bool) {
	for {
		if q.closed.Load() {
			return 0, 0, false
		}
		h := q.next.Load()
		if h >= q.released.Load() || h >= q.loaded.Load() {
			return 0, 0, false
		}
		if !q.reserve() {
			// Every slot is held by a running request; whichever shard
			// finishes one takes the next.
			return 0, 0, false
		}
		if q.next.CompareAndSwap(h, h+1) {
			if w := q.wakeAt.Load(); w > 0 && h+1 >= w && q.wakeAt.CompareAndSwap(w, 0) {
				select {
				case q.wake <- struct{}{}:
				default:
				}
			}
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

// finish frees the slot of req, a request that ended, and its bytes: the
// queue's hold on them goes, and its page once every request on it ended.
func (q *Queue) finish(req *Request) {
	q.endedBytes.Add(int64(len(req.Wire)))
	req.Wire = nil
	pg := req.pos / pageLen
	p := q.pages[pg].Load()
	if int(p.ended.Add(1)) == min(pageLen, len(q.arrivalNs)-pg*pageLen) {
		q.pages[pg].Store(nil)
	}
	q.inflight.Add(-1)
	if q.finished.Add(1) == int64(len(q.arrivalNs)) {
		close(q.done)
	}
}

// Finished returns how many taken requests have ended.
func (q *Queue) Finished() int { return int(q.finished.Load()) }

// Done is closed when every request of the queue has ended.
func (q *Queue) Done() <-chan struct{} { return q.done }
