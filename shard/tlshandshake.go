package shard

import (
	"crypto/tls"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-bench/stampede/internal/memlimit"
	"github.com/stampede-bench/stampede/internal/tls13"
	"golang.org/x/sys/unix"
)

// A TLS connection's handshake (Config.TLS). The shard connects the socket
// itself, non-blocking, as it does a plain one, and the socket stays
// registered with its epoll from the connect on. Once connected, a
// handshaker goroutine runs crypto/tls's handshake over an hsPipe: its
// writes go to the socket when it next reads (non-blocking; a handshake
// flight fits the send buffer of a new connection), the last flight with
// the request (see hsPipe.Write), its reads take what the loop read for
// it. The loop reads the server's flight with its own recvmsg, one per
// edge, into the pipe, and wakes the handshaker. A handshake thus costs the
// process no dialer, no registration with the runtime's poller, and no
// read that finds nothing: only its crypto, its writes and the loop's
// reads. The pipe gives crypto/tls at most the rest of the record it is
// reading, so what follows the handshake's last record (the server's
// session tickets, often sent along with it) stays in the pipe, and the
// loop takes it as the first records of the connection.
//
// Ownership of the socket: the loop's while it connects; shared while the
// handshake runs (the handshaker writes, the loop alone reads); the loop's
// again once it took the handshake's result (tookHandshake), or the
// runtime's poller's for a connection that fell back (handOff). A connection that ends while its handshake runs (its
// deadline, an abort) only cancels the handshake: the socket is closed
// with the result (tlsDial.discard), so that its descriptor cannot be
// reused under a handshaker still writing to it.

// maxHandshakeBytes bounds what the loop takes from a server for one
// handshake (its flight, certificates and all, and what follows before
// the loop takes the result).
const maxHandshakeBytes = 1 << 20

// hsPipe is a handshake's net.Conn.
type hsPipe struct {
	fd     int
	remote net.Addr

	// Filled by the loop, taken by the handshaker, under mu.
	mu      sync.Mutex
	buf     []byte // bytes read from the socket; buf[off:] not taken yet
	off     int
	stampNs int64 // the kernel receive stamp of the latest read, 0 if none
	err     error // the socket's end (io.EOF) or error, after buf
	// closed: the shard cancelled the handshake. wake (one slot) tells a
	// waiting Read that bytes, the end or the cancel came.
	closed atomic.Bool
	wake   chan struct{}

	// waiting: the handshaker waits in Read for the loop's bytes; the loop
	// then gets it a CPU token before it wakes it (see wakeWithToken).
	// granted: a token was handed to it while it waited; gaveUp: it
	// stopped waiting (a cancel), and takes none. Under mu.
	waiting, granted, gaveUp bool

	// The handshaker's: the CPU token it holds while it computes (see
	// handshakeCPU), with the thread CPU of its spans holding one.
	tokens    *tokenSet
	held      bool
	cpu0, cpu time.Duration
	// unsent is what crypto/tls wrote that has not gone to the socket
	// yet: a flight goes out when the handshaker next reads (the
	// server's answer depends on it), and the last one, the client's
	// Finished, with the request's first bytes, in one write (see
	// Write). The handshaker's until the shard takes the result.
	unsent []byte

	// Gate bounds crypto/tls's reads to a record during the
	// handshake, and after it feeds the tls.Conn that takes the session
	// tickets. raw, for a connection that fell back, is its socket as
	// crypto/tls reads it from then on.
	tls13.Gate
	raw *stampedConn
}

func newHSPipe(fd int, remote net.Addr) *hsPipe {
	return &hsPipe{fd: fd, remote: remote, wake: make(chan struct{}, 1)}
}

// put appends one read of the socket, stamped stampNs; false if the bytes
// not taken would pass maxHandshakeBytes. Loop.
func (p *hsPipe) put(data []byte, stampNs int64) bool {
	p.mu.Lock()
	ok := len(p.buf)-p.off+len(data) <= maxHandshakeBytes
	if ok {
		p.buf = append(p.buf, data...)
		p.stampNs = stampNs
	}
	woke := p.waiting
	p.waiting = false
	p.mu.Unlock()
	if woke {
		p.wakeWithToken()
	}
	return ok
}

// end records the socket's end or error, after the bytes put. Loop.
func (p *hsPipe) end(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	woke := p.waiting
	p.waiting = false
	p.mu.Unlock()
	if woke {
		p.wakeWithToken()
	}
}

// ended reports whether end was called. Loop.
func (p *hsPipe) ended() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err != nil
}

// rest returns the bytes the handshake did not take, the stamp of the read
// that brought the last of them, and the socket's end if it came; the
// pipe keeps none of them. Loop, once the handshaker is done.
func (p *hsPipe) rest() (b []byte, stampNs int64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, stampNs, err = p.buf[p.off:], p.stampNs, p.err
	p.buf, p.off = nil, 0
	return b, stampNs, err
}

// cancel makes the handshake's reads and writes fail. Loop.
func (p *hsPipe) cancel() {
	p.closed.Store(true)
	p.signal()
}

func (p *hsPipe) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// wakeWithToken wakes the handshaker waiting in Read for the bytes the
// loop just put, once it has a CPU token: now if one is free, else when
// one is given back (tokenSet.give), so that it wakes once, to compute,
// rather than to find the token taken and wait again. Loop.
func (p *hsPipe) wakeWithToken() {
	if p.tokens.take(p) && !p.grant() {
		p.tokens.give()
	}
}

// grant hands p a token, unless p stopped waiting for one (a cancel):
// false then, and the token is not p's.
func (p *hsPipe) grant() bool {
	p.mu.Lock()
	ok := !p.gaveUp
	p.granted = p.granted || ok
	p.mu.Unlock()
	if ok {
		p.signal()
	}
	return ok
}

// await waits (parked, on no thread of its own) for the token p was
// queued for: false if the handshake was cancelled first, and p holds
// none.
func (p *hsPipe) await() bool {
	for {
		p.mu.Lock()
		if p.granted {
			p.granted = false
			p.mu.Unlock()
			return true
		}
		if p.closed.Load() {
			p.gaveUp = true
			p.mu.Unlock()
			return false
		}
		p.mu.Unlock()
		<-p.wake
	}
}

// acquire waits for a CPU token, then locks the goroutine to its thread
// for the span, so that the thread's CPU clock is the span's. A handshake
// cancelled while it waits runs on without one (its reads and writes fail
// from then on).
func (p *hsPipe) acquire() {
	if p.tokens.take(p) || p.await() {
		p.lockSpan()
	}
}

func (p *hsPipe) lockSpan() {
	runtime.LockOSThread()
	p.held = true
	p.cpu0 = threadCPU()
}

// release ends a span holding a token, if one is held.
func (p *hsPipe) release() {
	if p.held {
		p.cpu += threadCPU() - p.cpu0
		runtime.UnlockOSThread()
		p.held = false
		p.tokens.give()
	}
}

// Read implements net.Conn for crypto/tls: what the loop read, up to the
// end of the record being read. With nothing there it waits, without its
// token.
func (p *hsPipe) Read(b []byte) (int, error) {
	if n, err, ok := p.Injected(b); ok {
		return n, err
	}
	if p.raw != nil {
		return p.raw.Read(b)
	}
	if err := p.flush(); err != nil {
		return 0, err
	}
	b = p.Limit(b)
	if len(b) == 0 {
		return 0, nil
	}
	for {
		if p.closed.Load() {
			return 0, net.ErrClosed
		}
		p.mu.Lock()
		n := copy(b, p.buf[p.off:])
		if p.off += n; p.off == len(p.buf) {
			p.buf, p.off = p.buf[:0], 0
		}
		err := p.err
		p.waiting = n == 0 && err == nil
		p.mu.Unlock()
		if n > 0 {
			p.Took(b[:n])
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		// The loop gets this handshaker a token when the bytes come
		// (wakeWithToken); it wakes holding it, or to a cancel.
		p.release()
		if p.await() {
			p.lockSpan()
		}
	}
}

// Write implements net.Conn for crypto/tls: the bytes wait in unsent
// until the handshaker reads, or the handshake ends. So the client's
// Finished, the last flight of a TLS 1.3 handshake, leaves with the
// request's first record in one write of the loop's (toLoop), instead of a
// write of its own: one system call fewer per connection, and on loopback
// one delivery fewer run on the client's CPU (with the server's wake-up
// and read). A connection that falls back writes it before its request.
func (p *hsPipe) Write(b []byte) (int, error) {
	if p.raw != nil {
		return p.raw.Write(b)
	}
	if p.closed.Load() {
		return 0, net.ErrClosed
	}
	p.unsent = append(p.unsent, b...)
	return len(b), nil
}

// flush writes unsent to the socket. A full send buffer (which a
// handshake's flight meets only on a congested path) is waited out a
// while at a time, so that a cancel is seen. Handshaker.
func (p *hsPipe) flush() error {
	n := 0
	defer func() { p.unsent = p.unsent[:copy(p.unsent, p.unsent[n:])] }()
	for n < len(p.unsent) {
		if p.closed.Load() {
			return net.ErrClosed
		}
		m, err := unix.Write(p.fd, p.unsent[n:])
		switch err {
		case nil:
			n += m
		case unix.EINTR:
		case unix.EAGAIN:
			p.release()
			fds := [1]unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLOUT}}
			unix.Poll(fds[:], 50)
			p.acquire()
		default:
			return os.NewSyscallError("write", err)
		}
	}
	return nil
}

// Close cancels the handshake (crypto/tls closes its transport when its
// handshake fails), or closes the socket of a connection that fell back.
func (p *hsPipe) Close() error {
	if p.raw != nil {
		return p.raw.Close()
	}
	p.cancel()
	return nil
}

func (p *hsPipe) LocalAddr() net.Addr  { return p.remote }
func (p *hsPipe) RemoteAddr() net.Addr { return p.remote }

func (p *hsPipe) SetDeadline(t time.Time) error {
	if p.raw != nil {
		return p.raw.SetDeadline(t)
	}
	return nil
}

func (p *hsPipe) SetReadDeadline(t time.Time) error {
	if p.raw != nil {
		return p.raw.SetReadDeadline(t)
	}
	return nil
}

func (p *hsPipe) SetWriteDeadline(t time.Time) error {
	if p.raw != nil {
		return p.raw.SetWriteDeadline(t)
	}
	return nil
}

// tlsDial is one connection's handshake, run by a handshaker for shard s's
// connection c over p; the results go back to s.
type tlsDial struct {
	s *Shard
	c *conn
	p *hsPipe
	// fd is the socket while the handshake has it, to be closed with a
	// result the shard does not take; -1 once the shard took it back.
	fd int

	// The handshake's outcome, made into the record layer by the shard
	// (so that its long-lived keys come from the loop's allocations, not
	// among the handshake's garbage).
	tc             *tls.Conn
	version, suite uint16
	keys           *keyLog
	hs             HandshakeTimes
	handshook      bool   // a handshake was attempted
	failure        string // why the connection cannot carry the request

	// connectByNs is when the connect timeout of the connection's request
	// runs out: its connect's start plus Config.ConnectTimeout. It bounds
	// the connect and the handshake together (see startTLS).
	connectByNs int64

	// own: the loop's own handshake in progress (tlsown.go), no
	// handshaker's; noOwn: this connection's handshake is crypto/tls's.
	own   *ownHS
	noOwn bool
	// waiting: the connection waits for the run's first ticket (see
	// ownState.ticketConn), connected, no handshake begun.
	waiting bool
	// ownQueued: the own handshake's flight waits in the shard's
	// ownReady.
	ownQueued bool

	// fallback: the handshake negotiated what the loop cannot carry, and
	// tc stays to carry the request on serve's goroutine, with cl, until
	// deadline, over raw (the socket handed to the runtime's poller).
	// served: serve ended, the answer parsed in cl, ok or failed with
	// text; the dial comes back to the shard a second time then.
	fallback bool
	cl       *Client
	raw      *stampedConn
	deadline time.Time
	served   bool
	ok       bool
	text     string
	reads    atomic.Int64
	stamped  atomic.Int64
}

// cancel ends the handshake, or the request of a connection that fell
// back, in progress. Loop.
func (d *tlsDial) cancel() {
	if d.p != nil {
		d.p.cancel()
	}
	if d.cl != nil {
		d.cl.Interrupt(time.Time{})
	}
}

// discard closes the socket of a result nobody takes.
func (d *tlsDial) discard() {
	if d.fd >= 0 {
		closeFD(d.fd)
		d.fd = -1
	}
	if d.fallback && d.tc != nil {
		d.tc.Close()
	}
	d.tc, d.raw = nil, nil
	if d.served {
		d.cl.c.giveBack()
	}
}

// handshakers runs tlsDials on at most maxHandshakers goroutines, oldest
// first.
var handshakers handshakePool

type handshakePool struct {
	mu      sync.Mutex
	jobs    []*tlsDial
	head    int
	running int
	// held: warm-ups in progress (see hold); the ramp lasts while any is.
	held int
	ramp rampMemory
	// done counts the handshakes finished, to move the memory limit.
	done atomic.Int64
}

func (p *handshakePool) submit(d *tlsDial) {
	p.mu.Lock()
	p.jobs = append(p.jobs, d)
	if p.running == 0 && p.held == 0 {
		p.ramp.start()
		handshakeCPU.size()
	}
	if p.ramp.submitted++; p.ramp.submitted%rampStep == 0 {
		p.ramp.adjust()
	}
	if p.running < maxHandshakers {
		p.running++
		go p.work()
	}
	p.mu.Unlock()
}

// hold makes one ramp of a warm-up's rounds, whose handshakers go idle
// between rounds: otherwise each round would start a ramp of its own, the
// limit counting the garbage the rounds before left. release ends it.
func (p *handshakePool) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running == 0 && p.held == 0 {
		p.ramp.start()
		handshakeCPU.size()
	}
	p.held++
}

func (p *handshakePool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held--; p.running == 0 && p.held == 0 {
		p.ramp.end()
	}
}

// Memory during a ramp of handshakes. A handshake leaves 30 to 50 KB of
// garbage behind (crypto/tls's own) while the connections it made stay
// live, so under the default GC target the heap would grow to twice the
// connections' state and the process's peak RSS with it; a lower target
// (GOGC 25) keeps the peak near the live size but collects after every
// quarter of the live heap, early in the ramp when that is a few MB,
// which costs more CPU than the loops' own work. Instead, while the
// handshakers run, the ramp holds the GC's settings (internal/memlimit):
// the GC target off and a soft memory limit at what the ramp's
// connections will hold, the memory in use when it began, rampPerConn for
// each connection submitted since, and rampMargin. The GC then runs only
// as the heap nears that limit, when a collection frees the most. The
// ramp's hold is released when the pool drains; a run's own hold
// (engine's) may stand beside it, and the larger of the two is the limit.
type rampMemory struct {
	hold *memlimit.Hold // nil between ramps
	// base: memory in use at the start; submitted: handshakes since.
	base, submitted int64
}

const (
	// rampPerConn is the memory a TLS connection holds on a loop, about
	// 2.5 KB measured at 10,000 streams (its conn and recorder slot, as a
	// plain connection's, and its record layer: AES-GCM state, keys),
	// and some 500 bytes of room per connection for the handshakes'
	// garbage. Less room makes the GC run more often than the loops'
	// own work costs (2,700 bytes and a 6 MB margin: 2.4 µs more CPU per
	// token event at 10,000 streams, for 8 MB less RSS).
	rampPerConn = 3000
	// rampMargin covers the handshakes in flight and the loops' buffers,
	// and is the room for garbage between collections: a collection
	// comes every rampMargin / 45 KB handshakes and marks the whole live
	// heap, which grows with the connections, so the ramp's GC CPU grows
	// with the square of its length over the margin. Measured side by
	// side (cmd/fidelity -tls, decode-step, one CPU): at 1,000 streams a
	// margin of 6 MB cost 74–130 ms of GC and 26 MB of peak RSS, 16 MB
	// 17–23 ms and 36 MB, 32 MB 7–10 ms and 50 MB; at 10,000 streams
	// 1.7–6.9 s of GC and 65 MB, 1.9 s and 68 MB, 0.74 s and 83 MB.
	rampMargin = 16 << 20
	// rampReturn: a ramp of at least this many handshakes ends with its
	// garbage collected and the freed memory returned to the OS.
	rampReturn = 1024
	// rampStep: the limit moves every rampStep handshakes submitted or
	// finished (each move stops the world for a moment).
	rampStep = 128
)

// start takes the ramp's hold. Under the pool's mu.
func (r *rampMemory) start() {
	r.base = memlimit.InUse()
	r.submitted = 0
	r.hold = memlimit.Take(r.base, rampMargin)
}

// adjust moves the ramp's floor to its connections. Under the pool's mu.
func (r *rampMemory) adjust() { r.hold.Set(r.base + r.submitted*rampPerConn) }

// end releases the ramp's hold. Under the pool's mu.
func (r *rampMemory) end() {
	if r.hold == nil {
		return
	}
	r.hold.Release()
	r.hold = nil
	if r.submitted >= rampReturn {
		// The handshakes' garbage, gone by the next collection, would
		// otherwise stay resident (as free heap) for the rest of the
		// run, and the heap grow on top of it.
		go debug.FreeOSMemory()
	}
}

// work runs the pool's handshakes in turn. The CPU token (and thread) a
// handshake held at its end is carried to the next one's first span
// rather than given back and waited for again: a handshake's start, its
// ClientHello, then costs no wake-up of its own (a ramp of 1,000 saw 1,927
// of its 2,000 token waits block before, one handshaker handing the token
// to the next). The token goes back when the queue is empty.
func (p *handshakePool) work() {
	var carried *tokenSet // the set whose token is held across handshakes, if any
	for {
		p.mu.Lock()
		if p.head == len(p.jobs) {
			p.jobs, p.head = p.jobs[:0], 0
			if p.running--; p.running == 0 && p.held == 0 {
				p.ramp.end()
			}
			p.mu.Unlock()
			giveBack(carried)
			return
		}
		d := p.jobs[p.head]
		p.jobs[p.head] = nil
		p.head++
		p.mu.Unlock()
		carried = d.run(carried)
		d.s.handshakeDone(d)
		if p.done.Add(1)%rampStep == 0 {
			p.mu.Lock()
			p.ramp.adjust()
			p.mu.Unlock()
		}
	}
}

// handshakeCPU bounds the handshakers computing at once. A shard's
// goroutine needs a P each time its epoll_wait returns, and the engine
// keeps GOMAXPROCS a little above the shard count so that one is free
// (engine/procs.go). A handshake is some 250 µs of CPU, all of it with a
// near server: with more handshakers runnable than spare Ps, the Go
// scheduler gives a waking loop's P to one of them and the loop waits on
// the run queue through time slices of up to 10 ms (1,000-stream TLS runs
// read tokens 30 to 160 ms late at p99, the stamps then covering several
// tokens). So a handshaker computes only while it holds one of
// GOMAXPROCS − loops − 1 tokens (at least one), and gives its token back
// while it waits for the server: with a far server many handshakes are in
// flight, with a near one they take turns, and a waking loop always finds
// a P. (A P for every handshaker instead, GOMAXPROCS + 64, made idle Ps
// spin: twenty times the CPU per event.) Handshakers are plain goroutines,
// locked to their thread only while they hold a token: locked throughout,
// each hand-over of a token switched threads (10,000 TLS streams cost the
// client 38–40 µs per token event against 29–30 so, the same as without
// tokens); the span's lock keeps the thread's CPU clock the handshake's,
// and a handshake's CPU is the sum over its spans. What remained with
// the handshakers dialing and reading their sockets themselves (through
// the runtime's poller, a read per record header and body): at 1,000
// streams × 50 tok/s on one CPU half the runs read tokens 10–20 ms late
// at p99, the ramp's dialing, scheduling and reads sharing the CPU with the
// loop, and a loop more than one decode step (20 ms) behind reads two
// steps' records in one read, which share its stamp. With the loop
// connecting and reading for them, a ramp costs the process 19 % less CPU
// at 10,000 streams and the 1,000-stream p99 stays at 40–56 µs (docs/tls.md,
// "Measured"). Handshakers locked for life at nice 19 cleared more runs then but
// not all, for some 20 % more CPU; a nice value given to a span's thread,
// one of the runtime's, could not be taken back without privilege.
var handshakeCPU cpuTokens

// loopsRunning counts the shard loops in Run, for the tokens' count.
var loopsRunning atomic.Int32

type cpuTokens struct {
	mu  sync.Mutex
	set *tokenSet
}

// size makes the token count GOMAXPROCS − loops − 1, at least 1, for the
// handshakers starting now; ones holding tokens of an earlier size give
// them back to that set.
func (t *cpuTokens) size() {
	n := max(1, runtime.GOMAXPROCS(0)-int(loopsRunning.Load())-1)
	t.mu.Lock()
	if t.set == nil || t.set.n != n {
		t.set = newTokenSet(n)
	}
	t.mu.Unlock()
}

// tokens is the set size made for the pool's current run.
func (t *cpuTokens) tokens() *tokenSet {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.set
}

// tokenSet is n CPU tokens: the free ones, and the pipes waiting for one,
// first come first served. A token given back goes straight to the first
// pipe still waiting, which wakes holding it (hsPipe.grant): no wake-up
// finds the token taken.
type tokenSet struct {
	n     int
	mu    sync.Mutex
	free  int
	queue []*hsPipe
	head  int
}

func newTokenSet(n int) *tokenSet { return &tokenSet{n: n, free: n} }

// take gives p a token now (true) or queues p for the next one given back
// (false; p then waits in await).
func (t *tokenSet) take(p *hsPipe) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.free > 0 {
		t.free--
		return true
	}
	t.queue = append(t.queue, p)
	return false
}

// give gives a token back: to the first queued pipe still waiting, else
// to the free ones.
func (t *tokenSet) give() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.head < len(t.queue) {
		q := t.queue[t.head]
		t.queue[t.head] = nil
		if t.head++; t.head == len(t.queue) {
			t.queue, t.head = t.queue[:0], 0
		}
		if q.grant() {
			return
		}
	}
	t.free++
}

// held counts the tokens taken.
func (t *tokenSet) held() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n - t.free
}

// ticketEvery: one resumed connection in ticketEvery keeps its tls.Conn
// to take the server's session tickets into the cache; every full
// handshake does. crypto/tls's client resumes with the cached ticket again
// and again (all but the first of a ramp's concurrent handshakes use the
// same one), so the cache needs a fresh ticket now and then, not one per
// connection, and the others' tls.Conns (some 5 KB each, with the
// handshake's buffers and ciphers) go as soon as the handshake is done
// instead of living until the loop's first read of the connection.
const ticketEvery = 16

// resumedSeen counts the resumed handshakes, for ticketEvery.
var resumedSeen atomic.Uint64

// run completes the handshake over the connected socket. Its CPU, all of
// it from the tls.Config's copy to the connection's state, is counted in
// spans holding a CPU token (see hsPipe.acquire). carried, if not nil, is
// a token of the pool's run the goroutine holds (its thread locked), from
// the handshake before: the first span takes it instead of waiting for
// one. run returns the token it holds at the end (nil if none), still
// held, for the next handshake or giveBack.
func (d *tlsDial) run(carried *tokenSet) *tokenSet {
	s, p := d.s, d.p
	if p.closed.Load() {
		d.failure = "cancelled"
		return carried
	}
	clock := s.cfg.Clock
	d.hs.StartNs = clock.Now()
	p.tokens = handshakeCPU.tokens()
	if carried != nil && carried == p.tokens {
		p.held, p.cpu0 = true, threadCPU()
	} else {
		giveBack(carried)
		p.acquire()
	}
	d.handshake()
	carried = nil
	if p.held {
		p.cpu += threadCPU() - p.cpu0
		p.held, carried = false, p.tokens
	}
	d.hs.EndNs, d.hs.CPU = clock.Now(), p.cpu
	return carried
}

// giveBack ends a span whose token run carried out of a handshake.
func giveBack(tokens *tokenSet) {
	if tokens != nil {
		runtime.UnlockOSThread()
		tokens.give()
	}
}

func (d *tlsDial) handshake() {
	s, p := d.s, d.p
	cfg := s.cfg.TLS.Clone()
	keys := &keyLog{next: s.cfg.TLS.KeyLogWriter}
	cfg.KeyLogWriter = keys
	tc := tls.Client(p, cfg)
	d.handshook = true
	if err := tc.Handshake(); err != nil {
		// The alert crypto/tls sent, if it did.
		p.flush()
		if p.closed.Load() {
			d.failure = "cancelled"
		} else {
			d.failure = "TLS handshake with " + s.cfg.Addr.String() + ": " + err.Error()
		}
		return
	}
	cs := tc.ConnectionState()
	d.hs.Resumed = cs.DidResume
	if tls13.Carries(cs.Version, keys.server, keys.client) != nil {
		d.tc, d.fallback = tc, true
		return
	}
	d.version, d.suite, d.keys = cs.Version, cs.CipherSuite, keys
	if !cs.DidResume || resumedSeen.Add(1)%ticketEvery == 0 {
		d.tc = tc
	}
}

// serve sends req on the connection that fell back and reads its answer
// through crypto/tls with d.cl, whose reads carry the raw socket's kernel
// stamps, until the answer is decided, the request's deadline passes or
// the shard cancels d; then it closes the connection and hands d back to
// the shard, which records the outcome. cl's stream is the request's as
// the shard began it.
func (d *tlsDial) serve(req *Request) {
	s, cl := d.s, d.cl
	cl.c.beginRequest(req)
	cl.raw, cl.tc = d.raw, d.tc
	cl.clock.refresh(s.cfg.Clock.Now())
	cl.setLive(cl.tc, d.deadline)
	text, ok, _ := cl.roundTrip(req)
	cl.Close()
	cl.cancelDial()
	d.tc, d.raw = nil, nil
	d.ok, d.text, d.served = ok, text, true
	s.handshakeDone(d)
}
