package engine

import (
	"runtime"

	"github.com/stampede-bench/stampede/internal/memlimit"
)

// Memory while a run's streams are open. Under the default GC target
// (GOGC 100) the heap grows to twice what was live at the last collection
// before the next one, and the process's peak RSS with it: at 16,667
// streams an agent's heap went from 54 MB live to 102 MB. The streams
// allocate nothing per token, so what piles up between collections is the
// connects' and the ends' garbage, and a run's few collections are cheap
// against its reads. So while a run lasts it holds the GC's settings
// (internal/memlimit): the GC target off and a soft memory limit at what
// the open streams will hold, the memory in use at the start,
// runPerStream for each stream that can be open at once, and runMargin,
// following the live heap up. A run over TLS holds it too, beside its
// handshakes' ramp (shard's rampMemory), whose own hold stands only while
// the handshakes run; the larger of the two is the limit. The settings
// found are restored when the run ends.
const (
	// runPerStream is what an open stream holds live, about 1.4 KB
	// measured at 5,000 streams an agent (its connection, recorder slot
	// and buffers), and room for its result at its end. Measured side by
	// side (QUICK=1 scripts/bench-fidelity.sh, 10,000 streams): GOGC 100
	// 8.11–8.47 µs per token event, 55 ms of GC, 47.7–49.5 MB peak RSS;
	// 2,000 bytes and 6 MB 7.07 µs, 33 ms, 45.6 MB; 1,500 and 4 MB 7.59
	// µs, 185 ms, 45.2 MB; 2,500 and 8 MB 7.31 µs, 16 ms, 50.2 MB.
	runPerStream = 2000
	// runMargin is the room for garbage between collections beside the
	// streams' own: the loops' buffers, the schedule's and the ends'.
	runMargin = 6 << 20
	// runMemoryMin: runs of fewer requests keep the GC's settings; their
	// heap is a few MB.
	runMemoryMin = 1024
)

// holdMemory holds the GC's settings for a run of requests, open at most
// at once, that will load window more bytes of requests than are in use
// now (a Store's window and its requests in flight); nil (which holds
// nothing) for a small run.
func holdMemory(requests, open int, window int64) *memlimit.Hold {
	if requests < runMemoryMin {
		return nil
	}
	return memlimit.Take(memlimit.InUse()+int64(open)*runPerStream+window, runMargin)
}

// loadAhead is the request bytes a run from a Store will load beyond those
// in memory at its start: the window, and the requests in flight.
func (r *Runner) loadAhead() int64 {
	if r.window == nil {
		return 0
	}
	return windowBytes + int64(r.open)*r.set.meanBytes()
}

// releaseMemory releases the run's hold and collects the run's garbage, so
// that what comes after the run (its result's figures and files) grows
// from the results alone, not from twice the heap the open streams held.
func releaseMemory(h *memlimit.Hold) {
	if h == nil {
		return
	}
	h.Release()
	runtime.GC()
}
