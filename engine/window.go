package engine

import (
	"sync/atomic"
	"time"

	"github.com/stampede-bench/stampede/shard"
)

// The window: a run from a Store holds in memory only the requests a shard
// will take soon and those in flight. A loader goroutine (never a shard's
// thread) reads the store in order into the queue, staying at most
// windowBytes and windowRequests ahead of the requests the shards have
// taken; the queue hands a shard only a request that is loaded, and lets
// its bytes go when it ended (a re-send on a fresh connection needs them
// until then). The schedule is not held back: it releases each request at
// its time, which stays the request's arrival; were the loader ever
// behind, a request due would wait in the queue for its bytes, and
// WindowStats.Late counts those waits.
//
// Why spill before the clock rather than generate ahead of the schedule:
// sampling takes a core per request's tokenizer rounds, which a run's
// shards need, and Python's sampling lines print before the run starts;
// reading back a file is a memcpy from the page cache.
//
// Variables, so that tests can shrink the window.
var (
	// windowBytes bounds the bytes loaded ahead of the shards: at 10,000
	// requests a second of 40 KB (8,192-token prompts) 40 ms of sending.
	windowBytes int64 = 16 << 20
	// windowRequests bounds how many requests are loaded ahead.
	windowRequests = 4096
)

// WindowStats is what the window held: the bytes and requests loaded and
// not yet ended (in flight, or waiting to be taken), now and at the most.
// Late counts the requests that were due before the loader had their
// bytes while the shards had nothing else to take, LateMax the longest of
// those waits; both stay 0 unless the store's reads fall behind.
type WindowStats struct {
	Bytes, PeakBytes       int64
	Requests, PeakRequests int
	Late                   int
	LateMax                time.Duration
}

// window loads a store into a queue.
type window struct {
	queue  *shard.Queue
	src    *storeReader
	n      int
	clock  shard.Clock
	wake   func() // the shards' Wake
	limit  int64  // the concurrency cap (0: none), for Late
	maxB   int64
	maxReq int
	// cum[k % len(cum)] is the bytes of requests [0, k): the bytes ahead
	// of the shards are cum[loaded] - cum[taken].
	cum []int64

	peakBytes, peakRequests atomic.Int64
	late                    atomic.Int64
	lateMaxNs               atomic.Int64
	err                     error         // the read that stopped the loader
	done                    chan struct{} // closed when the loader returned
}

func newWindow(q *shard.Queue, src *storeReader, clock shard.Clock, wake func(), limit int) *window {
	return &window{queue: q, src: src, n: q.Len(), clock: clock, wake: wake, limit: int64(limit),
		maxB: windowBytes, maxReq: windowRequests, cum: make([]int64, windowRequests+1), done: make(chan struct{})}
}

// run loads every request, or stops when stop is closed or a read fails
// (w.err; fail is called with it).
func (w *window) run(stop <-chan struct{}, fail func(error)) {
	defer close(w.done)
	for k := range w.n {
		size := int64(w.src.size(k))
		if !w.room(k, size, stop) {
			return
		}
		req, err := w.src.read()
		if err != nil {
			w.err = err
			fail(err)
			return
		}
		due := k < w.queue.Released()
		starved := due && k == w.queue.Taken() && (w.limit <= 0 || int64(w.queue.InFlight()) < w.limit)
		w.queue.Load(k, req)
		w.cum[(k+1)%len(w.cum)] = w.cum[k%len(w.cum)] + size
		if starved {
			w.late.Add(1)
			wait := w.clock.Now() - w.queue.ArrivalNs(k)
			if wait > w.lateMaxNs.Load() {
				w.lateMaxNs.Store(wait)
			}
		}
		// A request released before it was loaded waits for a take the
		// release's wake-up found nothing for.
		if k < w.queue.Released() {
			w.wake()
		}
		w.notePeak()
	}
}

// room waits until request k (size bytes) may be loaded: when nothing is
// loaded ahead of the shards, or when it fits beside what is. A full
// window waits for the shards to take half of it, so the loader wakes
// once per half window, not once per take.
func (w *window) room(k int, size int64, stop <-chan struct{}) bool {
	taken := w.queue.Taken()
	if w.fits(k, taken, size, 1) {
		return true
	}
	t := taken + 1
	for t < k && !w.fits(k, t, size, 2) {
		t++
	}
	return w.queue.WaitTaken(t, stop)
}

// fits reports whether request k fits in the window (shrunk by div) with
// the requests from taken on still in it.
func (w *window) fits(k, taken int, size int64, div int) bool {
	ahead := k - taken
	if ahead <= 0 {
		return true
	}
	bytes := w.cum[k%len(w.cum)] - w.cum[taken%len(w.cum)]
	return ahead < w.maxReq/div && bytes+size <= w.maxB/int64(div)
}

func (w *window) notePeak() {
	b, r := w.queue.Held()
	if b > w.peakBytes.Load() {
		w.peakBytes.Store(b)
	}
	if int64(r) > w.peakRequests.Load() {
		w.peakRequests.Store(int64(r))
	}
}

// stats reads the window; any goroutine may call it.
func (w *window) stats() WindowStats {
	b, r := w.queue.Held()
	return WindowStats{Bytes: b, PeakBytes: max(b, w.peakBytes.Load()), Requests: r, PeakRequests: max(r, int(w.peakRequests.Load())),
		Late: int(w.late.Load()), LateMax: time.Duration(w.lateMaxNs.Load())}
}
