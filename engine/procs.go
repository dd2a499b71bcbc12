package engine

import (
	"runtime"
	"sync"
)

// Each shard's goroutine is locked to its own OS thread. When its
// epoll_wait returns, the Go scheduler must hand it a P before it runs; if
// every P is held by a floating goroutine (the schedule, the progress bar,
// GC workers), the shard waits for that goroutine's time slice to end,
// which measured here as tens of milliseconds of loop lateness. With more Ps
// than shards the OS scheduler, which preempts in microseconds and favours
// a thread that just woke, decides instead. So a run raises GOMAXPROCS to
// shards + spareProcs while it lasts and puts the old value back when the
// last overlapping run ends.
const spareProcs = 2

var procs struct {
	mu     sync.Mutex
	active int // runs holding a raise
	saved  int // GOMAXPROCS before the first of them
	raised int // the value set
}

// raiseProcs makes sure GOMAXPROCS is at least shards + spareProcs; every
// call must be paired with restoreProcs.
func raiseProcs(shards int) {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	if procs.active == 0 {
		procs.saved = runtime.GOMAXPROCS(0)
		procs.raised = procs.saved
	}
	procs.active++
	if want := shards + spareProcs; want > procs.raised {
		runtime.GOMAXPROCS(want)
		procs.raised = want
	}
}

func restoreProcs() {
	procs.mu.Lock()
	defer procs.mu.Unlock()
	procs.active--
	if procs.active == 0 && procs.raised != procs.saved {
		runtime.GOMAXPROCS(procs.saved)
	}
}
