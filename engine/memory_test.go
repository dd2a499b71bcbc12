package engine

import (
	"math"
	"runtime/debug"
	"testing"
)

// A run of many requests turns the GC target off under a soft limit
// above the live heap, a second overlapping run holds nothing, and the
// first's release puts back what it found.
func TestHoldMemorySetsAndRestores(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	oldLimit := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(oldLimit)

	if h := holdMemory(runMemoryMin-1, runMemoryMin-1); h.stop != nil {
		t.Fatal("a small run held the GC's settings")
	}
	h := holdMemory(10_000, 10_000)
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("GC percent during the run %d, want -1 (off)", got)
	}
	limit := debug.SetMemoryLimit(-1)
	inUse, live := memoryInUse()
	if limit == math.MaxInt64 || limit < live+live/4+runMargin || limit < 10_000*runPerStream {
		t.Errorf("limit %d: want above the live heap %d plus a quarter and the margin, and the streams' %d", limit, live, 10_000*runPerStream)
	}
	if limit > inUse+10_000*runPerStream+runMargin+live {
		t.Errorf("limit %d far above what the run holds (in use %d)", limit, inUse)
	}
	if second := holdMemory(10_000, 10_000); second.stop != nil {
		t.Error("an overlapping run held the settings too")
	}
	h.release()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent after the run %d, want 100", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit after the run %d, want none", got)
	}
	h.release() // a second release does nothing
}

// A lower GOGC than the default is kept during the run, and a limit
// already set caps the run's.
func TestHoldMemoryKeepsLowerSettings(t *testing.T) {
	old := debug.SetGCPercent(30)
	defer debug.SetGCPercent(old)
	oldLimit := debug.SetMemoryLimit(1 << 20)
	defer debug.SetMemoryLimit(oldLimit)
	h := holdMemory(10_000, 10_000)
	if got := debug.SetGCPercent(-1); got != 30 {
		t.Errorf("GC percent during the run %d, want the 30 set", got)
	}
	debug.SetGCPercent(30)
	if got := debug.SetMemoryLimit(-1); got != 1<<20 {
		t.Errorf("limit during the run %d, want the %d set", got, 1<<20)
	}
	h.release()
	if got := debug.SetGCPercent(-1); got != 30 {
		t.Errorf("GC percent after the run %d, want 30", got)
	}
}
