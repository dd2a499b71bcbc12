package engine

import (
	"errors"
	"fmt"
	"sync"
)

// feed is the caller's side of a Config.Feed run: a command whose requests
// depend on earlier answers (a conversation's next turn carries the
// previous answer) cannot encode them all before the clock starts, so it
// releases each one itself, when it is ready, with Runner.Submit. The
// shards, the queue, the concurrency cap and the recorders are the same as
// for a scheduled run; only the producer differs.
type feed struct {
	// started is closed once the shards are up and the run's clock counts
	// (where a scheduled run starts its dispatch).
	started     chan struct{}
	startedOnce sync.Once
	// end is closed by EndFeed: nothing more is submitted and everything
	// submitted has ended.
	end     chan struct{}
	endOnce sync.Once
	// next is the next queue position; Submit's goroutine only.
	next int
}

func newFeed() *feed {
	return &feed{started: make(chan struct{}), end: make(chan struct{})}
}

func (f *feed) start() { f.startedOnce.Do(func() { close(f.started) }) }

// ended is closed by EndFeed; nil (never ready) without a feed.
func (f *feed) ended() <-chan struct{} {
	if f == nil {
		return nil
	}
	return f.end
}

// ErrFeedFull is Submit's error when every position of Config.Requests has
// been released.
var ErrFeedFull = errors.New("engine: every request position of the run has been submitted")

// Started is closed once a Feed run's shards are up (after the warm-up of
// connections) and its clock counts; requests submitted before wait in the
// queue. Nil for a scheduled run.
func (r *Runner) Started() <-chan struct{} {
	if r.feed == nil {
		return nil
	}
	return r.feed.started
}

// Submit releases req at the next queue position of a Feed run and
// returns that position, which its result's Index carries (req.Index is
// replaced by it). Calls must come from one goroutine. req.Wire must not
// change afterwards: a shard reads it when it takes the request.
func (r *Runner) Submit(req Request) (int, error) {
	if r.feed == nil {
		return 0, errors.New("engine: Submit needs a run started with Config.Feed")
	}
	if req.FrontEnd < 0 || req.FrontEnd >= max(1, len(r.cfg.FrontEnds)) {
		return 0, fmt.Errorf("engine: Submit of a request to front end %d of %d", req.FrontEnd, len(r.cfg.FrontEnds))
	}
	select {
	case <-r.feed.end:
		return 0, errors.New("engine: Submit after EndFeed")
	case <-r.done:
		return 0, errors.New("engine: Submit after the run ended")
	default:
	}
	i := r.feed.next
	if i >= r.queue.Len() {
		return 0, ErrFeedFull
	}
	r.feed.next++
	req.Index = i
	r.cfg.Requests[i] = req
	r.queue.Load(i, shardRequest(req))
	r.queue.Release(i, r.clock.Now())
	r.transport.Wake()
	return i, nil
}

// Submitted returns how many requests Submit released; the positions past
// it end the run failed "cancelled", never sent. Submit's goroutine only.
func (r *Runner) Submitted() int {
	if r.feed == nil {
		return 0
	}
	return r.feed.next
}

// EndFeed ends a Feed run once the caller will submit nothing more and
// every request it submitted has ended (its OnEnd came back); the run then
// stops as a scheduled one does after its last request. Any goroutine may
// call it, any number of times.
func (r *Runner) EndFeed() {
	if r.feed != nil {
		r.feed.endOnce.Do(func() { close(r.feed.end) })
	}
}
