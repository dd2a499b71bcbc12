// Package memlimit holds the process's GC settings for the phases that know
// how much memory they will hold: a run's open streams (engine) and a ramp
// of TLS handshakes (shard). Under the default GC target (GOGC 100) the
// heap grows to twice what was live at the last collection before the next
// one, and the process's peak RSS with it; a phase whose live memory it can
// estimate does better with the GC target off and a soft memory limit
// (runtime/debug.SetMemoryLimit) standing at that estimate, so the GC runs
// only as the heap nears it, when a collection frees the most.
//
// The process has one GC target and one limit, and the phases overlap (a
// run's handshakes ramp while the run holds its streams' memory, on the
// shards' own threads), so they share one holder. Each phase takes a Hold
// with its own floor and margin; while any hold stands:
//
//	limit = min(found, max over holds of (max(floor, live + live/4) + margin))
//
// where live is the live heap at the last collection and found is the limit
// in force when the first hold was taken (GOMEMLIMIT, or none). The
// live + live/4 term keeps an estimate too low from making the GC run back
// to back; the limit follows it on every Take, Set and Release and every
// followTick while a hold stands. Taking the larger of the holds, not their
// sum, is right for phases that hold the same memory (the ramp's
// connections are the run's streams); two runs that overlap still count
// each other, since each floor starts from the memory in use when it was
// taken. The GC target goes off with the first hold only if it was the
// default or higher (a lower GOGC, or GOGC=off, is kept; the limit only adds
// to it), and the target and the limit found are put back when the last
// hold is released, in whatever order the holds go.
package memlimit

import (
	"math"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
	"time"
)

// followTick: how often the limit follows the live heap while a hold
// stands (reading the runtime's metrics and setting the limit cost a few
// microseconds).
const followTick = 100 * time.Millisecond

// Hold is one phase's claim on the GC's settings. Its methods may be called
// from any goroutine; a nil *Hold holds nothing, and its methods do nothing.
type Hold struct {
	h *holder
	// floor and margin: see the package comment. Under h.mu.
	floor, margin int64
	released      bool
}

// Take adds a hold whose limit is at least floor (bytes, the memory the
// phase expects to be in use, see InUse) plus margin (the room for garbage
// between collections). The first hold turns the GC target off.
func Take(floor, margin int64) *Hold { return process.take(floor, margin) }

// Set moves h's floor; the limit follows at once.
func (h *Hold) Set(floor int64) {
	if h == nil {
		return
	}
	h.h.mu.Lock()
	defer h.h.mu.Unlock()
	if !h.released {
		h.floor = floor
		h.h.adjust()
	}
}

// Release ends h; the last hold released puts back the GC target and the
// limit the first found. A second Release does nothing.
func (h *Hold) Release() {
	if h == nil {
		return
	}
	h.h.release(h)
}

// InUse is what the memory limit is compared with: the memory the runtime
// has mapped and not released to the OS, in bytes.
func InUse() int64 {
	s := [...]rtmetrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	rtmetrics.Read(s[:])
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// gcSettings is what the holder reads and sets: the runtime's, or a test's.
type gcSettings interface {
	SetGCPercent(percent int) int
	SetMemoryLimit(limit int64) int64
	// Live is the live heap at the last collection, in bytes.
	Live() int64
}

type runtimeGC struct{}

func (runtimeGC) SetGCPercent(p int) int       { return debug.SetGCPercent(p) }
func (runtimeGC) SetMemoryLimit(l int64) int64 { return debug.SetMemoryLimit(l) }
func (runtimeGC) Live() int64 {
	s := [...]rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(s[:])
	return int64(s[0].Value.Uint64())
}

// process is the one holder of the process's settings.
var process = holder{gc: runtimeGC{}, tick: followTick}

type holder struct {
	gc   gcSettings
	tick time.Duration // 0: no follower (tests move the limit by hand)

	mu    sync.Mutex
	holds []*Hold
	// gcPercent and limit: the settings found when the first hold was
	// taken, put back when the last is released.
	gcPercent int
	limit     int64
	// stop ends the follower of the current holds.
	stop chan struct{}
}

func (p *holder) take(floor, margin int64) *Hold {
	h := &Hold{h: p, floor: floor, margin: margin}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.holds) == 0 {
		p.limit = p.gc.SetMemoryLimit(-1)
		p.gcPercent = p.gc.SetGCPercent(-1)
		if p.gcPercent < 100 {
			p.gc.SetGCPercent(p.gcPercent)
		}
		if p.tick > 0 {
			p.stop = make(chan struct{})
			go p.follow(p.stop)
		}
	}
	p.holds = append(p.holds, h)
	p.adjust()
	return h
}

func (p *holder) release(h *Hold) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h.released {
		return
	}
	h.released = true
	for i, o := range p.holds {
		if o == h {
			p.holds = append(p.holds[:i], p.holds[i+1:]...)
			break
		}
	}
	if len(p.holds) > 0 {
		p.adjust()
		return
	}
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
	p.gc.SetGCPercent(p.gcPercent)
	p.gc.SetMemoryLimit(p.limit)
}

// follow moves the limit with the live heap until stop is closed.
func (p *holder) follow(stop chan struct{}) {
	t := time.NewTicker(p.tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		select {
		case <-stop:
		default:
			p.adjust()
		}
		p.mu.Unlock()
	}
}

// adjust sets the limit the holds call for (see the package comment).
// Under p.mu, with at least one hold.
func (p *holder) adjust() {
	p.gc.SetMemoryLimit(limitFor(p.holds, p.gc.Live(), p.limit))
}

// limitFor is the package comment's formula.
func limitFor(holds []*Hold, live, found int64) int64 {
	l := int64(math.MinInt64)
	for _, h := range holds {
		l = max(l, max(h.floor, live+live/4)+h.margin)
	}
	return min(l, found)
}
