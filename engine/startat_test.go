package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/shard/shardtest"
)

// TestRunWaitsForStartAt: with StartAt, no request is released before
// that wall-clock instant, and the schedule counts from after it.
func TestRunWaitsForStartAt(t *testing.T) {
	srv := shardtest.New(t)
	at := time.Now().Add(80 * time.Millisecond)
	res, err := Run(context.Background(), Config{
		Address: srv.Addr.String(), Streaming: true,
		Requests: requests(repeat("/ok/2", 4)...), Shards: 1, StartAt: at,
	})
	if err != nil {
		t.Fatal(err)
	}
	if start := res.Start.Add(time.Duration(res.ScheduleStartNs)); start.Before(at) {
		t.Errorf("schedule started at %v, before StartAt %v", start, at)
	}
	for i, r := range res.Data.Log.Collect() {
		if !r.Success {
			t.Fatalf("request %d failed: %s", i, r.Error)
		}
		if released := res.Start.Add(time.Duration(r.ArrivalNs)); released.Before(at) {
			t.Errorf("request %d released at %v, before StartAt %v", i, released, at)
		}
	}
}

// TestRunCancelledBeforeStartAt: cancelling while the run waits for its
// start releases nothing and still returns every request, cancelled.
func TestRunCancelledBeforeStartAt(t *testing.T) {
	srv := shardtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, Config{
		Address: srv.Addr.String(), Streaming: true,
		Requests: requests(repeat("/ok/2", 3)...), Shards: 1, StartAt: time.Now().Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || len(res.Data.Log.Collect()) != 3 {
		t.Fatalf("cancelled %v with %d results", res.Cancelled, len(res.Data.Log.Collect()))
	}
	for i, rr := range res.Data.Log.Collect() {
		if rr.Success || rr.Sent() {
			t.Errorf("request %d was sent: %+v", i, rr)
		}
	}
}
