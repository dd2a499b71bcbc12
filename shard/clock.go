package shard

import (
	"slices"
	"time"
)

// Clock is a run's time base. Every timestamp a shard records is nanoseconds
// since Clock's base on Go's monotonic clock, which on Linux is
// CLOCK_MONOTONIC, so a run time converts to an absolute CLOCK_MONOTONIC
// reading (Monotonic) that can be compared with another process's log.
type Clock struct {
	base       time.Time
	baseMonoNs int64
	baseErrNs  int64 // baseMonoNs is off by at most this much
}

// clockSamples is how many readings the clock's samplers take to keep
// the best: a vCPU stall between two readings of one sample (tens of
// microseconds and more here) would otherwise bias a whole run.
const clockSamples = 5

// NewClock starts a run clock now.
func NewClock() Clock {
	// time.Now hides its monotonic reading, so bracket it with two direct
	// CLOCK_MONOTONIC reads and take the midpoint (error: half the
	// bracket); of several tries keep the narrowest bracket.
	var best Clock
	bestWidth := int64(-1)
	for range clockSamples {
		m1 := monotonicNs()
		base := time.Now()
		m2 := monotonicNs()
		if w := m2 - m1; bestWidth < 0 || w < bestWidth {
			best, bestWidth = Clock{base: base, baseMonoNs: m1 + w/2, baseErrNs: w - w/2}, w
		}
	}
	return best
}

// Now returns nanoseconds since the run's base.
func (c Clock) Now() int64 { return int64(time.Since(c.base)) }

// Base returns the wall-clock time of the run's base.
func (c Clock) Base() time.Time { return c.base }

// Monotonic converts a run time to absolute CLOCK_MONOTONIC nanoseconds.
func (c Clock) Monotonic(runNs int64) int64 { return c.baseMonoNs + runNs }

// realtimeOffset samples CLOCK_REALTIME − run time, the offset that turns a
// kernel receive stamp (CLOCK_REALTIME) into run time. Both readings come
// from one time.Now call. The offset drifts when NTP slews the wall clock, so
// a shard re-samples it periodically.
func (c Clock) realtimeOffset() int64 {
	// time.Now reads the wall clock and then the monotonic clock; a stall
	// between the two shifts one sample, so take the median of several.
	var samples [clockSamples]int64
	for i := range samples {
		t := time.Now()
		samples[i] = t.UnixNano() - int64(t.Sub(c.base))
	}
	slices.Sort(samples[:])
	return samples[clockSamples/2]
}

// stampClock converts kernel receive stamps (CLOCK_REALTIME) to run time
// for one thread, with the realtime−run offset it re-samples every
// offsetResampleNs.
type stampClock struct {
	clock    Clock
	offsetNs int64 // CLOCK_REALTIME − run time
	sampleNs int64 // run time of the last sample
}

// offsetResampleNs is how often the offset is re-sampled; NTP slews the
// wall clock by at most 500 ppm, 0.5 µs per second.
const offsetResampleNs = int64(time.Second)

// maxStampAgeNs is the oldest a receive stamp can plausibly be when it is
// read; an older one means the wall clock was stepped back since the last
// sample. It is generous because a starved client really does read
// stamps hundreds of milliseconds old, and those are the ones worth keeping.
const maxStampAgeNs = int64(30 * time.Second)

func newStampClock(c Clock) stampClock {
	return stampClock{clock: c, offsetNs: c.realtimeOffset(), sampleNs: c.Now()}
}

// refresh re-samples the offset if it is due; nowNs is the current run time.
func (s *stampClock) refresh(nowNs int64) {
	if nowNs-s.sampleNs > offsetResampleNs {
		s.offsetNs = s.clock.realtimeOffset()
		s.sampleNs = nowNs
	}
}

// runTime converts a kernel stamp read at run time nowNs. A stamp that
// lands in the future or more than maxStampAgeNs in the past means the wall
// clock was stepped (settimeofday, an NTP step): the offset is re-sampled
// at once, and if the stamp is still implausible, nowNs stands in for it.
func (s *stampClock) runTime(realtimeNs, nowNs int64) int64 {
	ts := realtimeNs - s.offsetNs
	if ts <= nowNs && nowNs-ts <= maxStampAgeNs {
		return ts
	}
	s.offsetNs = s.clock.realtimeOffset()
	s.sampleNs = nowNs
	ts = realtimeNs - s.offsetNs
	if ts <= nowNs && nowNs-ts <= maxStampAgeNs {
		return ts
	}
	return nowNs
}
