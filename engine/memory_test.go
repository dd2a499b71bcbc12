package engine

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/stampede-bench/stampede/internal/memlimit"
)

// A run of many requests turns the GC target off under a soft limit at
// its streams' memory, a small run holds nothing, and the release puts
// back what the hold found. (The holder's arithmetic is
// internal/memlimit's tests'.)
func TestHoldMemorySetsAndRestores(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	oldLimit := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(oldLimit)

	if h := holdMemory(runMemoryMin-1, runMemoryMin-1); h != nil {
		t.Fatal("a small run held the GC's settings")
	}
	h := holdMemory(10_000, 10_000)
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("GC percent during the run %d, want -1 (off)", got)
	}
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 || limit < 10_000*runPerStream+runMargin {
		t.Errorf("limit %d: want at least the streams' %d and the margin", limit, 10_000*runPerStream)
	}
	if inUse := memlimit.InUse(); limit > 2*inUse+10_000*runPerStream+runMargin {
		t.Errorf("limit %d far above what the run holds (in use %d)", limit, inUse)
	}
	releaseMemory(h)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent after the run %d, want 100", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("limit after the run %d, want none", got)
	}
	releaseMemory(nil) // a small run's release does nothing
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
	releaseMemory(h)
	if got := debug.SetGCPercent(-1); got != 30 {
		t.Errorf("GC percent after the run %d, want 30", got)
	}
}
