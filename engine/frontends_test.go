package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/shard/shardtest"
	"github.com/stampede-bench/stampede/sse"
)

// Requests go to the front end each names, every front end on
// connections of its own: each server sees exactly its share.
func TestFrontEndsGetTheirShare(t *testing.T) {
	a, b := shardtest.New(t), shardtest.New(t)
	const n = 30
	reqs := requests(repeat("/ok/3", n)...)
	for i := range reqs {
		reqs[i].FrontEnd = i % 2
	}
	res, err := Run(context.Background(), Config{
		FrontEnds: []string{a.Addr.String(), b.Addr.String()},
		Kind:      sse.Completions, Streaming: true,
		Requests: reqs, MaxConcurrency: 4, Shards: 2, CPUs: []int{-1},
		WarmConnections: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res.Data.Log.Collect() {
		if !r.Success {
			t.Fatalf("request %d failed: %s", i, r.Error)
		}
	}
	if ga, gb := a.Requests.Load(), b.Requests.Load(); ga != n/2 || gb != n/2 {
		t.Errorf("front ends saw %d and %d requests; want %d each", ga, gb, n/2)
	}
	// Kept-alive connections were reused (fewer connections than
	// requests), never across front ends (the counts above).
	if got := a.Accepted.Load() + b.Accepted.Load(); got >= n {
		t.Errorf("%d connections for %d requests: none was reused", got, n)
	}
}

func TestFrontEndOutOfRange(t *testing.T) {
	a := shardtest.New(t)
	reqs := requests("/ok/1", "/ok/1")
	reqs[1].FrontEnd = 1
	_, err := Run(context.Background(), Config{
		FrontEnds: []string{a.Addr.String()}, Kind: sse.Completions, Streaming: true,
		Requests: reqs, Shards: 1, CPUs: []int{-1},
	})
	if err == nil || !strings.Contains(err.Error(), "front end 1 of 1") {
		t.Fatalf("err = %v; want the request's front end named", err)
	}
}
