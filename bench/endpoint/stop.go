package endpoint

import (
	"context"
	"time"

	"github.com/stampede-bench/stampede/engine"
)

// Stopping a run takes up to three steps (docs/cli.md "Stopping a run"):
//
//  1. cancelling Run's context (the first Ctrl-C, SIGTERM or SIGHUP) stops sending; requests
//     in flight get --cancel-grace-sec to finish, then what was measured
//     is printed and saved;
//  2. closing the hard-stop channel (a second signal) ends the grace at
//     once: the requests still in flight are failed "cancelled", and the
//     block and the result file are still written from what completed;
//  3. a third signal is the command's to handle: it exits without
//     results.

type hardStopKey struct{}

// WithHardStop returns a copy of ctx that carries stop: when stop is
// closed, after ctx was cancelled, the run stops waiting for requests in
// flight and reports what completed. Closing stop before ctx is cancelled
// stops the run the same way.
func WithHardStop(ctx context.Context, stop <-chan struct{}) context.Context {
	return context.WithValue(ctx, hardStopKey{}, stop)
}

// HardStop is the channel WithHardStop put in ctx; nil (never closed)
// when it has none.
func HardStop(ctx context.Context) <-chan struct{} {
	stop, _ := ctx.Value(hardStopKey{}).(<-chan struct{})
	return stop
}

// WaitRun waits for a started engine run, aborting it when ctx's hard
// stop (a second Ctrl-C, WithHardStop) comes first.
func WaitRun(ctx context.Context, runner *engine.Runner) (*engine.Result, error) {
	ended := make(chan struct{})
	defer close(ended)
	if stop := HardStop(ctx); stop != nil {
		go func() {
			select {
			case <-stop:
				runner.Abort()
			case <-ended:
			}
		}()
	}
	return runner.Wait()
}

// AfterRunContext is for the requests made once the measured part is over
// (the second /metrics scrape, stopping the profiler): they go out even
// after a first Ctrl-C, as Python's would, but only for what is left of
// the grace period, counted from that stop (grace is --cancel-grace-sec),
// so that a server that no longer answers cannot hold the results back
// past it; and not after a hard stop, which must not wait on the server.
func AfterRunContext(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	after, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := HardStop(ctx)
	go func() {
		select {
		case <-ctx.Done():
		case <-stop:
			cancel()
			return
		case <-after.Done():
			return
		}
		graceEnd := time.NewTimer(grace)
		defer graceEnd.Stop()
		select {
		case <-graceEnd.C:
		case <-stop:
		case <-after.Done():
		}
		cancel()
	}()
	return after, cancel
}
