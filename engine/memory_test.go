package engine

import (
	"context"
	"math"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/internal/memlimit"
	"github.com/stampede-bench/stampede/shard/shardtest"
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

	if h := holdMemory(runMemoryMin-1, runMemoryMin-1, 0); h != nil {
		t.Fatal("a small run held the GC's settings")
	}
	h := holdMemory(10_000, 10_000, 0)
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
	h := holdMemory(10_000, 10_000, 0)
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

// A TLS run keeps its own hold after its handshakes' ramp drained: the GC
// target stays off while the requests after the ramp run on the
// connections it made (each answer takes 50 ms, so the run lasts some
// eight rounds past its 128 handshakes).
func TestTLSRunHoldsMemoryAfterRamp(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	srv, client := shardtest.NewTLS(t)
	r, err := Start(context.Background(), Config{
		Address: srv.Addr.String(), TLS: client, Streaming: true,
		Requests: requests(repeat("/slow/50", runMemoryMin)...), MaxConcurrency: 128,
	})
	if err != nil {
		t.Fatal(err)
	}
	polls := 0
	for {
		// The run holds the settings from before its first answer until
		// after its last: a reading taken between the two is the run's.
		before, _, _ := r.Progress()
		gogc := gcPercentNow()
		done, failed, total := r.Progress()
		if done+failed == total {
			break
		}
		if before > 0 {
			polls++
			if gogc != -1 {
				t.Errorf("GOGC %d with %d of %d requests done, want off for the whole run", gogc, done, total)
				break
			}
		}
		time.Sleep(time.Millisecond)
	}
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range res.Data.Log.Collect() {
		if !x.Success {
			t.Fatalf("request %d failed: %s", x.Index, x.Error)
		}
	}
	// Without a reading between the first answer and the last the test
	// checked nothing.
	if polls == 0 {
		t.Fatal("GOGC never read between the run's first answer and its last")
	}
	t.Logf("GOGC read %d times during the run", polls)
}

// gcPercentNow reads the GC target without setting it.
func gcPercentNow() int64 {
	s := [...]rtmetrics.Sample{{Name: "/gc/gogc:percent"}}
	rtmetrics.Read(s[:])
	return int64(s[0].Value.Uint64())
}
