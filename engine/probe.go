package engine

import (
	"context"
	"crypto/tls"
	"sync"
	"time"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/shard"
)

// Probe describes a run's side probes (Python's --probe-request-rate, spec
// §c "Probes"). While the main requests run, one loop sends Request, waits
// for its answer, sleeps Interval, and starts over, until the main
// requests have all ended; its last request and sleep still count in the
// run's duration, as Python awaits the loop before taking it. The probes'
// E2EL shows how a lone short request fares while the server is loaded.
//
// The loop has its own keep-alive connection (a shard.Client, with the
// same parsers and kernel receive stamps as the main path): it is not held
// back by MaxConcurrency and never touches the main requests' connections.
// Python also keeps probes out of its concurrency semaphore, but they share
// the aiohttp pool, whose size is --max-concurrency; with a cap a Python
// probe can wait for a main request to free a connection, which ours does
// not.
type Probe struct {
	// Request is the probe; Index is not used (probe i is number i).
	Request Request
	// Interval is the sleep after each probe; 0 sends them back to back
	// (Python's sleep(0) at an infinite rate).
	Interval time.Duration
}

// probeLoop runs the side probes of one run.
type probeLoop struct {
	client   *shard.Client
	req      shard.Request
	interval time.Duration
	rec      *metrics.Recorder
	sent     int
	// pause, when not nil, replaces the sleep after each probe: a test
	// waits there for an event of its server's instead of a time.
	pause func(ctx context.Context)

	stopCh, doneCh chan struct{}
	stopOnce       sync.Once
	results        []metrics.RequestResult
}

// newProbeLoop prepares p's loop against base's server; tlsConfig nil is
// plain TCP.
func newProbeLoop(p *Probe, base shard.Config, tlsConfig *tls.Config) *probeLoop {
	if tlsConfig != nil {
		tlsConfig = shard.PrepareTLS(tlsConfig, 1)
	}
	// The probe's answer is parsed on its own; it shares no budget.
	base.Budget = nil
	q := p.Request
	return &probeLoop{
		client:   shard.NewClient(&base, tlsConfig, nil),
		req:      shard.Request{Wire: q.Wire, PromptLen: q.PromptLen, NumInputSequences: q.NumInputSequences, PoolingUsage: q.PoolingUsage},
		interval: p.Interval,
		rec:      metrics.NewRecorder(metrics.Options{}),
		stopCh:   make(chan struct{}),
		doneCh:   make(chan struct{}),
	}
}

// start sends probes on a goroutine until stop, or until ctx is cancelled.
func (l *probeLoop) start(ctx context.Context) {
	go func() {
		defer close(l.doneCh)
		defer l.client.Close()
		l.loop(ctx)
		if log, err := l.rec.Log(metrics.SortOptions{Requests: l.sent}); err == nil {
			l.results = log.Collect()
			log.Close()
		}
	}()
}

// loop is Python's probe_loop: until stopped, send a probe (sent as soon
// as the loop reaches it, so with no queue time), await it, sleep.
func (l *probeLoop) loop(ctx context.Context) {
	sleep := time.NewTimer(time.Hour)
	sleep.Stop()
	for ctx.Err() == nil {
		select {
		case <-l.stopCh:
			return
		default:
		}
		var hs shard.HandshakeTimes
		l.client.Do(l.rec, nil, l.sent, &l.req, -1, &hs)
		l.sent++
		if l.pause != nil {
			l.pause(ctx)
			continue
		}
		sleep.Reset(l.interval)
		select {
		case <-sleep.C:
		case <-ctx.Done():
			sleep.Stop()
		}
	}
}

// interrupt makes the probe in flight end by deadline (the zero time: at
// once), failing "cancelled", and no other start. Any goroutine.
func (l *probeLoop) interrupt(deadline time.Time) { l.client.Interrupt(deadline) }

// stop tells the loop that the main requests have ended and waits for it:
// the probe in flight and the sleep after it run to their end first, as in
// Python, where the stop event is only checked before each probe.
func (l *probeLoop) stop() []metrics.RequestResult {
	l.stopOnce.Do(func() { close(l.stopCh) })
	<-l.doneCh
	return l.results
}
