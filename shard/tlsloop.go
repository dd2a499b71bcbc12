package shard

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stampede-bench/stampede/internal/tls13"
	"golang.org/x/sys/unix"
)

// TLS connections on the shard loops (Config.TLS). A new connection's TCP
// connect and TLS handshake run in crypto/tls on a handshaker goroutine
// (at most maxHandshakers in the process); the socket and the two traffic
// keys then move to the shard, which registers the socket with its epoll
// like any other. From there on the loop reads ciphertext with the same
// recvmsg (kernel stamps included), opens each record in place in its one
// read buffer with the server's key and feeds the plaintext to the
// connection's Response, and seals the requests with the client's key and
// writes them itself. crypto/tls keeps the connection's tls.Conn only to
// take the server's session tickets into the session cache (handed over
// synchronously, never touching the socket): every ticket of the burst
// servers send right after the handshake (OpenSSL and rustls send two,
// one record each), each put in the cache as crypto/tls would, the last
// one staying; the tls.Conn is let go at the end of the read that brought
// them, or at the first record of the first response if no ticket came
// before it. A KeyUpdate from the server moves the read key, and if the
// server asks, the loop answers with its own KeyUpdate and moves the
// write key. Only TLS 1.3 (AES-GCM or ChaCha20-Poly1305) can run there;
// ProbeTLS tells a caller beforehand whether a server negotiates it. A
// connection that negotiates anything else all the same (a load balancer
// whose backends differ) carries its request as on the fallback transport
// (tls.go): crypto/tls reads it on a goroutine of its own, through the
// same parsers, with the raw socket's kernel stamps, and the shard records
// the outcome (see fallBack; Health.TLSFallbacks counts them). Such a
// connection carries that one request and closes.
//
// Memory: a connection that takes tickets (every full handshake, one
// resumed in ticketEvery) holds its tls.Conn until the server's tickets
// (or its first response record); the others let it go when the handshake
// ends. From then on only the two keys, inside loopTLS, the read
// key warm (its cipher state ready for every record) and the write key
// cool (16 or 32 key bytes, the cipher built again for each request it
// seals).

// maxHandshakers bounds the handshaker goroutines: each holds a deep
// stack, and many are in flight only while they wait for a far server (at
// most handshakeCPU's tokens compute at once).
const maxHandshakers = 64

// tlsMaxPlain is the most plaintext one record may carry (RFC 8446 §5.1).
const tlsMaxPlain = 16384

// sealBatch is how much of a request the loop seals per write.
const sealBatch = 4 * tlsMaxPlain

// loopTLS is the record layer of one TLS connection on a shard loop.
type loopTLS struct {
	read, write tls13.Key
	// feed is the server's first traffic key, under which handshake
	// messages are re-sealed for tc (which never sees a KeyUpdate, so its
	// key never moves; its Seq counts the records tc has read). Cool but
	// while it seals.
	feed *tls13.Key
	tc   *tls.Conn // takes the session tickets; nil once they came
	// ticketed: tc took a ticket; it goes at the end of the read.
	ticketed bool
	raw      *stampedConn // tc's transport, used only to inject records
	// partial holds the start of a record a read did not complete.
	partial []byte
	// out holds sealed bytes the socket did not take yet.
	out []byte
	// sent: the request's last byte was written.
	sent bool
}

// splitRecord returns the length of the first whole record in b, header
// included, or 0 if b does not hold one yet. A header announcing more than
// a TLS 1.3 record may carry is an error.
func splitRecord(b []byte) (int, error) {
	if len(b) < tlsHeaderLen {
		return 0, nil
	}
	size := int(binary.BigEndian.Uint16(b[3:]))
	if size > tlsMaxRecord {
		return 0, errors.New("TLS record of " + strconv.Itoa(size) + " bytes")
	}
	if len(b) < tlsHeaderLen+size {
		return 0, nil
	}
	return tlsHeaderLen + size, nil
}

// openRecord opens the protected record rec (header included) in place
// with k, counts it, and returns its content type and plaintext. A
// ChangeCipherSpec record (sent unprotected for middlebox compatibility)
// comes back as such, unopened.
func openRecord(k *tls13.Key, rec []byte) (typ byte, p []byte, err error) {
	hdr, body := rec[:tlsHeaderLen], rec[tlsHeaderLen:]
	switch hdr[0] {
	case tlsAppData:
	case tlsChangeSpec:
		return tlsChangeSpec, nil, nil
	default:
		return 0, nil, errors.New("TLS: unexpected plaintext record of type " + strconv.Itoa(int(hdr[0])))
	}
	p, err = k.AEAD.Open(body[:0], k.Nonce(k.Seq), body, hdr)
	if err != nil {
		return 0, nil, errors.New("TLS: record authentication failed")
	}
	k.Seq++
	for len(p) > 0 && p[len(p)-1] == 0 {
		p = p[:len(p)-1]
	}
	if len(p) == 0 {
		return 0, nil, errors.New("TLS: record without a content type")
	}
	return p[len(p)-1], p[:len(p)-1], nil
}

// sealRecord appends to dst the record of content type typ carrying p
// (at most tlsMaxPlain bytes), sealed with k (warm) under its next number.
func sealRecord(dst []byte, k *tls13.Key, typ byte, p []byte) []byte {
	size := len(p) + 1 + tls13.Overhead
	start := len(dst)
	dst = append(dst, tlsAppData, 3, 3, byte(size>>8), byte(size))
	dst = append(dst, p...)
	dst = append(dst, typ)
	hdr := dst[start : start+tlsHeaderLen]
	return k.AEAD.Seal(dst[:start+tlsHeaderLen], k.NextNonce(), dst[start+tlsHeaderLen:], hdr)
}

// alertError turns an alert record's plaintext into its error:
// errCloseNotify for close_notify (the peer's end of the stream).
func alertError(p []byte) error {
	switch {
	case len(p) != 2:
		return errors.New("TLS: malformed alert")
	case p[1] == 0:
		return errCloseNotify
	}
	return errTLSAlert(p[1])
}

var errCloseNotify = errors.New("close_notify")

// keyUpdate finds a KeyUpdate among the handshake messages in msg (it is
// the last of its record, RFC 8446 §5.1): at is where it begins (len(msg)
// if there is none) and requested its request_update flag.
func keyUpdate(msg []byte) (at int, found, requested bool, err error) {
	for at+4 <= len(msg) {
		n := int(msg[at+1])<<16 | int(msg[at+2])<<8 | int(msg[at+3])
		if msg[at] == tlsKeyUpdate {
			if n != 1 || at+5 != len(msg) || msg[at+4] > 1 {
				return at, false, false, errors.New("TLS: malformed KeyUpdate")
			}
			return at, true, msg[at+4] == 1, nil
		}
		at += 4 + n
	}
	return len(msg), false, false, nil
}

// handshakeMsgs handles the post-handshake messages of one record:
// session tickets go to crypto/tls while it is there, a
// KeyUpdate moves the read key and, when the server asks, queues the
// loop's own KeyUpdate in out and moves the write key.
func (t *loopTLS) handshakeMsgs(msg []byte) error {
	at, found, requested, err := keyUpdate(msg)
	if err != nil {
		return err
	}
	if at > 0 && t.tc != nil {
		// A failed hand-over costs only resumption: the tls.Conn goes.
		if t.inject(msg[:at]) != nil {
			t.letGo()
		} else {
			t.ticketed = true
		}
	}
	if !found {
		return nil
	}
	if err := t.read.Update(); err != nil {
		return err
	}
	if requested {
		cool := t.write.AEAD == nil
		if err := t.write.Warm(); err != nil {
			return err
		}
		t.out = sealRecord(t.out, &t.write, tlsHandshake, []byte{tlsKeyUpdate, 0, 0, 1, 0})
		if cool {
			t.write.Cool()
		}
		return t.write.Update()
	}
	return nil
}

// letGo drops the tls.Conn, its buffers and the key that fed it: the
// server's tickets came, or its first response began (servers send their
// tickets right after the handshake).
func (t *loopTLS) letGo() { t.tc, t.raw, t.feed, t.ticketed = nil, nil, nil, false }

// inject hands handshake messages to crypto/tls, sealed as the record it
// expects next; its Read consumes them and returns without touching the
// socket.
func (t *loopTLS) inject(msg []byte) error {
	if err := t.feed.Warm(); err != nil {
		return err
	}
	rec := sealRecord(nil, t.feed, tlsHandshake, msg)
	t.feed.Cool()
	t.raw.inject, t.raw.injecting = rec, true
	var one [1]byte
	_, err := t.tc.Read(one[:])
	t.raw.inject, t.raw.injecting = nil, false
	if !errors.Is(err, errPaused) {
		if err == nil {
			err = errors.New("TLS: application data inside a handshake record")
		}
		return err
	}
	return nil
}

// tlsDial is one connection's connect and handshake, done by a handshaker
// for shard s's connection c; the results go back to s.
type tlsDial struct {
	s      *Shard
	c      *conn
	ctx    context.Context
	cancel context.CancelFunc

	fd int // the connected socket, -1 if none
	// The handshake's outcome, made into the record layer by the shard
	// (so that its long-lived keys come from the loop's allocations, not
	// among the handshake's garbage).
	tc             *tls.Conn
	raw            *stampedConn
	version, suite uint16
	keys           *keyLog
	connectedNs    int64 // 0: never connected
	hs             HandshakeTimes
	handshook      bool   // a handshake was attempted
	failure        string // why the connection cannot carry the request
	reads          atomic.Int64
	stamped        atomic.Int64

	// fallback: the handshake negotiated what the loop cannot carry, and
	// tc (over raw) stays to carry the request on serve's goroutine.
	// served: serve ended, the answer parsed in cl, ok or failed with
	// text; the dial comes back to the shard a second time then.
	fallback bool
	served   bool
	cl       *Client
	ok       bool
	text     string
}

// discard closes the socket of a result nobody takes.
func (d *tlsDial) discard() {
	if d.fd >= 0 {
		closeFD(d.fd)
		d.fd = -1
	}
	if d.fallback && d.tc != nil {
		d.tc.Close()
		d.tc, d.raw = nil, nil
	}
	if d.cl != nil {
		d.cl.c.giveBack()
		d.cl = nil
	}
	d.cancel()
}

// handshakers runs tlsDials on at most maxHandshakers goroutines, oldest
// first.
var handshakers handshakePool

type handshakePool struct {
	mu      sync.Mutex
	jobs    []*tlsDial
	head    int
	running int
	ramp    rampMemory
	// done counts the handshakes finished, to move the memory limit.
	done atomic.Int64
}

func (p *handshakePool) submit(d *tlsDial) {
	p.mu.Lock()
	p.jobs = append(p.jobs, d)
	if p.running == 0 {
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

// Memory during a ramp of handshakes. A handshake leaves 30 to 50 KB of
// garbage behind (crypto/tls's own) while the connections it made stay
// live, so under the default GC target the heap would grow to twice the
// connections' state and the process's peak RSS with it; a lower target
// (GOGC 25) keeps the peak near the live size but collects after every
// quarter of the live heap, early in the ramp when that is a few MB,
// which costs more CPU than the loops' own work. Instead, while the
// handshakers run, the GC target is off and a soft memory limit
// (runtime/debug.SetMemoryLimit) stands at what the ramp's connections
// will hold: the memory in use when it began, rampPerConn for each
// connection submitted since, and rampMargin. The GC then runs only as the
// heap nears that limit, when a collection frees the most. The limit is never below
// the live heap plus a quarter plus the margin (an estimate too low for a
// run's connections cannot make the GC run back to back), never above a
// limit already set (GOMEMLIMIT), and the GC target goes off only if it
// was the default or higher (a lower GOGC is kept, the limit only adds to
// it). Both are restored when the pool drains.
type rampMemory struct {
	on bool
	// gcPercent and limit: the settings found at the ramp's start.
	gcPercent int
	limit     int64
	// base: memory in use at the start; submitted: handshakes since.
	base, submitted int64
}

const (
	// rampPerConn is the memory a TLS connection holds on a loop,
	// measured at 10,000 streams: its conn and recorder slot (as a plain
	// connection's) and its record layer (AES-GCM state, keys).
	rampPerConn = 3500
	// rampMargin covers the handshakes in flight and the loops' buffers.
	rampMargin = 8 << 20
	// rampStep: the limit moves every rampStep handshakes submitted or
	// finished (each move stops the world for a moment).
	rampStep = 128
)

// memInUse reads what the memory limit is compared with (mapped memory
// not released to the OS) and the live heap at the last GC.
func memInUse() (inUse, live int64) {
	s := [...]metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	metrics.Read(s[:])
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64()), int64(s[2].Value.Uint64())
}

// start sets the ramp's GC target and first limit. Under the pool's mu.
func (r *rampMemory) start() {
	r.base, _ = memInUse()
	r.submitted = 0
	r.limit = debug.SetMemoryLimit(-1)
	r.gcPercent = debug.SetGCPercent(-1)
	if r.gcPercent < 100 {
		debug.SetGCPercent(r.gcPercent)
	}
	r.on = true
	r.adjust()
}

// adjust moves the limit to the ramp's connections. Under the pool's mu.
func (r *rampMemory) adjust() {
	if !r.on {
		return
	}
	_, live := memInUse()
	l := max(r.base+r.submitted*rampPerConn, live+live/4) + rampMargin
	debug.SetMemoryLimit(min(l, r.limit))
}

// end restores what start found. Under the pool's mu.
func (r *rampMemory) end() {
	if r.on {
		debug.SetGCPercent(r.gcPercent)
		debug.SetMemoryLimit(r.limit)
		r.on = false
	}
}

func (p *handshakePool) work() {
	for {
		p.mu.Lock()
		if p.head == len(p.jobs) {
			p.jobs, p.head = p.jobs[:0], 0
			if p.running--; p.running == 0 {
				p.ramp.end()
			}
			p.mu.Unlock()
			return
		}
		d := p.jobs[p.head]
		p.jobs[p.head] = nil
		p.head++
		p.mu.Unlock()
		d.run()
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
// and a handshake's CPU is the sum over its spans. What remains: at 1,000
// streams × 50 tok/s on one CPU some runs still read tokens 10–20 ms late
// at p99 (against 30 to 160 ms without tokens): the ramp's handshakes,
// dialing and GC share the CPU with the loop, and a loop more than one
// decode step (20 ms) behind reads two steps' records in one read, which
// share its stamp (README, "TLS"). Handshakers locked for life at nice 19
// as well cleared more runs but not all, for some 20 % more CPU; a nice
// value given to a span's thread, one of the runtime's, could not be
// taken back without privilege.
var handshakeCPU cpuTokens

// loopsRunning counts the shard loops in Run, for the tokens' count.
var loopsRunning atomic.Int32

type cpuTokens struct {
	mu sync.Mutex
	ch chan struct{}
}

// size makes the token count GOMAXPROCS − loops − 1, at least 1, for the
// handshakers starting now; ones holding tokens of an earlier size give
// them back to that channel.
func (t *cpuTokens) size() {
	n := max(1, runtime.GOMAXPROCS(0)-int(loopsRunning.Load())-1)
	t.mu.Lock()
	if t.ch == nil || cap(t.ch) != n {
		t.ch = make(chan struct{}, n)
	}
	t.mu.Unlock()
}

// tokens is the channel size made for the pool's current run.
func (t *cpuTokens) tokens() chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ch
}

// gatedConn is a handshake's transport: while the handshake runs it holds
// a CPU token, except while a Read waits for the server; cpu sums the
// thread CPU of the spans it held one.
type gatedConn struct {
	*stampedConn
	tokens chan struct{}
	held   bool
	cpu0   time.Duration
	cpu    time.Duration
}

// acquire waits for a token (parked, on no thread of its own), then locks
// the goroutine to its thread for the span, so that the thread's CPU clock
// is the span's.
func (g *gatedConn) acquire() {
	g.tokens <- struct{}{}
	runtime.LockOSThread()
	g.held = true
	g.cpu0 = threadCPU()
}

func (g *gatedConn) release() {
	if g.held {
		g.cpu += threadCPU() - g.cpu0
		runtime.UnlockOSThread()
		g.held = false
		<-g.tokens
	}
}

func (g *gatedConn) Read(b []byte) (int, error) {
	if !g.held {
		return g.stampedConn.Read(b)
	}
	g.release()
	n, err := g.stampedConn.Read(b)
	g.acquire()
	return n, err
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

// run connects and completes the handshake.
func (d *tlsDial) run() {
	s := d.s
	if d.ctx.Err() != nil {
		d.failure = "cancelled"
		return
	}
	addr := s.cfg.Addr.String()
	nd := net.Dialer{Timeout: s.cfg.ConnectTimeout}
	nc, err := nd.DialContext(d.ctx, "tcp", addr)
	if err != nil {
		var errno syscall.Errno
		switch {
		case d.ctx.Err() != nil:
			d.failure = "cancelled"
		case errors.As(err, &errno):
			d.failure = "connect " + addr + ": " + errno.Error()
		case errors.Is(err, os.ErrDeadlineExceeded), isTimeout(err):
			d.failure = "connect " + addr + ": timed out after " + s.cfg.ConnectTimeout.String()
		default:
			d.failure = "connect " + addr + ": " + err.Error()
		}
		return
	}
	clock := s.cfg.Clock
	d.connectedNs = clock.Now()
	raw, err := newStampedConn(nc.(*net.TCPConn), s.cfg.KernelTimestamps, &d.reads, &d.stamped)
	if err != nil {
		nc.Close()
		d.failure = "connect " + addr + ": " + err.Error()
		return
	}
	cfg := s.cfg.TLS.Clone()
	keys := &keyLog{next: s.cfg.TLS.KeyLogWriter}
	cfg.KeyLogWriter = keys
	gate := &gatedConn{stampedConn: raw, tokens: handshakeCPU.tokens()}
	tc := tls.Client(gate, cfg)
	d.handshook = true
	start := clock.Now()
	gate.acquire()
	err = tc.HandshakeContext(d.ctx)
	gate.release()
	d.hs = HandshakeTimes{StartNs: start, EndNs: clock.Now(), CPU: gate.cpu}
	if err != nil {
		raw.Close()
		if d.ctx.Err() != nil {
			d.failure = "cancelled"
		} else {
			d.failure = "TLS handshake with " + addr + ": " + err.Error()
		}
		return
	}
	cs := tc.ConnectionState()
	d.hs.Resumed = cs.DidResume
	if loopCarries(cs.Version, keys) != nil {
		d.tc, d.raw, d.fallback = tc, raw, true
		return
	}
	d.version, d.suite, d.keys = cs.Version, cs.CipherSuite, keys
	if !cs.DidResume || resumedSeen.Add(1)%ticketEvery == 0 {
		d.tc, d.raw = tc, raw
	}
	// The loop keeps a descriptor of its own; closing the net.Conn's
	// takes it out of the runtime's poller (the socket stays open).
	var dupErr error
	raw.raw.Control(func(fd uintptr) { d.fd, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) })
	raw.TCPConn.Close()
	if dupErr != nil {
		d.fd = -1
		d.failure = "TLS with " + addr + ": " + dupErr.Error()
	}
}

// loopCarries says why a connection cannot run on a loop (nil if it can):
// only TLS 1.3, with the traffic secrets in the key log.
func loopCarries(version uint16, keys *keyLog) error {
	if version != tls.VersionTLS13 {
		return errors.New("the server negotiated " + tls.VersionName(version) + ", not TLS 1.3")
	}
	if keys.server == nil || keys.client == nil {
		return errors.New("no traffic secrets in the key log")
	}
	return nil
}

// newLoopTLS takes the traffic keys of a TLS 1.3 connection from its key
// log; any other connection cannot run on a loop. The write key and the
// feed start cool.
func newLoopTLS(version, suite uint16, keys *keyLog) (*loopTLS, error) {
	if err := loopCarries(version, keys); err != nil {
		return nil, err
	}
	t := &loopTLS{}
	if err := t.read.Init(suite, keys.server); err != nil {
		return nil, err
	}
	if err := t.read.Warm(); err != nil {
		return nil, err
	}
	if err := t.write.Init(suite, keys.client); err != nil {
		return nil, err
	}
	return t, nil
}

// takeTickets makes t take the server's session tickets with tc.
func (t *loopTLS) takeTickets(tc *tls.Conn, raw *stampedConn) {
	feed := t.read
	feed.Cool()
	t.tc, t.raw, t.feed = tc, raw, &feed
}

// ProbeTLS makes one connection and handshake with addr (without the
// session cache of cfg) and reports whether the server negotiates what the
// shard loops can carry (TLS 1.3), and if not, what it chose. A
// connection or handshake that fails says nothing (ok true, why the
// failure): the run's own connections will fail the same way.
func ProbeTLS(addr string, cfg *tls.Config, timeout time.Duration) (ok bool, why string) {
	cfg = cfg.Clone()
	cfg.ClientSessionCache = nil
	keys := &keyLog{}
	cfg.KeyLogWriter = keys
	d := net.Dialer{Timeout: timeout}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return true, err.Error()
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(timeout))
	tc := tls.Client(nc, cfg)
	if err := tc.Handshake(); err != nil {
		return true, err.Error()
	}
	cs := tc.ConnectionState()
	if _, err := newLoopTLS(cs.Version, cs.CipherSuite, keys); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// startTLS begins request c.req on a new TLS connection: the handshakers
// connect it, and handshakeDone registers it.
func (s *Shard) startTLS(c *conn) {
	deadline := s.cfg.Clock.Base().Add(time.Duration(c.stream.StartNs()) + s.cfg.RequestTimeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	d := &tlsDial{s: s, c: c, ctx: ctx, cancel: cancel, fd: -1}
	c.dial = d
	c.hsIndex = len(s.handshaking)
	s.handshaking = append(s.handshaking, c)
	handshakers.submit(d)
}

// handshakeDone passes d back to its shard. Any goroutine.
func (s *Shard) handshakeDone(d *tlsDial) {
	s.hsMu.Lock()
	defer s.hsMu.Unlock()
	if s.hsClosed {
		d.discard()
		return
	}
	s.hsDone = append(s.hsDone, d)
	s.hsPending.Store(true)
	// Under the lock: closeAll closes the eventfd only after hsClosed.
	s.wake.signal()
}

// takeHandshakes registers the connections whose handshakes completed,
// and sends their requests; failed ones fail their requests.
func (s *Shard) takeHandshakes() {
	if !s.hsPending.Load() {
		return
	}
	s.hsMu.Lock()
	done := s.hsDone
	s.hsDone = s.hsSpare[:0]
	s.hsPending.Store(false)
	s.hsMu.Unlock()
	for i, d := range done {
		done[i] = nil
		s.tookHandshake(d)
	}
	s.hsSpare = done[:0]
}

func (s *Shard) tookHandshake(d *tlsDial) {
	h := &s.health
	h.Reads += d.reads.Swap(0)
	h.StampedReads += d.stamped.Swap(0)
	if d.served {
		s.tookFallback(d)
		return
	}
	if d.connectedNs != 0 {
		h.Connections++
		if s.lost > 0 {
			s.lost--
			h.Reconnects++
		}
	}
	if d.handshook {
		h.TLSHandshakes++
		h.TLSHandshakeCPU += d.hs.CPU
		h.TLSHandshakeTime += time.Duration(d.hs.EndNs - d.hs.StartNs)
	}
	c := d.c
	if c.state != connHandshaking || c.dial != d {
		// The request ended meanwhile (its deadline, an abort).
		d.discard()
		return
	}
	s.forgetHandshake(c)
	if d.connectedNs != 0 {
		c.stream.Connected(d.connectedNs)
	}
	if d.failure != "" {
		d.discard()
		s.fail(c, d.failure)
		return
	}
	if d.hs.Resumed {
		h.TLSResumed++
	}
	if d.fallback {
		s.fallBack(c, d)
		return
	}
	lt, err := newLoopTLS(d.version, d.suite, d.keys)
	if err != nil {
		d.discard()
		s.fail(c, "TLS with "+s.cfg.Addr.String()+": "+err.Error())
		return
	}
	if d.tc != nil {
		lt.takeTickets(d.tc, d.raw)
	}
	c.stream.Handshaken(d.hs.EndNs)
	s.nextTag++
	c.fd, c.tag, c.tls, c.state = d.fd, s.nextTag, lt, connBusy
	d.fd = -1
	d.tc, d.raw, d.keys = nil, nil, nil
	d.cancel()
	if err := s.poll.add(c.fd, c.tag, connEvents); err != nil {
		closeFD(c.fd)
		c.fd = -1
		s.fail(c, s.connectErrorText(err))
		return
	}
	s.setConn(c.fd, c)
	s.writeRequest(c)
}

// fallBack starts c's request on d's connection, which negotiated what the
// loop cannot carry: serve runs it on a goroutine of its own, as the
// fallback transport would, with a copy of c's stream. Meanwhile c stays
// on the list of connections in their handshake, so that its deadline,
// an abort or the shard's end fail it (on c's stream, whose buffers, empty
// there, the loop reads no further) and cancel d, which interrupts serve.
func (s *Shard) fallBack(c *conn, d *tlsDial) {
	s.health.TLSFallbacks++
	c.stream.Handshaken(d.hs.EndNs)
	c.dial, c.hsIndex = d, len(s.handshaking)
	s.handshaking = append(s.handshaking, c)
	cl := NewClient(&s.cfg, nil, nil)
	cl.c.stream = c.stream
	go d.serve(cl, c.req)
}

// serve sends req on the fallback connection and reads its answer through
// crypto/tls with a Client of its own, whose reads carry the raw socket's
// kernel stamps, until the answer is decided, the request's deadline
// passes or the shard cancels d; then it closes the connection and hands
// d back to the shard, which records the outcome. cl's stream is the
// request's as the shard began it.
func (d *tlsDial) serve(cl *Client, req *Request) {
	s := d.s
	cl.c.beginRequest(req)
	cl.raw, cl.tc = d.raw, d.tc
	deadline, _ := d.ctx.Deadline()
	stop := context.AfterFunc(d.ctx, func() {
		if errors.Is(d.ctx.Err(), context.Canceled) {
			cl.Interrupt(time.Time{})
		}
	})
	cl.clock.refresh(s.cfg.Clock.Now())
	cl.setLive(cl.tc, deadline)
	text, ok, _ := cl.roundTrip(req)
	stop()
	cl.Close()
	cl.cancelDial()
	d.tc, d.raw = nil, nil
	d.cl, d.ok, d.text, d.served = cl, ok, text, true
	s.handshakeDone(d)
}

// tookFallback records the outcome of a request serve carried, unless the
// loop ended it meanwhile.
func (s *Shard) tookFallback(d *tlsDial) {
	c, cl := d.c, d.cl
	if c.state != connHandshaking || c.dial != d {
		d.discard()
		return
	}
	s.forgetHandshake(c)
	if d.ok {
		cl.c.End(s.cfg.Recorder, &s.json, c.req.NumInputSequences)
	} else {
		s.cfg.Recorder.Fail(&cl.c.stream, d.text)
	}
	d.discard()
	s.release(c)
	s.closeConn(c)
}

// forgetHandshake takes c off the list of connections in their handshake.
func (s *Shard) forgetHandshake(c *conn) {
	last := len(s.handshaking) - 1
	moved := s.handshaking[last]
	s.handshaking[c.hsIndex] = moved
	moved.hsIndex = c.hsIndex
	s.handshaking[last] = nil
	s.handshaking = s.handshaking[:last]
	c.dial = nil
}

// stopHandshakes cancels the handshakes in progress and discards the
// results not taken; later ones are discarded as they come.
func (s *Shard) stopHandshakes() {
	s.hsMu.Lock()
	s.hsClosed = true
	for _, d := range s.hsDone {
		d.discard()
	}
	s.hsDone = nil
	s.hsMu.Unlock()
	for _, c := range s.handshaking {
		c.dial.cancel()
		c.state = connClosed
	}
	s.handshaking = nil
}

// writeTLS seals what is left of c's request and writes it, after any
// sealed bytes the socket did not take before; when the send buffer is
// full, EPOLLOUT brings the loop back.
func (s *Shard) writeTLS(c *conn) {
	t := c.tls
	for {
		var pending []byte
		fromOut := len(t.out) > 0
		if fromOut {
			pending = t.out
		} else {
			if c.req == nil || c.written == len(c.req.Wire) {
				return
			}
			if err := t.write.Warm(); err != nil {
				s.fail(c, c.FailureText(err))
				return
			}
			n := min(len(c.req.Wire)-c.written, sealBatch)
			s.seal = s.seal[:0]
			for p := c.req.Wire[c.written : c.written+n]; len(p) > 0; {
				m := min(len(p), tlsMaxPlain)
				s.seal = sealRecord(s.seal, &t.write, tlsAppData, p[:m])
				p = p[m:]
			}
			c.written += n
			if c.written == len(c.req.Wire) {
				t.write.Cool()
			}
			pending = s.seal
		}
		m, err := write(c.fd, pending)
		if err != nil {
			s.connFailed(c, err)
			return
		}
		switch {
		case m == len(pending) && fromOut:
			t.out = t.out[:0]
		case m < len(pending) && fromOut:
			t.out = t.out[:copy(t.out, t.out[m:])]
		case m < len(pending):
			t.out = append(t.out[:0], pending[m:]...)
		}
		if c.req != nil && !t.sent && c.written == len(c.req.Wire) && len(t.out) == 0 {
			t.sent = true
			s.requestSent(c)
		}
		if m < len(pending) && m == 0 {
			return
		}
	}
}

// readTLS reads c once and opens the whole records the read completes, in
// the shard's read buffer behind the partial record c kept from before;
// application data goes to the Response stamped with the read's receive
// time, handshake messages to handshakeMsgs. It reports whether more may
// be waiting that no event will report (see readOnce).
func (s *Shard) readTLS(c *conn) (more bool) {
	t := c.tls
	buf := s.rx.buf
	k := copy(buf, t.partial)
	t.partial = t.partial[:0]
	data, realtimeNs, err := s.rx.recvInto(c.fd, buf[k:])
	if err == errWouldBlock {
		t.partial = append(t.partial, buf[:k]...)
		return false
	}
	if err != nil {
		s.connFailed(c, err)
		return false
	}
	ts := s.readTime(c, realtimeNs)
	if len(data) == 0 {
		if k > 0 && c.gotBytes {
			s.fail(c, c.FailureText(errors.New("connection closed inside a TLS record")))
			return false
		}
		s.onEOF(c, ts)
		return false
	}
	s.health.Reads++
	s.turnBytes += len(data)
	s.stamped = realtimeNs != 0
	if s.stamped {
		s.health.StampedReads++
	}
	full := len(data) == len(buf)-k
	b := buf[:k+len(data)]
	for c.state == connBusy {
		n, err := splitRecord(b)
		if err != nil {
			s.fail(c, c.FailureText(err))
			return false
		}
		if n == 0 {
			break
		}
		typ, p, err := openRecord(&t.read, b[:n])
		b = b[n:]
		if err != nil {
			s.fail(c, c.FailureText(err))
			return false
		}
		switch typ {
		case tlsChangeSpec:
		case tlsHandshake:
			if err := t.handshakeMsgs(p); err != nil {
				s.fail(c, c.FailureText(err))
				return false
			}
		case tlsAlert:
			if err := alertError(p); err != errCloseNotify {
				s.connFailed(c, err)
				return false
			}
			s.onEOF(c, ts)
			return false
		case tlsAppData:
			if t.tc != nil {
				t.letGo()
			}
			if len(p) == 0 {
				continue
			}
			if !c.gotBytes {
				c.stream.FirstByte(ts)
				c.gotBytes = true
			}
			if ended, _ := s.deliver(c, p, ts, t.sent && len(b) == 0); ended {
				return false
			}
		default:
			s.fail(c, c.FailureText(errors.New("TLS: unexpected content type "+strconv.Itoa(int(typ)))))
			return false
		}
	}
	if c.state != connBusy {
		return false
	}
	if t.ticketed {
		t.letGo()
	}
	t.partial = append(t.partial[:0], b...)
	if len(t.out) > 0 {
		s.writeTLS(c)
	}
	return full || c.hungUp
}
