package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/stampede-bench/stampede/bench/scrape"
)

// profilePollEvery is how often a deferred profile reads the server's
// running batch: often enough to start within a decode step or two of a
// full batch at the Rust client's thresholds, seldom enough that the
// scrape costs the server nothing measurable.
const profilePollEvery = 200 * time.Millisecond

// deferredProfile is the Rust client's --profile-batch-threshold N with
// --profile-duration D: during the run it reads the server's /metrics
// until the running-requests gauge reaches N, then profiles for D seconds
// (or until the run ends, whichever is first). Its lines go to stdout
// where --profile's do; what kept it from profiling goes to stderr. stop
// ends it and waits: call it once the run is over, before the block.
func (r *run) deferredProfile(ctx, after context.Context) (stop func()) {
	c := r.cfg
	threshold := float64(*c.ProfileBatchThreshold)
	duration := time.Duration(c.ProfileDuration * float64(time.Second))
	url := c.BaseURL + "/metrics"
	runDone := make(chan struct{})
	finished := make(chan struct{})
	fmt.Fprintf(r.stdout, "Profiler deferred until the server's batch holds %d running requests (--profile-batch-threshold)\n", *c.ProfileBatchThreshold)
	go func() {
		defer close(finished)
		peak, lastErr := 0.0, error(nil)
		t := time.NewTicker(profilePollEvery)
		defer t.Stop()
		for {
			n, err := scrape.ReadRunning(ctx, r.server.Control(), url, r.server.HeadersFor(url))
			if err == nil {
				peak = max(peak, n)
				if n >= threshold {
					break
				}
			}
			lastErr = err
			select {
			case <-runDone:
				if lastErr != nil && peak == 0 {
					fmt.Fprintf(r.stderr, "WARNING: --profile-batch-threshold: no profile taken: %v\n", lastErr)
				} else {
					fmt.Fprintf(r.stderr, "WARNING: --profile-batch-threshold %d: no profile taken: the server's batch held at most %.0f running requests\n",
						*c.ProfileBatchThreshold, peak)
				}
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		r.server.StartProfile(ctx, r.stdout)
		timer := time.NewTimer(duration)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-runDone:
		case <-ctx.Done():
		}
		r.server.StopProfile(after, r.stdout)
	}()
	return func() {
		close(runDone)
		<-finished
	}
}
