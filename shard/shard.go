package shard

import (
	"crypto/tls"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/sse"
	"github.com/valyala/fastjson"
	"golang.org/x/sys/unix"
)

// Request is one benchmark request as a shard sends it.
type Request struct {
	Wire              []byte // the encoded HTTP request
	PromptLen         int    // the dataset's prompt length
	NumInputSequences int    // pooling requests over a list prompt; 0 means 1
	// PoolingUsage is where a pooling answer's usage is, by the request's
	// encoding_format.
	PoolingUsage sse.PoolingUsage
	// Dest indexes Config.Dests: the front end the request goes to (0
	// without them).
	Dest int
	// pos is the request's queue position (Queue.Load sets it).
	pos int
}

// Config is what one shard needs to run. Queue (which holds the requests)
// and Clock are shared by all shards of a run; Recorder is this shard's
// alone.
type Config struct {
	ID  int
	CPU int // CPU to pin the loop's thread to; -1 leaves it unpinned

	Addr netip.AddrPort
	// Dests, when set, are the front ends requests go to, each request to
	// Dests[Request.Dest], and Addr is unused. Every destination has its
	// own idle pool: a connection carries requests to one destination only.
	// Plain TCP only (TLS names one server).
	Dests []netip.AddrPort
	// SourceAddrs, when set, are the local addresses connections are
	// bound to, round-robin (each shard starting at its ID), so that one
	// destination can take more connections than one source address has
	// ephemeral ports. CheckSources tells beforehand whether they bind.
	SourceAddrs []netip.Addr
	Streaming   bool     // SSE streams; false for non-streaming pooling backends
	Kind        sse.Kind // chunk decoder for streams

	Queue *Queue
	// Slots caps this shard's requests in flight, and so its connections.
	Slots int

	ConnectTimeout   time.Duration
	RequestTimeout   time.Duration
	KernelTimestamps bool
	// MaxResponseBytes fails a request whose answer grows past it (0: no
	// bound). Budget, shared by all shards of a run, bounds the response
	// bytes held unparsed over all of them (nil: no bound).
	MaxResponseBytes int64
	Budget           *Budget
	// Reuse, shared by all shards of a run (nil: each learns alone), is
	// where a shard whose server's closes stopped reuse tells the others
	// (see keepsAlive).
	Reuse *ReuseStops

	Clock    Clock
	Recorder *metrics.Recorder

	// Warm is how many keep-alive connections to open before taking any
	// request (see warm.go); Warmed, if set, is told Done when they are
	// open (or the shard gave up on them).
	Warm   int
	Warmed *sync.WaitGroup

	// TLS, when set, speaks TLS 1.3 on every connection, the records
	// sealed and opened on the loop (see tlsloop.go); Start sets it from
	// PrepareTLS, naming the server, once a probing handshake showed the
	// server negotiates TLS 1.3. A connection that negotiates anything
	// else all the same carries its request through crypto/tls on a
	// goroutine of its own instead (Health.TLSFallbacks). Warm connections
	// complete their handshakes too (one that negotiates anything but TLS
	// 1.3 is closed).
	TLS *tls.Config
}

// Health is a shard's account of itself, read after Run returns.
// ConnRTT is one connection's TCP_INFO round-trip times in µs: the
// smoothed estimate and the minimum the kernel saw.
type ConnRTT struct{ RTTUs, MinRTTUs uint32 }

type Health struct {
	// RTTs holds each connection's kernel round-trip times, read once
	// when it closed.
	RTTs        []ConnRTT
	CPU         int
	CPUTime     time.Duration // user+system time of the loop's thread
	Preempted   int64         // times another thread took the loop's CPU
	LongestTurn time.Duration // longest pass over one epoll_wait's events
	Waits       int64         // epoll_wait calls that returned events
	Events      int64         // events they returned
	Naps        int64         // pauses to let events accumulate (coalesceNap)
	Reads       int64         // reads that returned bytes
	// RingReads counts the reads of those done by the shard's io_uring
	// ring (see uring_linux.go); 0 where the kernel offers none.
	RingReads    int64
	StampedReads int64  // of those, reads that carried a kernel timestamp
	Connections  int64  // connections opened
	PinError     string // why pinning failed, if it did
	// Deferred counts reads put off to a later turn: a connection with
	// more to read waits behind the others (see turnReadBytes).
	Deferred int64
	// DeadlineLateMax is the longest a request ran past its deadline (or a
	// connect past its timeout) before the loop failed it and closed its
	// connection.
	DeadlineLateMax time.Duration
	// Sent counts requests whose last byte went out; TxStamped those of
	// them timed by the kernel's transmit stamp (the others by the clock
	// right after the write).
	Sent      int64
	TxStamped int64
	// EarlyWrites counts requests written right after connect(2) returned,
	// the handshake already complete (a local server), without waiting for
	// the loop to hear of it.
	EarlyWrites int64
	// Connect trouble. SlowConnects counts handshakes that took longer
	// than slowConnect, SynRetransmits those of them the kernel had to
	// retransmit for (a SYN, or the handshake's ACK, dropped: typically a
	// server whose accept queue overflowed). DroppedBeforeResponse counts
	// connections the server reset or closed before any response byte;
	// Reconnects, connections opened to replace one the server closed.
	SlowConnects          int64
	SynRetransmits        int64
	DroppedBeforeResponse int64
	Reconnects            int64
	// Resent counts requests sent again on a fresh connection because
	// the server closed the kept-alive one they went out on before it
	// read any of them (see resendable).
	Resent int64
	// StoppedReuse: the server closed kept-alive connections more often
	// than it answered on them, as this shard or another of the run
	// counted, and the shard stopped reusing them (see keepsAlive).
	StoppedReuse bool
	// FreshBeforeReuse counts requests that opened a fresh connection
	// while an idle one was there, because the shard did not know yet
	// whether the server keeps connections alive past its answers: the
	// sum of destReuse.spared.
	FreshBeforeReuse int64
	// Warm is what the warm-up did (zero without one).
	Warm WarmStats

	// TLS handshakes: how many, how many resumed a session, and their CPU
	// and elapsed time summed over connections. A shard's CPUTime includes
	// the CPU of its connections' handshakes (run on handshaker threads).
	TLSHandshakes, TLSResumed         int64
	TLSHandshakeCPU, TLSHandshakeTime time.Duration
	// TLSOwn counts the resumed handshakes the loop did itself, on its
	// thread (tlsown.go); the rest of TLSHandshakes were crypto/tls's.
	// TLSOwnRedone counts the own attempts the server did not take, each
	// redone through crypto/tls on a fresh connection; TLSOwnWhy is the
	// latest one's reason, or why the loop did none of its own.
	TLSOwn, TLSOwnRedone int64
	TLSOwnWhy            string
	// TLSHandshakeTimeouts counts the requests whose connection's TLS
	// handshake was not done when the connect timeout, which covers the
	// connect and the handshake together, ran out (a server that took the
	// ClientHello and said nothing, or not enough): each failed as a
	// connect failure.
	TLSHandshakeTimeouts int64
	// TLSFallbacks counts the connections of a shard's TLS run that
	// negotiated what the loop cannot carry (TLS 1.2) and were read by
	// crypto/tls on a goroutine instead, one request each.
	TLSFallbacks int64
	// TLSPath says how the TLS connections were read (TLSPathUserspace or
	// TLSPathCryptoTLS) and whether the kernel offers kTLS.
	TLSPath string
}

// slowConnect is the handshake time past which a connect counts as slow:
// the kernel's first SYN retransmission comes after 1 s, so a handshake
// that needed one always takes longer.
const slowConnect = time.Second

// Shard is one event loop. Create it with New, run Run on its own
// goroutine, and end it with Stop (after the last request finished) or
// Abort (cancellation).
type Shard struct {
	cfg  Config
	poll *poller
	wake wakeup
	// ur, when set, reads the plain connections (see uring_linux.go).
	ur *uring
	// ringMore: the last turn's reads reached uringTurnReads; the kernel
	// may have more to run.
	ringMore bool
	rx       *receiver
	stamps   *stampReader
	decoder  *sse.Decoder
	json     fastjson.Parser
	sa       unix.Sockaddr
	family   int
	// sas are the destinations' addresses (Config.Dests, or Addr alone),
	// idles their idle stacks, by Request.Dest and conn.dest.
	sas   []unix.Sockaddr
	idles []*conn
	// warmDest is the destination the next warm connection goes to.
	warmDest int
	// srcs are Config.SourceAddrs as bind(2) takes them; nextSrc the one
	// the next connection binds.
	srcs    []unix.Sockaddr
	nextSrc int
	keeper  stampKeeper

	// conns holds the open connections by fd: descriptors are small and
	// dense, and a slice index is cheaper per event than a map look-up.
	conns   []*conn
	nextTag uint32 // tags connections' epoll registrations
	busy    int    // requests in flight on this shard
	timers  deadlines
	clock   stampClock

	// lost counts connections the server closed or reset whose successors
	// have not been opened yet (see Health.Reconnects).
	lost int
	// reuse is what the shard learned of each destination's keep-alive,
	// by Request.Dest (see keepsAlive).
	reuse []destReuse
	// proofGate, when not nil, must report true before an unknown
	// destination's idle connection is trusted young (see reusable).
	// Tests set it to hold that proof until a scripted server's closes
	// were sent, so that a stalled machine cannot reorder the two; nil in
	// a run.
	proofGate func() bool

	// startBudget bounds the requests started in one loop turn, and
	// startsSinceNs is when the turn's first start began (0: none yet):
	// starting stops for the turn once it has taken maxStartTime.
	startBudget   int
	startsSinceNs int64
	// turnBytes counts the bytes read in this loop turn; ready holds the
	// connections with bytes left to read, served in turn (see
	// turnReadBytes).
	turnBytes int
	ready     connFIFO
	// stamped: the last read carried a kernel receive stamp, so a later
	// read of the same bytes would record the same times (see coalesceNap).
	stamped bool

	// The TLS connections' handshakes and hand-overs (tlsdial.go).
	tlsState

	sleeping atomic.Bool
	stopping atomic.Bool
	aborting atomic.Bool

	health Health
}

// readBufferSize is the one read buffer a shard uses for every connection:
// parsers copy what they must keep, so the buffer is free again after each
// read. 64 KiB takes a decode step's worth of chunks for a connection in one
// recvmsg.
const readBufferSize = 64 << 10

// maxStartsPerTurn and maxStartTime bound the requests one loop turn
// starts: at most maxStartsPerTurn, and none more once the turn's starts
// have taken maxStartTime. Starting one on a new connection costs five
// system calls (socket, connect, epoll_ctl, write, the transmit stamp's
// recvmsg), and on loopback the connect and the write also run the
// server's side of the handshake and the delivery on the client's CPU.
// 10,000 released at once would otherwise keep the loop from reading for
// a second while earlier streams already deliver tokens; between batches
// the loop reads whatever arrived. A count alone does not bound the time:
// a start's cost grows with the server's backlog, and on a shared CPU a
// batch of 256 took over 100 ms. So a turn starts no more once a
// millisecond has passed since its first start. Read between batches, a response's head
// and first tokens are read (and stamped) before the next segment of the
// same stream arrives, which would share their receive stamp.
const (
	maxStartsPerTurn = 256
	maxStartTime     = time.Millisecond
)

// turnReadBytes bounds the bytes one loop turn reads over all connections,
// and each connection gets at most one read (one buffer) per turn before
// the others: a connection that filled the buffer, and the connections
// whose events come after the bound is reached, wait on the ready list and
// are served first thing next turn, in order. Epoll is edge-triggered, so
// the list is what remembers them. A server that writes without pause
// therefore cannot keep the loop from its timers, the stop and abort flags,
// the queue of released requests and the other connections: a turn parses
// at most about 1 MiB (a few milliseconds, even as 5,000 token events),
// whatever servers send. Honest streams never reach it: a decode step of
// 10,000 streams reaches the loop as a few hundred kilobytes per turn.
const turnReadBytes = 1 << 20

// maxEvents bounds the ready events taken from one epoll_wait.
const maxEvents = 1024

// coalesceNap is how long the loop pauses after a turn that found fewer
// than maxEvents ready, before it looks again, while reads carry kernel
// receive stamps and no released request waits for a start budget.
//
// A server's decode step reaches the client as a stream of segments over
// tens of milliseconds (one write per stream), and a loop that keeps up
// with them finds two or three ready per epoll_wait: it sleeps and wakes
// once per few events, and on these machines that switch in and out cost
// more CPU than reading the events. Pausing lets the kernel queue a batch:
// each wake-up then serves tens of events. The pause cannot change what is
// recorded, because every token's time is the kernel's stamp of its
// arrival, not the time the loop reads it; without stamps (the loop's
// clock stands in) the loop never pauses. The one exception is two token
// chunks of one stream less than a pause apart: queued together, the
// kernel merges them and the older takes the newer's stamp (see readOnce),
// but a server's tokens for one stream are a decode step apart, which is
// milliseconds. What the pause does delay, by at most its length, is
// reacting: starting a released request, noticing a deadline.
const coalesceNap = 200 * time.Microsecond

// stampSwitchWait bounds how long New waits for the kernel to switch
// receive timestamps on (it takes microseconds to a few milliseconds).
const stampSwitchWait = 100 * time.Millisecond

// New prepares a shard; it opens no connection until Run takes work.
func New(cfg Config) (*Shard, error) {
	if cfg.Slots <= 0 {
		return nil, fmt.Errorf("shard %d: slots must be positive, got %d", cfg.ID, cfg.Slots)
	}
	poll, err := newPoller(maxEvents)
	if err != nil {
		return nil, fmt.Errorf("shard %d: %w", cfg.ID, err)
	}
	wake, err := newWakeup()
	if err != nil {
		poll.close()
		return nil, fmt.Errorf("shard %d: %w", cfg.ID, err)
	}
	if err := poll.add(wake.fd, 0, unix.EPOLLIN); err != nil {
		poll.close()
		wake.close()
		return nil, fmt.Errorf("shard %d: epoll_ctl: %w", cfg.ID, err)
	}
	s := &Shard{
		cfg:     cfg,
		poll:    poll,
		wake:    wake,
		rx:      newReceiver(readBufferSize),
		stamps:  newStampReader(),
		decoder: sse.NewDecoder(cfg.Kind),
	}
	s.sa, s.family = sockaddr(cfg.Addr)
	s.sas = []unix.Sockaddr{s.sa}
	if len(cfg.Dests) > 0 {
		s.sas = s.sas[:0]
		for i, d := range cfg.Dests {
			sa, family := sockaddr(d)
			if i == 0 {
				s.sa, s.family = sa, family
			} else if family != s.family {
				poll.close()
				wake.close()
				return nil, fmt.Errorf("shard %d: destination %v is not of %v's address family", cfg.ID, d, cfg.Dests[0])
			}
			s.sas = append(s.sas, sa)
		}
	}
	s.idles = make([]*conn, len(s.sas))
	s.reuse = make([]destReuse, len(s.sas))
	if len(cfg.SourceAddrs) > 0 {
		srcs, err := sourceSockaddrs(cfg.SourceAddrs, s.family)
		if err != nil {
			poll.close()
			wake.close()
			return nil, err
		}
		s.srcs, s.nextSrc = srcs, cfg.ID%len(srcs)
	}
	s.keeper = stampKeeper{fd: -1}
	if cfg.KernelTimestamps {
		// Without it, stamps are merely missing at first; not fatal.
		s.keeper, _ = openStampKeeper(stampSwitchWait)
	}
	s.health.CPU = cfg.CPU
	if cfg.TLS != nil {
		s.initTLS()
	}
	return s, nil
}

// WakeIfSleeping interrupts the shard's epoll_wait if it is waiting with a
// free slot, and reports whether it did. Any goroutine may call it.
func (s *Shard) WakeIfSleeping() bool {
	if s.sleeping.CompareAndSwap(true, false) {
		s.wake.signal()
		return true
	}
	return false
}

// Stop makes Run return once its in-flight requests ended. Any goroutine.
func (s *Shard) Stop() {
	s.stopping.Store(true)
	s.wake.signal()
}

// Abort makes Run fail its in-flight requests as "cancelled" and return.
// Any goroutine.
func (s *Shard) Abort() {
	s.aborting.Store(true)
	s.wake.signal()
}

// Health returns the shard's figures; call it after Run returned.
func (s *Shard) Health() Health {
	h := s.health
	for _, r := range s.reuse {
		h.FreshBeforeReuse += r.spared
	}
	return h
}

// Run is the event loop. It locks its goroutine to an OS thread, pins that
// thread to the configured CPU, and serves requests from the queue until
// Stop or Abort. Call it on a goroutine of its own that ends when Run
// returns: the thread stays locked, so the runtime discards it with the
// goroutine instead of running other goroutines on a thread pinned to one
// CPU.
func (s *Shard) Run() {
	runtime.LockOSThread()
	if s.cfg.CPU >= 0 {
		if err := pinToCPU(s.cfg.CPU); err != nil {
			s.health.PinError = err.Error()
		}
	}
	s.clock = newStampClock(s.cfg.Clock)
	if s.cfg.TLS == nil && uringWanted() {
		// Without it (a kernel before 6.1, io_uring switched off or
		// filtered), every read is a recvmsg of the loop's own.
		s.ur, _ = newUring(s.wake.fd)
	}
	if s.cfg.Warm > 0 {
		s.warm(s.cfg.Warm)
	}
	if s.cfg.Warmed != nil {
		s.cfg.Warmed.Done()
	}
	loopsRunning.Add(1)
	s.loop()
	loopsRunning.Add(-1)
	s.closeAll()
	s.health.CPUTime, s.health.Preempted = threadUsage()
	s.health.CPUTime += s.health.TLSHandshakeCPU
	if s.cfg.TLS != nil {
		s.ownHealth()
	}
}

func (s *Shard) loop() {
	for {
		if s.aborting.Load() {
			s.abortAll()
			return
		}
		if s.stopping.Load() && s.busy == 0 {
			return
		}
		if s.ur != nil && s.ur.pending() {
			// Connections closed since the last submission stay open
			// until it: submit before the loop may sleep.
			s.reap()
		}
		s.startBudget = maxStartsPerTurn
		s.startsSinceNs = 0
		s.turnBytes = 0
		s.takeWork()
		if s.busy < s.cfg.Slots {
			// Announce the free slot before the last look at the queue, so
			// a release either is seen here or wakes this shard.
			s.sleeping.Store(true)
			s.takeWork()
		}
		events, err := s.poll.wait(s.timeoutMs())
		s.sleeping.Store(false)
		if err != nil {
			// epoll_wait fails only on a programming error (bad fd); no
			// request can make progress, so end them all.
			s.abortAllWith(err.Error())
			return
		}
		if len(events) > 0 {
			s.health.Waits++
			s.health.Events += int64(len(events))
		}
		turnStart := s.cfg.Clock.Now()
		s.clock.refresh(turnStart)
		for i := range events {
			s.handle(&events[i])
			// A request that ended frees a slot: fill it before the next
			// event, so the concurrency cap does not idle for a whole turn.
			s.takeWork()
		}
		reaped := s.reap()
		s.takeHandshakes()
		s.serveReady()
		// The own handshakes' steps come after the turn's reads (see
		// ownTurnSteps).
		s.serveOwn()
		s.expireDeadlines()
		s.takeWork()
		if d := time.Duration(s.cfg.Clock.Now() - turnStart); d > s.health.LongestTurn {
			s.health.LongestTurn = d
		}
		if s.stamped && len(events)+reaped > 0 && len(events) < maxEvents && s.startBudget > 0 && s.ready.Len() == 0 && !s.ownPending() {
			s.health.Naps++
			nap(coalesceNap)
		}
	}
}

// timeoutMs is epoll_wait's timeout: until the earliest deadline, rounded
// up so the deadline has passed on wake-up.
func (s *Shard) timeoutMs() int {
	if s.startBudget == 0 || s.ready.Len() > 0 || s.ringMore {
		// Requests may be waiting that this turn had no budget to start,
		// or connections with bytes left to read.
		return 0
	}
	untilNs := s.ticketWaitUntil()
	if c := s.timers.next(); c != nil && (untilNs < 0 || c.deadlineNs < untilNs) {
		untilNs = c.deadlineNs
	}
	if untilNs < 0 {
		return -1
	}
	wait := untilNs - s.cfg.Clock.Now()
	if wait <= 0 {
		return 0
	}
	return int((wait + int64(time.Millisecond) - 1) / int64(time.Millisecond))
}

func (s *Shard) handle(ev *unix.EpollEvent) {
	if int(ev.Fd) == s.wake.fd {
		s.wake.drain()
		return
	}
	c := s.conn(int(ev.Fd))
	if c == nil || c.tag != eventTag(ev) {
		// The event belonged to a connection closed earlier in this turn.
		return
	}
	if ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP) != 0 {
		c.hungUp = true
	}
	switch c.state {
	case connConnecting:
		if ev.Events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			s.onConnected(c, ev.Events&(unix.EPOLLERR|unix.EPOLLHUP) != 0)
		}
		switch {
		case c.state == connBusy && c.hungUp:
			// The server closed the connection as it was established: this
			// event is the only one that says so.
			s.readable(c)
		case c.state == connHandshaking && ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP) != 0:
			s.feedHandshake(c)
		}
	case connHandshaking:
		if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			s.feedHandshake(c)
		}
	case connIdle:
		// Bytes or EOF on an idle keep-alive connection: the server closed
		// it (or broke protocol). Either way it cannot carry a request. A
		// late transmit stamp raises EPOLLERR too, and an event of the
		// request before can arrive after it ended: look before closing.
		if c.txStamps {
			s.readTxStamps(c)
		}
		if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			s.checkIdle(c)
		}
	case connBusy:
		if ev.Events&unix.EPOLLERR != 0 && c.txPending {
			s.readTxStamps(c)
		}
		if ev.Events&unix.EPOLLOUT != 0 && (c.written < len(c.req.Wire) || c.tls.unsent()) {
			s.writeRequest(c)
		}
		if c.state == connBusy && ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			s.readable(c)
		}
	}
}

// readable reads busy c now, or puts it on the ready list when others wait
// for their turn already.
func (s *Shard) readable(c *conn) {
	if s.ready.Len() > 0 || s.turnBytes >= turnReadBytes {
		s.deferRead(c)
	} else {
		s.onReadable(c)
	}
}

// takeWork starts released requests while this shard has free slots.
func (s *Shard) takeWork() {
	for s.startBudget > 0 && s.busy < s.cfg.Slots && !s.stopping.Load() && !s.aborting.Load() {
		i, arrivalNs, ok := s.cfg.Queue.take()
		if !ok {
			return
		}
		s.startBudget--
		if s.startsSinceNs == 0 {
			s.startsSinceNs = s.cfg.Clock.Now()
		}
		s.start(i, arrivalNs)
		if s.cfg.Clock.Now()-s.startsSinceNs >= int64(maxStartTime) {
			s.startBudget = 0
		}
	}
}

// start sends request i on an idle connection, or on a new one.
func (s *Shard) start(i int, arrivalNs int64) {
	req := s.cfg.Queue.request(i)
	startNs := s.cfg.Clock.Now()
	s.busy++
	c := s.popIdle(req.Dest)
	fresh := c == nil
	if fresh {
		var err error
		if c, err = s.open(req.Dest); err != nil {
			var st metrics.Stream
			s.cfg.Recorder.Begin(&st, i, req.PromptLen, arrivalNs, startNs)
			s.cfg.Recorder.Fail(&st, s.connectErrorTo(req.Dest, err))
			s.busy--
			s.cfg.Queue.finish(req)
			return
		}
	}
	s.cfg.Recorder.Begin(&c.stream, i, req.PromptLen, arrivalNs, startNs)
	if fresh {
		s.sendFresh(c, req)
		return
	}
	s.send(c, req)
}

// sendFresh starts req on c, a connection just opened for it (its stream
// begun).
func (s *Shard) sendFresh(c *conn, req *Request) {
	if s.cfg.TLS != nil {
		s.startTLS(c, req)
		return
	}
	if c.state == connBusy {
		c.stream.Connected(s.cfg.Clock.Now())
	}
	s.send(c, req)
}

// send starts req on c (its stream already begun): at once on a connected
// c, after the connect otherwise. The request deadline counts from the
// stream's start; a connect has its own, shorter one.
func (s *Shard) send(c *conn, req *Request) {
	c.beginRequest(req)
	deadlineNs := c.stream.StartNs() + int64(s.cfg.RequestTimeout)
	if c.state == connConnecting {
		deadlineNs = min(deadlineNs, s.cfg.Clock.Now()+int64(s.cfg.ConnectTimeout))
	}
	s.timers.set(c, deadlineNs)
	switch c.state {
	case connBusy:
		s.writeRequest(c)
	case connConnecting:
		s.writeEarly(c)
	}
}

// writeEarly tries c's request on a connection whose connect(2) is still
// reported in progress. Against a local server the handshake has usually
// completed inside connect(2) already, and the request goes out now rather
// than after the loop's next epoll_wait, which comes only after every
// other request this turn starts. On a socket still in its handshake the
// write takes nothing (EAGAIN) and EPOLLOUT reports the connect as before;
// a write error is the connect's.
func (s *Shard) writeEarly(c *conn) {
	now := s.cfg.Clock.Now()
	n, err := write(c.fd, c.req.Wire)
	if err != nil {
		s.fail(c, s.connectErrorTo(c.dest, err))
		return
	}
	if n == 0 {
		return
	}
	s.health.EarlyWrites++
	s.established(c, now)
	s.wrote(c, n)
	if c.written < len(c.req.Wire) {
		s.writeRequest(c)
	}
}

// established marks c's connect complete at nowNs: the connect phase of its
// request ends, and the request deadline replaces the connect deadline.
func (s *Shard) established(c *conn, nowNs int64) {
	if nowNs-c.stream.StartNs() > int64(slowConnect) {
		s.health.SlowConnects++
		if handshakeRetransmits(c.fd) > 0 {
			s.health.SynRetransmits++
		}
	}
	c.state = connBusy
	c.stream.Connected(nowNs)
	s.timers.set(c, c.stream.StartNs()+int64(s.cfg.RequestTimeout))
}

// open dials a new connection to destination dest; it is connConnecting
// until onConnected.
func (s *Shard) open(dest int) (*conn, error) {
	fd, inProgress, txStamps, err := dial(s.sas[dest], s.source(), s.family, s.cfg.KernelTimestamps, s.cfg.TLS != nil)
	if err != nil {
		return nil, err
	}
	s.nextTag++
	c := &conn{fd: fd, tag: s.nextTag, heapIndex: -1, state: connConnecting, txStamps: txStamps, dest: dest}
	c.Init(s.decoder, s.cfg.Streaming)
	c.SetLimits(s.cfg.MaxResponseBytes, s.cfg.Budget)
	if !inProgress {
		c.state = connBusy
	}
	events := uint32(connEvents)
	if s.ur != nil {
		c.ur = true
		events = connEventsRing
	}
	if err := s.poll.add(fd, c.tag, events); err != nil {
		closeFD(fd)
		return nil, err
	}
	if c.ur {
		s.ur.recv(fd, c.ringTag())
	}
	s.setConn(fd, c)
	s.health.Connections++
	if s.lost > 0 {
		s.lost--
		s.health.Reconnects++
	}
	return c, nil
}

// source is the local address the next connection binds, round-robin
// over Config.SourceAddrs; nil without them.
func (s *Shard) source() unix.Sockaddr {
	if len(s.srcs) == 0 {
		return nil
	}
	src := s.srcs[s.nextSrc]
	if s.nextSrc++; s.nextSrc == len(s.srcs) {
		s.nextSrc = 0
	}
	return src
}

// conn returns the open connection on fd, or nil.
func (s *Shard) conn(fd int) *conn {
	if uint(fd) < uint(len(s.conns)) {
		return s.conns[fd]
	}
	return nil
}

func (s *Shard) setConn(fd int, c *conn) {
	if fd >= len(s.conns) {
		s.conns = append(s.conns, make([]*conn, fd+1-len(s.conns))...)
	}
	s.conns[fd] = c
}

// onConnected finishes a non-blocking connect once the socket reported
// writable, or an error or hang-up. A failed connect always raises
// EPOLLERR, so only then is SO_ERROR worth a system call.
func (s *Shard) onConnected(c *conn, errOrHup bool) {
	if errOrHup {
		if err := connectResult(c.fd); err != nil {
			s.fail(c, s.connectErrorTo(c.dest, err))
			return
		}
	}
	if c.dial != nil {
		s.handshake(c, s.cfg.Clock.Now())
		return
	}
	s.established(c, s.cfg.Clock.Now())
	s.writeRequest(c)
}

// connectErrorTo names the front end dest the connect went to
// (Config.Dests[dest], or Addr without them).
func (s *Shard) connectErrorTo(dest int, err error) string {
	addr := s.cfg.Addr
	if dest < len(s.cfg.Dests) {
		addr = s.cfg.Dests[dest]
	}
	return "connect " + addr.String() + ": " + err.Error()
}

// writeRequest writes what the socket takes; when the send buffer is full,
// the EPOLLOUT edge that follows brings the loop back for the rest.
func (s *Shard) writeRequest(c *conn) {
	if c.tls != nil {
		s.writeTLS(c)
		return
	}
	for c.written < len(c.req.Wire) {
		n, err := write(c.fd, c.req.Wire[c.written:])
		if err != nil {
			s.connFailed(c, err)
			return
		}
		if n == 0 {
			return
		}
		s.wrote(c, n)
	}
}

// wrote accounts n more bytes of c's request written.
func (s *Shard) wrote(c *conn, n int) {
	c.written += n
	c.sentBytes += uint32(n)
	if c.written == len(c.req.Wire) {
		s.requestSent(c)
	}
}

// requestSent records when c's request left: the clock right after the
// write that completed it, replaced by the kernel's transmit stamp of its
// last byte where the socket makes them. On loopback (and any device that
// transmits at once) the stamp is on the error queue when write returns;
// otherwise it is read when EPOLLERR reports it, or at the latest with the
// response's first byte.
func (s *Shard) requestSent(c *conn) {
	c.stream.Sent(s.cfg.Clock.Now())
	s.health.Sent++
	if c.txStamps {
		c.txKey = c.sentBytes - 1
		c.txPending = true
		s.readTxStamps(c)
	}
}

// readTxStamps reads c's error queue up to the transmit stamp of its
// request's last byte, and records it; stamps of earlier bytes (a request
// written in pieces, a request before) are dropped. Without a stamp
// pending it drains the queue. Stopping at the stamp saves the read that
// would find the queue empty, in the common case one system call per
// request; what a later write queues raises a new EPOLLERR edge.
func (s *Shard) readTxStamps(c *conn) {
	for {
		st, ok := s.stamps.next(c.fd)
		if !ok {
			return
		}
		if c.txPending && st.realtimeNs != 0 && st.key == c.txKey {
			c.txPending = false
			c.stream.Sent(s.clock.runTime(st.realtimeNs, s.cfg.Clock.Now()))
			s.health.TxStamped++
			return
		}
	}
}

// onReadable reads c once. Edge-triggered registration means no new event
// reports bytes left in the socket, so a read that filled the buffer puts
// c on the ready list, to be read again next turn (see turnReadBytes); a
// shorter read emptied the socket's receive queue (a segment arriving
// after that raises a new edge). Not so once the peer hung up: its FIN or
// reset raised the edge already seen, and what follows the bytes just read
// (the EOF, or the reset's error) raises none. Such a connection stays on
// the ready list until a read ends it.
func (s *Shard) onReadable(c *conn) {
	if !s.readOnce(c) {
		return
	}
	switch c.state {
	case connBusy:
		s.deferRead(c)
	case connIdle:
		// The response ended exactly at the end of a full buffer. Bytes
		// behind it would belong to no request, and no new edge would
		// report them, so look now.
		s.checkIdle(c)
	}
}

// checkIdle closes an idle connection that has bytes or an EOF waiting:
// the server closed it, or broke protocol. Either way it cannot carry a
// request.
func (s *Shard) checkIdle(c *conn) {
	if !s.idleOpen(c) {
		s.lost++
		if !c.retired {
			s.closedByServer(c)
		}
		s.closeConn(c)
	}
}

// idleOpen reports whether idle c can carry a request: nothing waits in
// its socket, or over TLS only what a server may send between requests
// (session tickets, a KeyUpdate), which it takes (see idleTLS).
func (s *Shard) idleOpen(c *conn) bool {
	if c.tls != nil {
		return s.idleTLS(c)
	}
	_, _, err := s.rx.recv(c.fd)
	return err == errWouldBlock
}

// deferRead puts c at the end of the ready list, once.
func (s *Shard) deferRead(c *conn) {
	if !c.queued {
		c.queued = true
		s.ready.Push(c)
		s.health.Deferred++
	}
}

// serveReady reads once from each connection that was on the ready list at
// the start of the call, oldest first, until the turn's byte bound.
func (s *Shard) serveReady() {
	for n := s.ready.Len(); n > 0 && s.turnBytes < turnReadBytes; n-- {
		c := s.ready.Pop()
		c.queued = false
		switch c.state {
		case connBusy:
			s.onReadable(c)
			s.takeWork()
		case connIdle:
			s.checkIdle(c)
		}
	}
}

// readTime is the run time of a read of c: its kernel receive stamp when
// the read had one, else now. A stamp can precede the start by the
// offset's sampling error; no response byte can really arrive before its
// request was started.
func (s *Shard) readTime(c *conn, realtimeNs int64) int64 {
	now := s.cfg.Clock.Now()
	ts := now
	if realtimeNs != 0 {
		ts = s.clock.runTime(realtimeNs, now)
	}
	return max(ts, c.stream.StartNs())
}

// readOnce reads once and feeds the bytes through httpwire → sse →
// decoder → recorder, all stamped with the read's receive time. It reports
// whether more may be waiting that no event will report: the read filled
// the buffer, or it returned bytes after the peer hung up (the EOF or the
// error is still to be read).
//
// The stamp is that of the newest segment the read consumed. While the loop
// keeps up, a read holds one segment (one decode step's chunk for this
// stream) and the stamp is exact. When it falls behind by more than a
// segment on a connection, the kernel has already merged the queued
// segments into one buffer carrying the newest stamp (tcp_try_coalesce), so
// no read size could recover the older ones; the error is then the backlog,
// which Health shows as long loop turns and preemptions.
func (s *Shard) readOnce(c *conn) (full bool) {
	if c.tls != nil {
		return s.readTLS(c)
	}
	data, realtimeNs, err := s.rx.recv(c.fd)
	if err == errWouldBlock {
		return false
	}
	if err != nil {
		s.connFailed(c, err)
		return false
	}
	return s.consume(c, data, realtimeNs, len(data) == len(s.rx.buf))
}

// consume feeds one read of busy c, stamped realtimeNs (0: none), through
// the parsers; an empty read is the end of the stream. It reports what
// readOnce does; full says the read filled its buffer.
func (s *Shard) consume(c *conn, data []byte, realtimeNs int64, full bool) bool {
	ts := s.readTime(c, realtimeNs)
	if len(data) == 0 {
		s.onEOF(c, ts)
		return false
	}
	s.health.Reads++
	s.turnBytes += len(data)
	s.stamped = realtimeNs != 0
	if s.stamped {
		s.health.StampedReads++
	}
	if !c.gotBytes {
		if c.txPending {
			// The answer came back, so the request's transmit stamp is
			// on the error queue by now.
			s.readTxStamps(c)
		}
		c.stream.FirstByte(ts)
	}
	c.gotBytes = true
	// A server may answer (an error) before the whole request was
	// written: that connection cannot carry another request either.
	if _, failed := s.deliver(c, data, ts, c.written == len(c.req.Wire)); failed {
		return false
	}
	return full || c.hungUp
}

func (s *Shard) onEOF(c *conn, ts int64) {
	if !c.gotBytes {
		s.connFailed(c, ErrClosedByPeer)
		return
	}
	if failure, ok := c.Closed(ts); ok {
		s.complete(c, false)
	} else {
		s.fail(c, failure)
	}
}

// connFailed handles a socket error or an early EOF: the request fails,
// unless the server provably never read it (see resendable), when it goes
// out again on a fresh connection. A request the server may have read is
// never sent twice: Python's client does not replay a POST either.
func (s *Shard) connFailed(c *conn, err error) {
	if !c.gotBytes && (IsReset(err) || err == ErrClosedByPeer) {
		s.health.DroppedBeforeResponse++
	}
	s.lost++
	if c.reused && !c.gotBytes && (err == ErrClosedByPeer || c.responses > 0 && IsReset(err)) {
		// The server dropped a connection it had kept alive past an
		// answer before it answered again: its close, or the reset of a
		// request that reached its closing socket.
		s.closedByServer(c)
	}
	if s.resendable(c, err) {
		s.resend(c)
		return
	}
	text := c.FailureText(err)
	if c.reused && !c.gotBytes {
		text += " on a reused keep-alive connection (not sent again)"
	}
	s.fail(c, text)
}

// complete ends a request whose response ended normally. reusable says
// the response and the request let the connection carry another; it does
// not once the server sent as many responses as its Keep-Alive max said.
func (s *Shard) complete(c *conn, reusable bool) {
	if c.responses > 0 {
		// An answer on a connection that carried one before: the server
		// keeps its connections alive past its answers (a warm-up's
		// connection, which carried none, proves nothing).
		s.reuse[c.dest].answeredReused++
	}
	c.responses++
	most := c.KeepAliveMax()
	c.advertised = most > 0
	if most > 0 && c.responses >= most {
		reusable = false
	}
	c.End(s.cfg.Recorder, &s.json, c.req.NumInputSequences)
	s.release(c)
	if reusable {
		s.putIdle(c)
	} else {
		s.lost++
		s.closeConn(c)
	}
}

// fail ends c's request as failed with text and closes c.
func (s *Shard) fail(c *conn, text string) {
	s.cfg.Recorder.Fail(&c.stream, text)
	s.release(c)
	s.closeConn(c)
}

// release frees the slot of a request that has been recorded, in the shard
// and in the global cap, and its bytes. c is the connection that carried
// it. The event loop takes the next released request as soon as the current event
// is handled.
func (s *Shard) release(c *conn) {
	req := c.req
	s.timers.clear(c)
	c.giveBack()
	c.req = nil
	s.busy--
	s.cfg.Queue.finish(req)
}

func (s *Shard) expireDeadlines() {
	now := s.cfg.Clock.Now()
	for c := s.timers.next(); c != nil && c.deadlineNs <= now; c = s.timers.next() {
		s.timers.clear(c)
		if c.req == nil {
			s.closeConn(c)
			continue
		}
		deadlineNs := c.deadlineNs
		connecting := c.deadlineNs < c.stream.StartNs()+int64(s.cfg.RequestTimeout)
		switch {
		case connecting && c.state == connConnecting:
			s.fail(c, s.connectErrorTo(c.dest, fmt.Errorf("timed out after %v", s.cfg.ConnectTimeout)))
		case connecting && c.state == connHandshaking && c.dial != nil && !c.dial.fallback:
			// The connect deadline stands through the handshake (see
			// startTLSWith): a server that takes the ClientHello and
			// says nothing, or sends part of a record, holds no request
			// past it.
			s.health.TLSHandshakeTimeouts++
			s.fail(c, s.connectErrorTo(c.dest, errHandshakeTimeout(s.cfg.ConnectTimeout)))
		default:
			s.fail(c, "request timed out after "+s.cfg.RequestTimeout.String())
		}
		// Measured once the connection is closed: that is when the server
		// learns the client gave up.
		s.health.DeadlineLateMax = max(s.health.DeadlineLateMax, time.Duration(s.cfg.Clock.Now()-deadlineNs))
	}
}

// The idle pool is a doubly linked stack: the most recently used
// connection is reused first (it is the least likely to have been closed by
// the server's keep-alive timeout), and a connection the server closes
// leaves it in O(1).

func (s *Shard) popIdle(dest int) *conn {
	for {
		if !s.keepsAlive(dest) {
			// The server closes what it keeps alive: the connections
			// still idle are retired (see closedByServer; another
			// shard may have learned it).
			s.retireIdle(dest)
			return nil
		}
		c := s.idles[dest]
		if s.reuse[dest].answeredReused == 0 {
			c = s.reusable(dest)
		}
		if c == nil {
			return nil
		}
		// A close (or stray bytes) that reached the socket since the loop
		// last looked would fail the request, which is never sent twice:
		// one look at the socket now saves it.
		if !s.idleOpen(c) {
			s.lost++
			s.closedByServer(c)
			s.closeConn(c)
			continue
		}
		s.unlinkIdle(c)
		c.state = connBusy
		return c
	}
}

func (s *Shard) putIdle(c *conn) {
	c.state = connIdle
	c.reused = true
	c.idleSinceNs = s.cfg.Clock.Now()
	if !s.keepsAlive(c.dest) {
		s.retire(c)
		return
	}
	c.idlePrev = nil
	c.idleNext = s.idles[c.dest]
	if c.idleNext != nil {
		c.idleNext.idlePrev = c
	}
	s.idles[c.dest] = c
}

func (s *Shard) unlinkIdle(c *conn) {
	if c.retired {
		return
	}
	if c.idlePrev != nil {
		c.idlePrev.idleNext = c.idleNext
	} else {
		s.idles[c.dest] = c.idleNext
	}
	if c.idleNext != nil {
		c.idleNext.idlePrev = c.idlePrev
	}
	c.idlePrev, c.idleNext = nil, nil
}

// closeConn closes c and forgets it; an idle c is taken off the idle stack.
func (s *Shard) closeConn(c *conn) {
	if c.state == connClosed {
		return
	}
	if c.state == connIdle {
		s.unlinkIdle(c)
	}
	s.timers.clear(c)
	if c.state == connHandshaking && c.dial != nil && (c.dial.own != nil || c.dial.waiting) {
		// The loop's own handshake: the socket is the loop's alone.
		s.endOwn(c)
	}
	if c.state == connHandshaking && c.dial != nil {
		// A handshake in progress on c's socket, which its result closes
		// (see tlsDial.discard), or a request away from the loop.
		c.dial.cancel()
		if c.fd >= 0 {
			s.conns[c.fd] = nil
			c.dial = nil
		} else {
			s.forgetAway(c)
		}
		c.state = connClosed
		return
	}
	if c.fd >= 0 {
		if c.state != connConnecting {
			// Once per connection, as it closes (every open one closes at
			// the end of the run): never per token.
			if rtt, minRTT, ok := connRTT(c.fd); ok {
				s.health.RTTs = append(s.health.RTTs, ConnRTT{RTTUs: rtt, MinRTTUs: minRTT})
			}
		}
		s.conns[c.fd] = nil
		if c.ur {
			s.ur.cancel(c.ringTag())
			s.ur.closeAfterSubmit(c.fd)
		} else {
			closeFD(c.fd)
		}
	}
	c.state = connClosed
}

func (s *Shard) abortAll() { s.abortAllWith("cancelled") }

// abortAllWith fails every request in flight with text.
func (s *Shard) abortAllWith(text string) {
	for _, list := range [][]*conn{s.conns, s.away} {
		for _, c := range list {
			if c != nil && c.req != nil {
				s.cfg.Recorder.Fail(&c.stream, text)
				s.timers.clear(c)
				c.giveBack()
				req := c.req
				c.req = nil
				s.busy--
				s.cfg.Queue.finish(req)
			}
		}
	}
}

func (s *Shard) closeAll() {
	for _, c := range s.conns {
		if c != nil {
			s.closeConn(c)
		}
	}
	clear(s.idles)
	s.stopHandshakes()
	if s.ur != nil {
		s.ur.enter()
		s.ur.close()
	}
	s.poll.close()
	s.wake.close()
	s.keeper.close()
}

// deliver feeds response bytes read at ts to c's exchange and ends it when
// the response is decided: failed, or complete, the connection kept for
// another request if the server allows, all of c's request went out
// (sentAll) and nothing else is pending on it. It reports whether the
// exchange ended, and whether it failed.
func (s *Shard) deliver(c *conn, p []byte, ts int64, sentAll bool) (ended, failed bool) {
	_, failure, ok, decided := c.Consume(p, ts)
	switch {
	case !decided:
		return false, false
	case !ok:
		s.fail(c, failure)
		return true, true
	}
	s.complete(c, c.KeepAlive() && sentAll && !c.hungUp)
	return true, false
}
