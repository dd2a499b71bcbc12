package endpoint

import (
	"context"
	"testing"
	"time"
)

// TestAfterRunContextGrace: the requests made after the measured part
// outlive a first stop, but only for the grace period counted from it, so
// a server that no longer answers cannot hold the results back past it;
// a hard stop ends them at once.
func TestAfterRunContextGrace(t *testing.T) {
	t.Run("first stop", func(t *testing.T) {
		ctx, stop := context.WithCancel(context.Background())
		after, cancel := AfterRunContext(ctx, time.Hour)
		defer cancel()
		stop()
		if after.Err() != nil {
			t.Fatal("after-run requests ended with the first stop; want them to have the grace")
		}
		short, cancelShort := AfterRunContext(ctx, 10*time.Millisecond)
		defer cancelShort()
		select {
		case <-short.Done():
		case <-time.After(time.Minute):
			t.Fatal("after-run requests outlived a 10 ms grace by a minute")
		}
	})
	t.Run("hard stop", func(t *testing.T) {
		hard := make(chan struct{})
		ctx, stop := context.WithCancel(WithHardStop(context.Background(), hard))
		defer stop()
		after, cancel := AfterRunContext(ctx, time.Hour)
		defer cancel()
		close(hard)
		select {
		case <-after.Done():
		case <-time.After(time.Minute):
			t.Fatal("after-run requests outlived a hard stop by a minute")
		}
	})
	t.Run("no stop", func(t *testing.T) {
		after, cancel := AfterRunContext(context.Background(), 0)
		defer cancel()
		if after.Err() != nil {
			t.Fatal("after-run requests ended without a stop")
		}
	})
}
