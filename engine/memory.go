package engine

import (
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
	"time"
)

// Memory while a run's streams are open. Under the default GC target
// (GOGC 100) the heap grows to twice what was live at the last collection
// before the next one, and the process's peak RSS with it: at 16,667
// streams an agent's heap went from 54 MB live to 102 MB. The streams
// allocate nothing per token, so what piles up between collections is the
// connects' and the ends' garbage, and a run's few collections are cheap
// against its reads. So while a run lasts the GC target is off and a soft
// memory limit (runtime/debug.SetMemoryLimit) stands at what the open
// streams will hold: the memory in use at the start, runPerStream for
// each stream that can be open at once, and runMargin. The limit follows
// the live heap up, never below it plus a quarter plus the margin (an
// estimate too low for the run cannot make the GC run back to back), and
// never above a limit already set (GOMEMLIMIT); the GC target goes off
// only if it was the default or higher (a lower GOGC is kept). Both are
// restored when the run ends. A run over TLS leaves the memory to the
// handshakes' ramp (shard's rampMemory), which sets the same two for its
// own garbage.
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
	// runMemoryTick: how often the limit follows the live heap.
	runMemoryTick = 100 * time.Millisecond
)

// memoryHold is a run's hold on the GC's settings; the zero value holds
// nothing.
type memoryHold struct {
	// gcPercent and limit are the settings found at the start.
	gcPercent int
	limit     int64
	base      int64
	stop      chan struct{}
	done      sync.WaitGroup
}

var memoryHolds struct {
	mu     sync.Mutex
	active bool // one run at a time holds the settings
}

// holdMemory sets the GC's settings for a run of requests, open at
// most at once, and starts following the live heap; release puts back
// what it found. A second run overlapping the first holds nothing.
func holdMemory(requests, open int) *memoryHold {
	h := &memoryHold{}
	if requests < runMemoryMin {
		return h
	}
	memoryHolds.mu.Lock()
	defer memoryHolds.mu.Unlock()
	if memoryHolds.active {
		return h
	}
	memoryHolds.active = true
	h.limit = debug.SetMemoryLimit(-1)
	h.gcPercent = debug.SetGCPercent(-1)
	if h.gcPercent < 100 {
		debug.SetGCPercent(h.gcPercent)
	}
	inUse, _ := memoryInUse()
	h.base = inUse + int64(open)*runPerStream
	h.adjust()
	h.stop = make(chan struct{})
	h.done.Add(1)
	go h.follow()
	return h
}

// follow moves the limit with the live heap until release.
func (h *memoryHold) follow() {
	defer h.done.Done()
	t := time.NewTicker(runMemoryTick)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			h.adjust()
		}
	}
}

func (h *memoryHold) adjust() {
	_, live := memoryInUse()
	debug.SetMemoryLimit(min(max(h.base, live+live/4)+runMargin, h.limit))
}

// release restores the settings holdMemory found and collects the run's
// garbage, so that what comes after the run (its result's figures and
// files) grows from the results alone, not from twice the heap the open
// streams held.
func (h *memoryHold) release() {
	if h.stop == nil {
		return
	}
	close(h.stop)
	h.done.Wait()
	memoryHolds.mu.Lock()
	debug.SetGCPercent(h.gcPercent)
	debug.SetMemoryLimit(h.limit)
	memoryHolds.active = false
	memoryHolds.mu.Unlock()
	h.stop = nil
	runtime.GC()
}

// memoryInUse reads what the memory limit is compared with (mapped memory
// not released to the OS) and the live heap at the last collection.
func memoryInUse() (inUse, live int64) {
	s := [...]rtmetrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	rtmetrics.Read(s[:])
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64()), int64(s[2].Value.Uint64())
}
