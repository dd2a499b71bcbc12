package scrape

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/stampede-bench/stampede/bench/plan"
)

// profilePollEvery is how often a deferred profile reads the server's
// running batch: often enough to start within a decode step or two of a
// full batch at the Rust client's thresholds, seldom enough that the
// scrape costs the server nothing measurable.
const profilePollEvery = 200 * time.Millisecond

// DeferredProfile is the Rust client's --profile-batch-threshold N with
// --profile-duration D.
type DeferredProfile struct {
	Client    *http.Client
	URL       string // the server's /metrics
	Headers   []plan.Header
	Threshold int
	Duration  time.Duration
	// Start and Stop call the server's profiler; Stop gets the context of
	// the requests made once the measured part is over.
	Start, Stop    func(ctx context.Context)
	Stdout, Stderr io.Writer
}

// Run reads the server's /metrics during the run until the
// running-requests gauge reaches the threshold, then profiles for the
// duration (or until the run ends, whichever is first). Its lines go to
// stdout where --profile's do; what kept it from profiling goes to stderr.
// stop ends it and waits: call it once the run is over, before the block.
func (d DeferredProfile) Run(ctx, after context.Context) (stop func()) {
	threshold := float64(d.Threshold)
	runDone := make(chan struct{})
	finished := make(chan struct{})
	fmt.Fprintf(d.Stdout, "Profiler deferred until the server's batch holds %d running requests (--profile-batch-threshold)\n", d.Threshold)
	go func() {
		defer close(finished)
		peak, lastErr := 0.0, error(nil)
		t := time.NewTicker(profilePollEvery)
		defer t.Stop()
		for {
			n, err := ReadRunning(ctx, d.Client, d.URL, d.Headers)
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
					fmt.Fprintf(d.Stderr, "WARNING: --profile-batch-threshold: no profile taken: %v\n", lastErr)
				} else {
					fmt.Fprintf(d.Stderr, "WARNING: --profile-batch-threshold %d: no profile taken: the server's batch held at most %.0f running requests\n",
						d.Threshold, peak)
				}
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		d.Start(ctx)
		timer := time.NewTimer(d.Duration)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-runDone:
		case <-ctx.Done():
		}
		d.Stop(after)
	}()
	return func() {
		close(runDone)
		<-finished
	}
}
