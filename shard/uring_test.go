package shard

import (
	"testing"

	"github.com/stampede-bench/stampede/shard/shardtest"
)

// ringAvailable reports whether this kernel gives the shards an io_uring
// ring to read with.
func ringAvailable(t *testing.T) bool {
	t.Helper()
	w, err := newWakeup()
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	u, err := newUring(w.fd)
	if err != nil {
		t.Logf("no io_uring ring: %v", err)
		return false
	}
	u.close()
	return true
}

// TestRingAndRecvmsgReadAlike runs the same streams with the ring and with
// the loop's own recvmsg (STAMPEDE_IO_URING=0): the same results, every
// read stamped, and the reads done by the path asked for.
func TestRingAndRecvmsgReadAlike(t *testing.T) {
	shardtest.HoldKernelStamps(t)
	ring := ringAvailable(t)
	srv := shardtest.New(t)
	paths := make([]string, 12)
	for i := range paths {
		paths[i] = "/ok/5"
	}
	for _, env := range []string{"1", "0"} {
		t.Run("STAMPEDE_IO_URING="+env, func(t *testing.T) {
			t.Setenv("STAMPEDE_IO_URING", env)
			data, health := runPaths(t, srv, paths, run{slots: 3, limit: 3, streaming: true, stamps: true})
			for _, res := range data.Results {
				if !res.Success || res.GeneratedText != "t0t1t2t3t4" || res.ChunkEvents != 5 {
					t.Fatalf("request %d: success %v (%s), text %q, events %d", res.Index, res.Success, res.Error, res.GeneratedText, res.ChunkEvents)
				}
				if res.TTFTNs <= 0 || res.LatencyNs < res.TTFTNs || len(res.ITLNs) != 4 {
					t.Errorf("request %d: ttft %d latency %d itls %v", res.Index, res.TTFTNs, res.LatencyNs, res.ITLNs)
				}
			}
			h := health[0]
			if h.StampedReads == 0 || h.StampedReads != h.Reads {
				t.Errorf("kernel timestamps on %d of %d reads; want all", h.StampedReads, h.Reads)
			}
			switch {
			case env == "0" && h.RingReads != 0:
				t.Errorf("%d ring reads with the ring switched off", h.RingReads)
			case env == "1" && ring && h.RingReads == 0:
				t.Errorf("no ring reads of %d reads; the kernel offers a ring", h.Reads)
			case h.RingReads > h.Reads:
				t.Errorf("%d ring reads of %d reads", h.RingReads, h.Reads)
			}
		})
	}
}
