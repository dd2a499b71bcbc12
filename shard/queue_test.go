package shard

import (
	"sync"
	"testing"
)

// A released request is not taken before it is loaded, and a loaded one
// not before it is released: the queue hands a shard only requests whose
// bytes are in memory, on the schedule's time.
func TestQueueTakesOnlyLoadedRequests(t *testing.T) {
	q := NewQueue(3, 0)
	q.Release(0, 10)
	q.Release(1, 20)
	if _, _, ok := q.take(); ok {
		t.Fatal("took request 0 before it was loaded")
	}
	q.Load(0, Request{Wire: []byte("zero")})
	i, arrival, ok := q.take()
	if !ok || i != 0 || arrival != 10 {
		t.Fatalf("take = %d, %d, %v; want 0, 10, true", i, arrival, ok)
	}
	q.Load(1, Request{Wire: []byte("one")})
	q.Load(2, Request{Wire: []byte("two")})
	if i, _, ok := q.take(); !ok || i != 1 {
		t.Fatalf("take = %d, %v; want 1", i, ok)
	}
	if _, _, ok := q.take(); ok {
		t.Fatal("took request 2 before it was released")
	}
	if got := string(q.request(1).Wire); got != "one" {
		t.Errorf("request 1's bytes = %q", got)
	}
}

// The queue's hold on a request's bytes ends with the request, and a page
// goes once every request on it ended.
func TestQueueLetsEndedRequestsGo(t *testing.T) {
	n := pageLen + 2
	q := NewQueue(n, 0)
	for i := range n {
		q.Load(i, Request{Wire: make([]byte, 10)})
		q.Release(i, 0)
	}
	if b, r := q.Held(); b != int64(10*n) || r != n {
		t.Fatalf("Held = %d bytes, %d requests; want %d, %d", b, r, 10*n, n)
	}
	for range pageLen {
		i, _, ok := q.take()
		if !ok {
			t.Fatal("nothing to take")
		}
		req := q.request(i)
		q.finish(req)
		if req.Wire != nil {
			t.Fatalf("request %d keeps its bytes after it ended", i)
		}
	}
	if q.pages[0].Load() != nil {
		t.Error("page 0 is kept after all its requests ended")
	}
	if q.pages[1].Load() == nil {
		t.Error("page 1 went while its requests wait")
	}
	if b, r := q.Held(); b != 20 || r != 2 {
		t.Errorf("Held = %d bytes, %d requests; want 20, 2", b, r)
	}
}

// WaitTaken returns once the shards took the requests it waits for, and
// when its stop channel closes.
func TestQueueWaitTaken(t *testing.T) {
	q := NewQueue(4, 0)
	for i := range 4 {
		q.Load(i, Request{})
		q.Release(i, 0)
	}
	var wg sync.WaitGroup
	got := make(chan bool, 1)
	wg.Go(func() { got <- q.WaitTaken(3, nil) })
	for range 3 {
		if _, _, ok := q.take(); !ok {
			t.Fatal("nothing to take")
		}
	}
	wg.Wait()
	if !<-got {
		t.Fatal("WaitTaken(3) = false after 3 takes")
	}
	stop := make(chan struct{})
	close(stop)
	if q.WaitTaken(10, stop) {
		t.Fatal("WaitTaken(10) = true with 4 requests")
	}
}
