package mock

import (
	"time"

	"golang.org/x/sys/unix"
)

// monoClock reads CLOCK_MONOTONIC in nanoseconds without a system call per
// reading. Go's runtime monotonic clock is CLOCK_MONOTONIC on Linux, so one
// (clock_gettime, time.Now) pair taken at start lets every later reading be
// derived as base + time.Since(start), which goes through the vDSO.
type monoClock struct {
	baseNs int64
	start  time.Time
}

// newMonoClock takes the pair as the midpoint of two clock_gettime calls around
// time.Now, the narrowest of several tries: a pair split by a preemption
// (tens of microseconds on a busy machine) would shift every time the
// truth log records by as much.
func newMonoClock() monoClock {
	var best monoClock
	bestWidth := int64(-1)
	for range 5 {
		m1 := monotonicNs()
		start := time.Now()
		m2 := monotonicNs()
		if w := m2 - m1; bestWidth < 0 || w < bestWidth {
			best, bestWidth = monoClock{baseNs: m1 + w/2, start: start}, w
		}
	}
	return best
}

func monotonicNs() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		// CLOCK_MONOTONIC exists on every Linux kernel Go supports.
		panic("clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// nowNs returns the current CLOCK_MONOTONIC time in nanoseconds.
func (c monoClock) nowNs() int64 { return c.baseNs + int64(time.Since(c.start)) }

// unixSec returns the wall-clock seconds for a CLOCK_MONOTONIC reading, as
// the "created" field of OpenAI responses wants.
func (c monoClock) unixSec(monoNs int64) int64 {
	return c.start.Add(time.Duration(monoNs - c.baseNs)).Unix()
}
