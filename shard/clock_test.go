package shard

import (
	"testing"
	"time"
)

func TestStampClock(t *testing.T) {
	clock := NewClock()
	sc := newStampClock(clock)
	now := clock.Now()
	realNow := now + sc.offsetNs
	cases := []struct {
		name       string
		realtimeNs int64
		want       func(got int64) bool
	}{
		{"recent stamp", realNow - 1000, func(got int64) bool { return got == now-1000 }},
		{"stamp from a stall", realNow - int64(500*time.Millisecond), func(got int64) bool { return got == now-int64(500*time.Millisecond) }},
		// A stamp "from the future" or from long ago means the wall clock
		// was stepped; after re-sampling it is still implausible here, so
		// the read time stands in.
		{"future stamp", realNow + int64(time.Hour), func(got int64) bool { return got == now }},
		{"ancient stamp", realNow - int64(time.Hour), func(got int64) bool { return got == now }},
	}
	for _, c := range cases {
		if got := sc.runTime(c.realtimeNs, now); !c.want(got) {
			t.Errorf("%s: run time %d (now %d)", c.name, got, now)
		}
	}
}

func TestClockMonotonicBase(t *testing.T) {
	c := NewClock()
	// The run clock's zero must match CLOCK_MONOTONIC read directly: a
	// reading through the run clock falls between two direct readings
	// taken before and after it, give or take the base's own sampling
	// error (half the bracket NewClock kept). No bound on how long the
	// readings take, so a preempted test still passes.
	before := monotonicNs()
	viaRun := c.Monotonic(c.Now())
	after := monotonicNs()
	if viaRun < before-c.baseErrNs || viaRun > after+c.baseErrNs {
		t.Errorf("run clock reads %d, outside the direct readings [%d, %d] ± %d ns", viaRun, before, after, c.baseErrNs)
	}
}
