package engine

import (
	"context"
	"testing"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/shard/shardtest"
	"github.com/stampede-bench/stampede/sse"
)

// A Feed run sends what the caller submits, each request only after the
// one it follows ended (a chain, as a conversation's turns are), and ends
// when the caller says so, with the positions never submitted failed.
func TestFeedChainsRequestsOnTheirEnds(t *testing.T) {
	srv := shardtest.New(t)
	ended := make(chan int, 8)
	r, err := Start(context.Background(), Config{
		Address: srv.Addr.String(), Kind: sse.Completions, Streaming: true,
		Requests: make([]Request, 5), Feed: true, Shards: 2, CPUs: []int{-1},
		OnEnd: func(res *metrics.RequestResult) { ended <- res.Index },
	})
	if err != nil {
		t.Fatal(err)
	}
	<-r.Started()
	var order []int
	for k := range 4 {
		i, err := r.Submit(Request{Index: 99, Wire: shardtest.Wire("/ok/2"), PromptLen: k})
		if err != nil || i != k {
			t.Fatalf("submit %d: position %d, %v", k, i, err)
		}
		order = append(order, <-ended)
	}
	if r.Submitted() != 4 {
		t.Errorf("Submitted = %d; want 4", r.Submitted())
	}
	r.EndFeed()
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for k, i := range order {
		if i != k {
			t.Fatalf("request %d ended as position %d; want one at a time, in order", k, i)
		}
		got := res.Data.Log.Collect()[k]
		if !got.Success || got.Index != k {
			t.Errorf("result %d: %+v; want success and index %d", k, got, k)
		}
		if k > 0 && got.StartNs < res.Data.Log.Collect()[k-1].StartNs+res.Data.Log.Collect()[k-1].LatencyNs {
			t.Errorf("request %d started before request %d ended", k, k-1)
		}
	}
	if last := res.Data.Log.Collect()[4]; last.Success || last.Error != "cancelled" {
		t.Errorf("never-submitted position: %+v; want failed cancelled", last)
	}
	if _, err := r.Submit(Request{}); err == nil {
		t.Error("Submit after the run accepted")
	}
}

func TestSubmitNeedsFeed(t *testing.T) {
	srv := shardtest.New(t)
	r, err := Start(context.Background(), Config{Address: srv.Addr.String(), Streaming: true, Requests: requests("/ok/1"), Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Submit(Request{Wire: shardtest.Wire("/ok/1")}); err == nil {
		t.Error("Submit on a scheduled run accepted")
	}
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
}
