package engine

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/shard/shardtest"
	"github.com/stampede-bench/stampede/sse"
)

// fullDisk is a record log file that takes limit bytes, then fails.
type fullDisk struct {
	*os.File
	limit, written int64
}

func (f *fullDisk) WriteAt(b []byte, off int64) (int, error) {
	if f.written+int64(len(b)) > f.limit {
		return 0, syscall.ENOSPC
	}
	f.written += int64(len(b))
	return f.File.WriteAt(b, off)
}

// TestRunStopsWhenTheLogCannotBeWritten: a record log whose disk fills
// stops the run as a cancellation does: nothing more is released, the
// requests sent are all in the result (what the file would not take is
// kept in memory), and the result says why.
func TestRunStopsWhenTheLogCannotBeWritten(t *testing.T) {
	srv := shardtest.New(t)
	dir := t.TempDir()
	const n = 2000
	res, err := Run(context.Background(), Config{
		Address: srv.Addr.String(), Kind: sse.Completions, Streaming: true,
		Requests: requests(repeat("/ok/3", n)...), MaxConcurrency: 4, RequestRate: 2000, Shards: 1, CPUs: []int{-1},
		Log: metrics.LogConfig{Dir: dir, MemoryBytes: -1, ChunkBytes: 128, File: func(dir string) (metrics.LogFile, error) {
			f, err := os.CreateTemp(dir, "full-*")
			if err != nil {
				return nil, err
			}
			os.Remove(f.Name())
			return &fullDisk{File: f, limit: 4096}, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.LogError, syscall.ENOSPC) || !res.Cancelled {
		t.Fatalf("log error %v, cancelled %v; want ENOSPC and a stopped run", res.LogError, res.Cancelled)
	}
	sent, skipped := 0, 0
	for i, r := range res.Data.Log.All() {
		if r.Index != 100+i {
			t.Fatalf("result %d has index %d", i, r.Index)
		}
		switch {
		case r.Success:
			sent++
		case r.Error == "cancelled" && !r.Sent():
			skipped++
		default:
			t.Errorf("request %d: %q", i, r.Error)
		}
	}
	if sent == 0 || skipped == 0 || sent+skipped != n {
		t.Errorf("%d succeeded, %d never sent, of %d: want the run stopped part way, every request accounted for", sent, skipped, n)
	}
}
