package shard

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"

	"github.com/stampede-bench/stampede/metrics"
)

// Transport is how a run's requests go out: the shard loops, or the
// goroutines of the crypto/tls fallback. Start chooses it; the caller
// releases requests through Config.Queue and steers it through these
// methods.
type Transport interface {
	// Wake tells one idle worker that a request was released. The
	// releasing goroutine only.
	Wake()
	// Stop lets the workers return once idle; Abort fails the requests in
	// flight as "cancelled" and stops them. Any goroutine.
	Stop()
	Abort()
	// Wait returns when every worker has returned.
	Wait()
	// Health is each loop's account, or the fallback's as one entry.
	// After Wait.
	Health() []Health
	// Recorders are the workers' recorders, one per loop or one for the
	// fallback, to merge after Wait.
	Recorders() []*metrics.Recorder
	// Loops counts the threads locked to an event loop (0 on the
	// fallback), for the caller's GOMAXPROCS.
	Loops() int
}

var (
	_ Transport = (*loopSet)(nil)
	_ Transport = fallbackTransport{}
)

// RunConfig is a run's transport as Start builds it.
type RunConfig struct {
	// Base is every loop's Config; Start sets ID, CPU, Recorder and TLS.
	// Base.Warm and Base.Warmed are used only on loops (Start counts the
	// loops into Warmed).
	Base Config
	// Loops is how many shard loops a plain or loop-TLS run gets; CPUs,
	// if any, where loop i is pinned (CPUs[i % len(CPUs)]; < 0: not).
	Loops int
	CPUs  []int
	// Recording is every recorder's options.
	Recording metrics.Options
	// TLS, when set, speaks TLS to the server named by its ServerName
	// (the caller fills it in, and CurvesEnv's key exchanges: see
	// WithCurvesFromEnv) on at most Conns connections at once; nil
	// is plain TCP. LoopTLS false keeps TLS off the loops (the fallback
	// for every connection).
	TLS     *tls.Config
	Conns   int
	LoopTLS bool
	// Ctx, when set, ends the probing handshake Start makes over TLS as
	// soon as it is cancelled (a Ctrl-C before the run began); nil: the
	// probe runs to its end or its connect timeout.
	Ctx context.Context
}

// Start starts cfg's transport and owns its choice: plain TCP on the
// shard loops; TLS 1.3 on the loops when one probing handshake shows the
// server negotiates it (probeTLS); else one crypto/tls goroutine per
// connection (startFallback), whose Health says why. Either TLS path
// gets PrepareTLS's defaults.
func Start(cfg RunConfig) (Transport, error) {
	if cfg.TLS != nil && len(cfg.Base.Dests) > 1 {
		return nil, errors.New("several destinations are plain TCP only: TLS names one server")
	}
	if cfg.TLS == nil {
		return startLoops(cfg)
	}
	why := "event-loop path switched off"
	if cfg.LoopTLS {
		prepared := PrepareTLS(cfg.TLS, cfg.Conns)
		var ok bool
		ctx := cfg.Ctx
		if ctx == nil {
			ctx = context.Background()
		}
		if ok, why = probeRun(ctx, cfg.Base.Addr.String(), prepared, len(cfg.TLS.CurvePreferences) == 0, cfg.Base.ConnectTimeout); ok {
			// One ticket store for the loops, which share the server.
			cfg.Base.TLS = withTicketStore(prepared)
			return startLoops(cfg)
		}
	}
	base := cfg.Base
	base.ID, base.CPU = 0, -1
	base.Warm, base.Warmed = 0, nil
	base.Recorder = metrics.NewRecorder(cfg.Recording)
	return fallbackTransport{startFallback(base, cfg.TLS, cfg.Conns, why)}, nil
}

// loopSet is the epoll transport: one pinned event loop per shard.
type loopSet struct {
	shards []*Shard
	recs   []*metrics.Recorder
	wg     sync.WaitGroup
	next   int // round-robin start for wake-ups; Wake's goroutine only
}

func startLoops(cfg RunConfig) (*loopSet, error) {
	set := &loopSet{}
	if cfg.Base.Warmed != nil {
		cfg.Base.Warmed.Add(cfg.Loops)
	}
	for i := range cfg.Loops {
		sc := cfg.Base
		sc.ID = i
		sc.CPU = -1
		if len(cfg.CPUs) > 0 {
			sc.CPU = max(cfg.CPUs[i%len(cfg.CPUs)], -1)
		}
		sc.Recorder = metrics.NewRecorder(cfg.Recording)
		s, err := New(sc)
		if err != nil {
			if sc.Warmed != nil {
				// The loops not started never say Done.
				sc.Warmed.Add(i - cfg.Loops)
			}
			set.Abort()
			set.Wait()
			return nil, err
		}
		set.shards = append(set.shards, s)
		set.recs = append(set.recs, sc.Recorder)
		set.wg.Go(s.Run)
	}
	return set, nil
}

// Wake wakes one shard that sleeps with a free slot, if any; busy
// shards look at the queue after every event anyway.
func (s *loopSet) Wake() {
	for k := range s.shards {
		i := (s.next + k) % len(s.shards)
		if s.shards[i].WakeIfSleeping() {
			s.next = i + 1
			return
		}
	}
}

func (s *loopSet) Stop() {
	for _, sh := range s.shards {
		sh.Stop()
	}
}

func (s *loopSet) Abort() {
	for _, sh := range s.shards {
		sh.Abort()
	}
}

func (s *loopSet) Wait() { s.wg.Wait() }

func (s *loopSet) Health() []Health {
	h := make([]Health, len(s.shards))
	for i, sh := range s.shards {
		h[i] = sh.Health()
	}
	return h
}

func (s *loopSet) Recorders() []*metrics.Recorder { return s.recs }
func (s *loopSet) Loops() int                     { return len(s.shards) }

// fallbackTransport is tlsFallback as a run's Transport.
type fallbackTransport struct{ t *tlsFallback }

func (f fallbackTransport) Wake()            { f.t.Wake() }
func (f fallbackTransport) Stop()            { f.t.Stop() }
func (f fallbackTransport) Abort()           { f.t.Abort() }
func (f fallbackTransport) Wait()            { f.t.Wait() }
func (f fallbackTransport) Health() []Health { return []Health{f.t.Health()} }
func (f fallbackTransport) Loops() int       { return 0 }
func (f fallbackTransport) Recorders() []*metrics.Recorder {
	return []*metrics.Recorder{f.t.cfg.Recorder}
}
