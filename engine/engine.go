package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/shard"
	"github.com/stampede-bench/stampede/sse"
)

// Request is one benchmark request, encoded before the run.
type Request struct {
	// Index is the request's position in the dataset; results carry it.
	Index int
	// FrontEnd indexes Config.FrontEnds: where the request goes (0
	// without them). Its Wire names that front end in its Host header.
	FrontEnd int
	// Wire is the whole encoded HTTP request (httpwire.AppendRequest).
	Wire []byte
	// PromptLen is the dataset's prompt length in tokens.
	PromptLen int
	// NumInputSequences is the number of inputs of a pooling request over a
	// list prompt; 0 means 1.
	NumInputSequences int
	// PoolingUsage is where a pooling answer's usage is, by the request's
	// encoding_format.
	PoolingUsage sse.PoolingUsage
	// OffsetNs is the request's send time after the start, from a timed
	// trace; used only with Config.SelfTimed.
	OffsetNs int64
}

// DefaultMaxBufferedBytes is the default of --max-buffered-bytes (see
// shard.DefaultBudgetBytes for why it is this size).
const DefaultMaxBufferedBytes = shard.DefaultBudgetBytes

// Config describes one run.
type Config struct {
	// Network and Address locate the server: "tcp" (or "tcp4", "tcp6") and
	// "host:port". A host name is resolved once, before the run.
	Network, Address string
	// SourceAddresses, when set, are the local addresses the connections
	// are bound to, round-robin (--source-addresses); Start refuses one
	// this host cannot bind, by name.
	SourceAddresses []netip.Addr
	// FrontEnds, when set, are several "host:port" servers of one
	// service, each request sent to FrontEnds[Request.FrontEnd] and
	// Address unused; each has its own connections. Plain TCP only.
	FrontEnds []string
	// TLS, when set, sends over TLS (https:// URLs): on the shard loops
	// when the server negotiates TLS 1.3 (one probing
	// handshake before the run tells), else with a goroutine per
	// connection.
	TLS *tls.Config

	Kind      sse.Kind // stream chunk format
	Streaming bool     // false for non-streaming pooling backends

	// Requests are the run's requests, all in memory from the start; or,
	// when Store is set (and Requests nil), the store holds them and the
	// run keeps only a window of them in memory (window.go). The caller
	// closes the store after the run.
	Requests []Request
	Store    *Store

	// RequestRate is requests per second (math.Inf(1): all at once);
	// Burstiness the gamma shape (1: Poisson). RampUp, when set, replaces the
	// fixed rate. SelfTimed sends each request at its OffsetNs instead.
	RequestRate, Burstiness float64
	RampUp                  *RampUp
	SelfTimed               bool
	// Seed seeds the default GapSource; Gaps, when set, replaces it.
	Seed int64
	Gaps GapSource

	// MaxConcurrency caps requests in flight over all shards; 0 = no cap.
	MaxConcurrency int
	// Shards sets the shard count; 0 picks one per usable physical core, or
	// ⌈len(Requests)/MaxConnectionsPerWorker⌉ when that is set.
	Shards                  int
	MaxConnectionsPerWorker int
	// CPUs lists the CPUs to pin shards to, in order (shards wrap around
	// when more than CPUs); a negative entry leaves its shards unpinned;
	// nil uses the detected topology's placement.
	CPUs []int

	// ConnectTimeout bounds a connect (default 30 s); RequestTimeout a whole
	// request (default 6 h, Python's); CancelGrace how long in-flight
	// requests may finish after ctx is cancelled (default 5 s).
	ConnectTimeout, RequestTimeout, CancelGrace time.Duration

	// KernelTimestamps stamps reads with the kernel's receive time.
	KernelTimestamps bool
	// MaxResponseBytes fails a request whose answer grows past it;
	// MaxBufferedBytes bounds the response bytes held unparsed over all
	// requests in flight, failing a request that grows past it (see
	// shard.Budget). 0 means no bound.
	MaxResponseBytes, MaxBufferedBytes int64
	// KeepText keeps every request's text.
	KeepText bool
	// Log says where the run's record log lives (metrics.LogConfig): a
	// full disk there stops the run as a cancellation does, and
	// Result.LogError says why.
	Log metrics.LogConfig
	// WindowBytes, when set, gives the bytes of the requests held in
	// memory for sending now (the prompt window), for the memory samples;
	// unset, they are the window's own (Runner.Window: a Store's window,
	// or the loaded Requests not yet ended).
	WindowBytes func() int64
	// CountTokens, when set, counts the generated text of each success
	// whose usage gave no output count, once, after the run, as the
	// records are sorted (metrics.SortOptions): never on a shard.
	CountTokens func(text string) int
	// KeepUncountedText keeps the text of the streams whose usage gave no
	// output token count, to be counted after the run (metrics.Options).
	KeepUncountedText bool
	// Feed, when set, leaves the releases to the caller (Runner.Submit,
	// see feed.go) instead of the arrival schedule: Requests then only
	// sizes the run, and the rate, ramp-up and self-timing are unused.
	Feed bool
	// OnEnd, when set, is called with each request's result as it ends,
	// on the thread that ran it (a shard's loop): it must be quick and
	// safe for concurrent calls, such as a send on a buffered channel.
	OnEnd func(*metrics.RequestResult)
	// RunningUsage records the tokens each token event carried, from the
	// running usage of each chunk (--per-token-itl).
	RunningUsage bool
	// WarmConnections opens min(MaxConcurrency, len(Requests)) keep-alive
	// connections (each shard its share, rounded up) before the schedule
	// starts, paced so the server's accept
	// queue keeps up (see shard/warm.go): TTFT then holds no connect, as
	// for a long-running client; over TLS on the shard loops their
	// handshakes are done too. Not Python's behaviour; the fallback TLS
	// transport (a goroutine per connection) ignores it.
	WarmConnections bool
	// Probe, when set, sends side probes during the run (see Probe); their
	// results are Result.Probes.
	Probe *Probe
	// StartAt, when set, holds the schedule (after any warm-up) until
	// this wall-clock instant, so that agents on several hosts start one
	// schedule together; the schedule and the duration count from it.
	StartAt time.Time
}

// Defaults for the zero values of Config's timeouts.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultRequestTimeout = 6 * time.Hour
	DefaultCancelGrace    = 5 * time.Second
)

// Result is what a run measured, and how well the client kept up.
type Result struct {
	Data   metrics.RunData
	Shards int
	// RampUpEvents are the ramp's whole-rate changes (spec §c).
	RampUpEvents []RampUpEvent
	// Start is the wall-clock time of run time 0, the origin of every
	// ArrivalNs and StartNs (the schedule itself starts a little later, once
	// the shards are up); MonotonicStartNs is the same instant as absolute
	// CLOCK_MONOTONIC nanoseconds, for matching a server's log of send
	// times.
	Start            time.Time
	MonotonicStartNs int64
	// ScheduleStartNs is the run time the arrival schedule counts from:
	// request i was due at ScheduleStartNs + its offset.
	ScheduleStartNs int64
	// Cancelled is set when ctx was cancelled or Abort called before the
	// run ended; Aborted when Abort cut the grace short, so that the
	// requests still in flight were failed "cancelled" at once.
	Cancelled, Aborted bool
	// LogError is why the record log could not be written (a full disk),
	// which stopped the run as a cancellation; nil if none.
	LogError error
	Health   Health
	// Probes are the side probes' results in sending order, on the run
	// clock (Config.Probe); the run's duration covers the probe loop.
	Probes []metrics.RequestResult
}

// Health tells how well the client itself kept up (DESIGN principle 6).
type Health struct {
	Shards []ShardHealth
	// ScheduleLag is actual minus intended release time over all requests.
	ScheduleLagP50, ScheduleLagP99, ScheduleLagMax time.Duration
	// LongestTurn is the longest event-loop pass of any shard.
	LongestTurn time.Duration
	// DeadlineLateMax is the longest a request ran past its deadline
	// before it was failed and its connection closed (0: no deadline fired).
	DeadlineLateMax time.Duration
	// KernelStampCoverage is the fraction of reads that carried a kernel
	// receive timestamp (0 without KernelTimestamps).
	KernelStampCoverage float64
	// Sent counts requests whose last byte went out; TxStamped those timed
	// by the kernel's transmit stamp.
	Sent, TxStamped int64
	// TokenEvents counts token events; SharedStamps those that carried the
	// same receive stamp as the event before them in their stream (one
	// read), so that the ITL between them, 0, measured nothing.
	TokenEvents, SharedStamps int64
	// Connect trouble summed over the shards (see ShardHealth).
	SlowConnects, SynRetransmits, DroppedBeforeResponse, Reconnects int64
	// TLSHandshakeTimeouts sums the shards' requests failed because the
	// connect timeout ran out in their TLS handshake.
	TLSHandshakeTimeouts int64
	// Resent sums the shards' re-sent requests; StoppedReuse counts the
	// shards that stopped reusing connections; FreshBeforeReuse sums the
	// requests that opened a fresh connection while the shards did not
	// know yet whether the server keeps connections alive (see
	// ShardHealth).
	Resent           int64
	StoppedReuse     int
	FreshBeforeReuse int64
	// Warm sums the shards' warm-ups (Longest is the longest of them).
	Warm WarmStats
	// Memory is the resident set sampled while the streams were open;
	// zero Samples where it cannot be read.
	Memory MemorySamples
	// Window is what the requests' window held (Runner.Window); for a run
	// of Config.Requests, all of them.
	Window WindowStats
	// StoreErr, when set, is the read of the request store that failed and
	// stopped the run, as a cancellation does.
	StoreErr error
	// Log is the record log's size once sorted.
	Log LogHealth
}

// LogHealth is the size of a run's sorted record log: its records, the
// bytes it took on disk and those it kept in memory, and the most bytes
// the shards' chunks took while the run was recording.
type LogHealth struct {
	Records                                 int
	DiskBytes, MemoryBytes, PeakBufferBytes int64
}

// Run runs cfg's requests and returns the measurements. While it runs,
// GOMAXPROCS is at least the shard count + 2 (see procs.go). Cancelling ctx
// stops sending; requests in flight get CancelGrace to finish, the rest
// and those never sent are failed "cancelled", and the results so far are
// returned with Result.Cancelled set.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	r, err := Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return r.Wait()
}

// Runner is a started run. Progress may be called from any goroutine.
type Runner struct {
	cfg       Config
	queue     *shard.Queue
	clock     shard.Clock
	recorders []*metrics.Recorder
	spool     *metrics.Spool
	// logFailed is closed with logErr set when the record log could not
	// be written: the run stops as after a cancellation.
	logFailed chan struct{}
	logOnce   sync.Once
	logErr    error
	transport shard.Transport
	probes    *probeLoop // nil without Config.Probe
	// warmed is done when every shard's warm-up ended.
	warmed sync.WaitGroup
	done   chan struct{}
	// aborted is cancelled by Abort: stop now, without the grace.
	aborted context.Context
	abort   context.CancelFunc
	result  *Result
	err     error
	// set is the run's requests as the engine reads them beside their
	// bytes; window loads a Store's into the queue (nil otherwise); feed
	// is the Submit side of a Feed run (nil otherwise).
	set    requestSet
	window *window
	feed   *feed
	// storeFailed is cancelled when the window's read of the store fails.
	storeFailed context.Context
	failStore   context.CancelCauseFunc
	// wakeMu lets the dispatcher and the window both wake the shards
	// (Transport.Wake takes one goroutine at a time).
	wakeMu sync.Mutex
	// open is the most streams open at once: the requests, or fewer
	// under MaxConcurrency.
	open int
}

// Start validates cfg, starts the transport and the schedule, and returns
// at once.
func Start(ctx context.Context, cfg Config) (*Runner, error) {
	cfg = withDefaults(cfg)
	if cfg.Feed {
		// Submit fills the positions in; the caller's slice stays as given.
		cfg.Requests = slices.Clone(cfg.Requests)
	}
	set, err := requestsOf(cfg)
	if err != nil {
		return nil, err
	}
	offsets, rates, err := schedule(cfg, set)
	if err != nil {
		return nil, err
	}
	addr, err := resolve(cfg.Network, cfg.Address)
	if err != nil && len(cfg.FrontEnds) == 0 {
		return nil, err
	}
	dests, err := resolveFrontEnds(cfg, set)
	if err != nil {
		return nil, err
	}
	if len(dests) > 0 {
		addr = dests[0]
	}
	if err := shard.CheckSources(cfg.SourceAddresses, addr); err != nil {
		return nil, err
	}
	n := set.Len()
	count, err := shardCount(cfg, n)
	if err != nil {
		return nil, err
	}
	cpus := cfg.CPUs
	if len(cpus) == 0 {
		if topo, err := DetectTopology(); err == nil {
			cpus = topo.Placement()
		}
	}
	slotsTotal := cfg.MaxConcurrency
	if slotsTotal <= 0 {
		slotsTotal = n
	}
	r := &Runner{
		cfg:   cfg,
		set:   set,
		queue: shard.NewQueue(n, cfg.MaxConcurrency),
		clock: shard.NewClock(),
		done:  make(chan struct{}),
		open:  min(slotsTotal, n),
	}
	r.aborted, r.abort = context.WithCancel(context.Background())
	r.storeFailed, r.failStore = context.WithCancelCause(context.Background())
	r.logFailed = make(chan struct{})
	logCfg := cfg.Log
	logCfg.OnError = func(err error) {
		r.logOnce.Do(func() { r.logErr = err; close(r.logFailed) })
	}
	r.spool = metrics.NewSpool(logCfg)
	var src *storeReader
	switch {
	case cfg.Feed:
		r.feed = newFeed()
	case cfg.Store != nil:
		if src, err = cfg.Store.reader(); err != nil {
			r.spool.Close()
			return nil, err
		}
	default:
		for i, q := range cfg.Requests {
			r.queue.Load(i, shardRequest(q))
		}
	}
	base := shard.Config{
		Addr: addr, Dests: dests, SourceAddrs: cfg.SourceAddresses, Streaming: cfg.Streaming, Kind: cfg.Kind,
		Queue:          r.queue,
		Slots:          max(1, (slotsTotal+count-1)/count),
		ConnectTimeout: cfg.ConnectTimeout, RequestTimeout: cfg.RequestTimeout,
		KernelTimestamps: cfg.KernelTimestamps, Clock: r.clock,
		MaxResponseBytes: cfg.MaxResponseBytes, Budget: shard.NewBudget(cfg.MaxBufferedBytes),
		Reuse: shard.NewReuseStops(len(dests)),
	}
	opts := metrics.Options{Spool: r.spool, KeepText: cfg.KeepText, KeepUncountedText: cfg.KeepUncountedText, OnEnd: cfg.OnEnd, RunningUsage: cfg.RunningUsage}
	if cfg.WarmConnections {
		// Each shard may carry up to its Slots of the requests in flight,
		// so each gets its share rounded up.
		base.Warm = min(base.Slots, (r.open+count-1)/count)
		base.Warmed = &r.warmed
	}
	run := shard.RunConfig{Base: base, Loops: count, CPUs: cpus, Recording: opts, Conns: slotsTotal, LoopTLS: tlsOnLoops, Ctx: ctx}
	if cfg.TLS != nil {
		if run.TLS, err = shard.WithCurvesFromEnv(withServerName(cfg.TLS, cfg.Address)); err != nil {
			return nil, err
		}
	}
	r.transport, err = shard.Start(run)
	if err != nil {
		r.spool.Close()
		return nil, err
	}
	r.recorders = r.transport.Recorders()
	if loops := r.transport.Loops(); loops > 0 {
		raiseProcs(loops)
	} else {
		holdProcs()
	}
	if cfg.Probe != nil {
		r.probes = newProbeLoop(cfg.Probe, base, run.TLS)
	}
	if src != nil {
		// Loading starts now: the window is full before the warm-up ends.
		r.window = newWindow(r.queue, src, r.clock, r.wake, cfg.MaxConcurrency)
		go r.window.run(r.done, func(err error) { r.failStore(err) })
	}
	go r.run(ctx, offsets, rates)
	return r, nil
}

// wake tells the shards that a request may be taken.
func (r *Runner) wake() {
	r.wakeMu.Lock()
	r.transport.Wake()
	r.wakeMu.Unlock()
}

// shardRequest is q as a shard sends it.
func shardRequest(q Request) shard.Request {
	return shard.Request{Wire: q.Wire, PromptLen: q.PromptLen, NumInputSequences: q.NumInputSequences, PoolingUsage: q.PoolingUsage, Dest: q.FrontEnd}
}

// Window returns what the requests' window holds now and held at the most
// (window.go); any goroutine may call it. A run of Config.Requests holds
// them all from the start.
func (r *Runner) Window() WindowStats {
	if r.window != nil {
		return r.window.stats()
	}
	b, n := r.queue.Held()
	return WindowStats{Bytes: b, PeakBytes: b, Requests: n, PeakRequests: n}
}

// Progress returns how many requests have succeeded and failed so far, and
// the total; done+failed is the number that ended. Requests a cancellation
// kept from being sent are not counted (they appear, failed, in the Result).
func (r *Runner) Progress() (done, failed, total int) {
	for _, rec := range r.recorders {
		done += int(rec.Completed())
		failed += int(rec.Failed())
	}
	return done, failed, r.set.Len()
}

// Wait blocks until the run ended and returns its result.
func (r *Runner) Wait() (*Result, error) {
	<-r.done
	return r.result, r.err
}

// Abort stops the run now: nothing more is sent, and the requests in
// flight are failed "cancelled" at once instead of getting CancelGrace to
// finish (a second Ctrl-C). The result still covers every request, as
// after a cancellation. Any goroutine may call it, any number of times;
// after the run ended it does nothing.
func (r *Runner) Abort() { r.abort() }

func (r *Runner) run(ctx context.Context, offsets []int64, rates []float64) {
	defer close(r.done)
	defer restoreProcs()
	defer r.abort() // releases the context's resources
	// An abort is a cancellation that skips the grace, and so is a failed
	// read of the store: no request past it can be sent. A record log that
	// cannot be written is a cancellation too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(r.aborted, cancel)()
	defer context.AfterFunc(r.storeFailed, cancel)()
	go func() {
		select {
		case <-r.logFailed:
			cancel()
		case <-r.done:
		}
	}()
	// Warm connections open before the clock of the schedule starts; a
	// cancellation cuts the warm-up short (the run then cancels at once).
	warmed := make(chan struct{})
	go func() { r.warmed.Wait(); close(warmed) }()
	select {
	case <-warmed:
	case <-ctx.Done():
		r.transport.Abort()
		<-warmed
	}
	defer releaseMemory(holdMemory(r.set.Len(), r.open, r.loadAhead()))
	if !r.cfg.StartAt.IsZero() {
		// Cancelled while waiting: nothing is released (dispatch sees ctx).
		waitUntil(ctx, r.cfg.StartAt)
	}
	res := &Result{Shards: len(r.recorders), Start: r.clock.Base(), MonotonicStartNs: r.clock.Monotonic(0)}
	// The schedule and the duration count from here, after the shards are
	// up (Python: benchmark_start_time, just before the dispatch loop).
	startNs := r.clock.Now()
	res.ScheduleStartNs = startNs
	if r.probes != nil {
		// A cancellation gives the probe in flight the grace, an abort
		// nothing, as the main requests get.
		defer context.AfterFunc(ctx, func() { r.probes.interrupt(time.Now().Add(r.cfg.CancelGrace)) })()
		defer context.AfterFunc(r.aborted, func() { r.probes.interrupt(time.Time{}) })()
		r.probes.start(ctx)
	}
	// Sampled from the schedule's start until the streams closed, before
	// the results are merged.
	sampler := startRSSSampler(r.queue.InFlight, r.heldBytes, rssSampleInterval)
	defer sampler.finish() // a panic in dispatch must not leave it ticking
	var lags []int64
	if r.feed != nil {
		r.feed.start()
	} else {
		lags = r.dispatch(ctx, startNs, offsets, rates, res)
	}
	var endNs int64
	select {
	case <-r.queue.Done():
		endNs = r.clock.Now()
		r.transport.Stop()
	case <-r.feed.ended():
		endNs = r.clock.Now()
		r.transport.Stop()
	case <-ctx.Done():
		res.Cancelled = true
		r.queue.Close()
		r.drain(r.cfg.CancelGrace)
		endNs = r.clock.Now()
		res.Aborted = r.aborted.Err() != nil
		r.transport.Abort()
	}
	r.transport.Wait()
	memory := sampler.finish()
	if r.probes != nil {
		// Python takes the duration after awaiting the probe loop.
		res.Probes = r.probes.stop()
		endNs = max(endNs, r.clock.Now())
	}

	// Requests never taken: failed "cancelled", as Python's would be.
	n := r.set.Len()
	skipped := metrics.NewRecorder(metrics.Options{Spool: r.spool})
	for i := r.queue.Taken(); i < n; i++ {
		var arrival int64
		if i < r.queue.Released() {
			arrival = r.queue.ArrivalNs(i)
		}
		promptLen := r.set.promptLen(i)
		if i < r.queue.Loaded() {
			// A Feed run's requests are known once submitted.
			promptLen = r.queue.Request(i).PromptLen
		}
		skipped.Skip(i, promptLen, arrival, "cancelled")
	}
	data, err := metrics.Gather(metrics.SortOptions{
		Requests:    n,
		IndexOf:     r.set.index,
		CountTokens: r.cfg.CountTokens,
		KeepText:    r.cfg.KeepText,
	}, append(r.recorders, skipped)...)
	if data == nil {
		r.err = err
		return
	}
	res.Data = *data
	res.LogError = err
	disk, mem := res.Data.Log.Bytes()
	res.Health.Log = LogHealth{Records: res.Data.Log.Len(), DiskBytes: disk, MemoryBytes: mem,
		PeakBufferBytes: r.spool.Memory().PeakBufferBytes}
	if res.LogError != nil {
		res.Cancelled = true
	}
	res.Data.DurationNs = endNs - startNs
	logHealth := res.Health.Log
	res.Health = r.health(lags)
	res.Health.Memory = memory
	res.Health.Window = r.Window()
	if err := context.Cause(r.storeFailed); r.storeFailed.Err() != nil {
		res.Health.StoreErr = err
		res.Cancelled = true
	}
	res.Health.Log = logHealth
	r.result = res
}

// heldBytes is what the record log and the prompt window hold in memory.
func (r *Runner) heldBytes() (log, window int64) {
	m := r.spool.Memory()
	if r.cfg.WindowBytes != nil {
		window = r.cfg.WindowBytes()
	} else {
		window = r.Window().Bytes
	}
	return m.BufferBytes + m.StoreMemoryBytes, window
}

// waitUntil sleeps until the wall clock reads at, or until ctx ends.
func waitUntil(ctx context.Context, at time.Time) {
	wait := time.Until(at)
	if wait <= 0 {
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// dispatch releases each request at startNs plus its offset and returns
// the schedule lag of each release. It stops early when ctx is cancelled.
func (r *Runner) dispatch(ctx context.Context, startNs int64, offsets []int64, rates []float64, res *Result) []int64 {
	lags := make([]int64, 0, len(offsets))
	lastRPS := -1
	if ramp := r.cfg.RampUp; ramp != nil && !r.cfg.SelfTimed {
		lastRPS = ramp.StartRPS
		res.RampUpEvents = append(res.RampUpEvents, RampUpEvent{RPS: lastRPS, At: time.Now()})
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for i, offset := range offsets {
		due := startNs + offset
		if offset > 0 {
			if wait := due - r.clock.Now(); wait > 0 {
				timer.Reset(time.Duration(wait))
				select {
				case <-timer.C:
				case <-ctx.Done():
					return lags
				}
			}
		}
		if ctx.Err() != nil {
			return lags
		}
		now := r.clock.Now()
		r.queue.Release(i, now)
		r.wake()
		lags = append(lags, now-due)
		if r.cfg.RampUp != nil && !r.cfg.SelfTimed {
			res.RampUpEvents = rampUpEvents(res.RampUpEvents, &lastRPS, rates[i], time.Now())
		}
	}
	return lags
}

// drain waits up to grace for the requests in flight to end, or until
// Abort.
func (r *Runner) drain(grace time.Duration) {
	deadline := time.Now().Add(grace)
	for r.queue.InFlight() > 0 && time.Now().Before(deadline) {
		select {
		case <-r.queue.Done():
			return
		case <-r.aborted.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (r *Runner) health(lags []int64) Health {
	h := Health{Shards: r.transport.Health()}
	var reads, stamped int64
	for _, s := range h.Shards {
		reads += s.Reads
		stamped += s.StampedReads
		h.LongestTurn = max(h.LongestTurn, s.LongestTurn)
		h.DeadlineLateMax = max(h.DeadlineLateMax, s.DeadlineLateMax)
		h.Sent += s.Sent
		h.TxStamped += s.TxStamped
		h.SlowConnects += s.SlowConnects
		h.SynRetransmits += s.SynRetransmits
		h.DroppedBeforeResponse += s.DroppedBeforeResponse
		h.Reconnects += s.Reconnects
		h.TLSHandshakeTimeouts += s.TLSHandshakeTimeouts
		h.Resent += s.Resent
		h.FreshBeforeReuse += s.FreshBeforeReuse
		if s.StoppedReuse {
			h.StoppedReuse++
		}
		h.Warm.Opened += s.Warm.Opened
		h.Warm.Failed += s.Warm.Failed
		h.Warm.Slowed += s.Warm.Slowed
		h.Warm.Longest = max(h.Warm.Longest, s.Warm.Longest)
	}
	for _, rec := range r.recorders {
		h.TokenEvents += rec.TokenEvents()
		h.SharedStamps += rec.SharedStamps()
	}
	if reads > 0 {
		h.KernelStampCoverage = float64(stamped) / float64(reads)
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		h.ScheduleLagP50 = time.Duration(metrics.NearestRank(lags, 0.50))
		h.ScheduleLagP99 = time.Duration(metrics.NearestRank(lags, 0.99))
		h.ScheduleLagMax = time.Duration(lags[len(lags)-1])
	}
	return h
}

func withDefaults(cfg Config) Config {
	if cfg.Network == "" {
		cfg.Network = "tcp"
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.CancelGrace <= 0 {
		cfg.CancelGrace = DefaultCancelGrace
	}
	if cfg.Burstiness == 0 {
		cfg.Burstiness = 1
	}
	if cfg.RequestRate == 0 && cfg.RampUp == nil && !cfg.SelfTimed {
		cfg.RequestRate = math.Inf(1)
	}
	if cfg.Gaps == nil {
		cfg.Gaps = NewGapSource(cfg.Seed)
	}
	return cfg
}

// schedule returns each request's release time in run nanoseconds and the
// rate that applied to it.
func schedule(cfg Config, set requestSet) (offsetsNs []int64, rates []float64, err error) {
	n := set.Len()
	offsetsNs = make([]int64, n)
	if cfg.SelfTimed {
		for i := range offsetsNs {
			offsetsNs[i] = max(set.offsetNs(i), 0)
		}
		return offsetsNs, make([]float64, n), nil
	}
	s, err := ArrivalSchedule(n, cfg.RequestRate, cfg.Burstiness, cfg.RampUp, cfg.Gaps)
	if err != nil {
		return nil, nil, err
	}
	for i, sec := range s.OffsetsSec {
		offsetsNs[i] = int64(math.Round(sec * 1e9))
	}
	return offsetsNs, s.Rates, nil
}

// shardCount applies Config.Shards, MaxConnectionsPerWorker, or one shard
// per usable physical core.
func shardCount(cfg Config, n int) (int, error) {
	switch {
	case cfg.Shards < 0:
		return 0, fmt.Errorf("shard count %d: must be 0 (automatic) or positive", cfg.Shards)
	case cfg.Shards > 0:
		return cfg.Shards, nil
	case cfg.MaxConnectionsPerWorker < 0:
		return 0, fmt.Errorf("--max-connections-per-worker %d: must be positive", cfg.MaxConnectionsPerWorker)
	case cfg.MaxConnectionsPerWorker > 0:
		return max(1, (n+cfg.MaxConnectionsPerWorker-1)/cfg.MaxConnectionsPerWorker), nil
	}
	if len(cfg.CPUs) > 0 {
		return len(cfg.CPUs), nil
	}
	topo, err := DetectTopology()
	if err != nil {
		return 1, nil
	}
	return topo.Cores(), nil
}

// resolveFrontEnds resolves cfg.FrontEnds (nil without them) and checks
// that every request names one of them.
func resolveFrontEnds(cfg Config, set requestSet) ([]netip.AddrPort, error) {
	if len(cfg.FrontEnds) == 0 {
		if i, fe, bad := set.frontEndOutside(1); bad {
			return nil, fmt.Errorf("request %d names front end %d of none", i, fe)
		}
		return nil, nil
	}
	if cfg.TLS != nil && len(cfg.FrontEnds) > 1 {
		return nil, errors.New("several front ends are plain HTTP only for now")
	}
	dests := make([]netip.AddrPort, len(cfg.FrontEnds))
	for i, fe := range cfg.FrontEnds {
		d, err := resolve(cfg.Network, fe)
		if err != nil {
			return nil, err
		}
		dests[i] = d
	}
	if i, fe, bad := set.frontEndOutside(len(dests)); bad {
		return nil, fmt.Errorf("request %d names front end %d of %d", i, fe, len(dests))
	}
	return dests, nil
}

func resolve(network, address string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(address); err == nil {
		return ap, nil
	}
	a, err := net.ResolveTCPAddr(network, address)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("server address %q: %w", address, err)
	}
	ap := a.AddrPort()
	if !ap.IsValid() {
		return netip.AddrPort{}, errors.New("server address " + address + ": no IP address")
	}
	return ap, nil
}
