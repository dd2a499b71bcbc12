package memlimit

import (
	"math"
	"runtime/debug"
	"sync"
	"testing"
)

// fakeGC is the runtime's two settings and a live heap the test sets.
type fakeGC struct {
	percent int
	limit   int64
	live    int64
}

func (f *fakeGC) SetGCPercent(p int) int {
	old := f.percent
	f.percent = p
	return old
}

func (f *fakeGC) SetMemoryLimit(l int64) int64 {
	old := f.limit
	if l >= 0 {
		f.limit = l
	}
	return old
}

func (f *fakeGC) Live() int64 { return f.live }

func newHolder(percent int, limit int64) (*holder, *fakeGC) {
	f := &fakeGC{percent: percent, limit: limit}
	return &holder{gc: f}, f
}

const mb = 1 << 20

// Two overlapping holds: the limit is the larger of the two, it moves
// with either's floor and with the live heap, and the settings found come
// back only when the last hold goes, whichever goes first.
func TestOverlappingHolds(t *testing.T) {
	for _, firstOut := range []string{"run", "ramp"} {
		t.Run(firstOut+" released first", func(t *testing.T) {
			p, f := newHolder(100, math.MaxInt64)
			f.live = 10 * mb
			run := p.take(40*mb, 6*mb)
			if f.percent != -1 || f.limit != 46*mb {
				t.Fatalf("one hold: GOGC %d, limit %d; want off, %d", f.percent, f.limit, 46*mb)
			}
			ramp := p.take(20*mb, 16*mb)
			if f.limit != 46*mb {
				t.Errorf("ramp below the run: limit %d, want the run's %d", f.limit, 46*mb)
			}
			ramp.Set(35 * mb)
			if f.limit != 51*mb {
				t.Errorf("ramp above the run: limit %d, want %d", f.limit, 51*mb)
			}
			// The live heap's floor, with each hold's own margin: the
			// larger margin wins.
			f.live = 80 * mb
			p.adjust()
			if want := int64(100*mb + 16*mb); f.limit != want {
				t.Errorf("live heap 80 MB: limit %d, want %d", f.limit, want)
			}
			f.live = 10 * mb
			first, second := run, ramp
			if firstOut == "ramp" {
				first, second = ramp, run
			}
			first.Release()
			if f.percent != -1 {
				t.Errorf("one hold left: GOGC %d, want off", f.percent)
			}
			if want := second.floor + second.margin; f.limit != want {
				t.Errorf("one hold left: limit %d, want its own %d", f.limit, want)
			}
			first.Release() // a second release changes nothing
			if f.percent != -1 {
				t.Error("a second release of the same hold put GOGC back")
			}
			first.Set(500 * mb) // nor does a released hold's floor
			if want := second.floor + second.margin; f.limit != want {
				t.Errorf("a released hold moved the limit to %d", f.limit)
			}
			second.Release()
			if f.percent != 100 || f.limit != math.MaxInt64 {
				t.Errorf("after the last: GOGC %d, limit %d; want 100, none", f.percent, f.limit)
			}
		})
	}
}

// A GOMEMLIMIT the user set caps every hold's limit and is what comes
// back; a GOGC below the default, or off, is kept throughout.
func TestUserSettingsKept(t *testing.T) {
	p, f := newHolder(50, 30*mb)
	h := p.take(40*mb, 6*mb)
	if f.limit != 30*mb || f.percent != 50 {
		t.Errorf("during the hold: limit %d, GOGC %d; want the user's %d, 50", f.limit, f.percent, 30*mb)
	}
	h.Set(10 * mb)
	if f.limit != 16*mb {
		t.Errorf("a floor below the user's limit: %d, want %d", f.limit, 16*mb)
	}
	h.Release()
	if f.limit != 30*mb || f.percent != 50 {
		t.Errorf("after: limit %d, GOGC %d; want %d, 50", f.limit, f.percent, 30*mb)
	}

	p, f = newHolder(-1, math.MaxInt64)
	h = p.take(mb, mb)
	h.Release()
	if f.percent != -1 {
		t.Errorf("GOGC=off came back as %d", f.percent)
	}
}

// A hold taken after the last was released finds the settings anew.
func TestHoldAfterRelease(t *testing.T) {
	p, f := newHolder(100, math.MaxInt64)
	p.take(mb, mb).Release()
	f.percent, f.limit = 200, 64*mb
	h := p.take(mb, mb)
	h.Release()
	if f.percent != 200 || f.limit != 64*mb {
		t.Errorf("GOGC %d, limit %d after a second hold; want 200, %d", f.percent, f.limit, 64*mb)
	}
}

// The process's holder, from many goroutines with the follower running:
// the runtime's settings come back once all are released (run with -race).
func TestProcessHolderConcurrent(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	oldLimit := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(oldLimit)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			h := Take(InUse()+int64(i)*mb, 6*mb)
			for j := range 100 {
				h.Set(InUse() + int64(j)*mb)
			}
			h.Release()
		})
	}
	wg.Wait()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d after every hold was released, want 100", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit %d after every hold was released, want none", got)
	}
	var nilHold *Hold
	nilHold.Set(1)
	nilHold.Release()
}
