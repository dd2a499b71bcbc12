package shard

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A TLS connection's way onto a shard loop (Config.TLS). The loop
// connects a new connection's socket as it does a plain one, and a
// handshaker goroutine runs crypto/tls's handshake over it, the loop
// reading for it (tlshandshake.go); the two traffic keys then come to the
// shard, and the connection lives on the loop like any other
// (tlsloop.go). crypto/tls keeps the connection's tls.Conn only to take
// the server's session tickets into the session cache (tls13.Records
// hands them over). Only TLS 1.3 (AES-GCM or ChaCha20-Poly1305) can run
// there; probeTLS tells Start beforehand whether a server negotiates it.
// A connection that negotiates anything else all the same (a load
// balancer whose backends differ) carries its request as on the fallback
// transport (tls.go): crypto/tls reads it on a goroutine of its own,
// through the same parsers, with the raw socket's kernel stamps, and the
// shard records the outcome (see fallBack; Health.TLSFallbacks counts
// them). Such a connection carries that one request and closes.

// tlsState is a shard's part in its TLS connections' handshakes.
type tlsState struct {
	// The server's address for crypto/tls, the connections away from the
	// loop (fallen back to crypto/tls on a goroutine), the handshakes done
	// and not yet taken by the loop (hsDone, under hsMu; hsSpare is the
	// other half of the double buffer), and the buffer requests are
	// sealed in.
	remote    net.Addr
	away      []*conn
	hsMu      sync.Mutex
	hsDone    []*tlsDial
	hsSpare   []*tlsDial
	hsClosed  bool
	hsPending atomic.Bool
	seal      []byte
	// warmTook counts the warm-up's handshakes that ended, warmOpened
	// those that left an idle connection; warmFailed: one did not.
	warmTook, warmOpened int
	warmFailed           bool
	// The loop's own resumed handshakes (tlsown.go).
	ownState
}

// initTLS readies a new shard for TLS connections.
func (s *Shard) initTLS() {
	s.health.TLSPath = TLSPathLoop + "; " + ktlsNote()
	s.remote = net.TCPAddrFromAddrPort(s.cfg.Addr)
	s.initOwn()
}

// maxHandshakers bounds the handshaker goroutines: each holds a deep
// stack, and many are in flight only while they wait for a far server (at
// most handshakeCPU's tokens compute at once).
const maxHandshakers = 64

// probeRun is probeTLS for a run's connections, whose configuration cfg
// it may change: with defaults (the key exchanges not chosen by the user)
// it probes offering P-256 alone first, and keeps that offer when the
// server takes it (see p256Only). A probe that could not connect, ran out
// of time or was cancelled is not tried again with the other offer: the
// offer was not what failed, and a second try would double the wait.
// Cancelling ctx ends the probe.
func probeRun(ctx context.Context, addr string, cfg *tls.Config, defaults bool, timeout time.Duration) (ok bool, why string) {
	if defaults {
		p256 := cfg.Clone()
		p256.CurvePreferences = p256Only
		ok, why, err := probeTLS(ctx, addr, p256, timeout)
		switch {
		case err == nil:
			cfg.CurvePreferences = p256Only
			return ok, why
		case ctx.Err() != nil || isTimeout(err) || isDialError(err):
			return true, err.Error()
		}
	}
	ok, why, err := probeTLS(ctx, addr, cfg, timeout)
	if err != nil {
		// A connection or handshake that fails says nothing: the run's
		// own connections will fail the same way.
		return true, err.Error()
	}
	return ok, why
}

// isDialError reports whether err is a connect's failure.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// probeTLS makes one connection and handshake with addr (without the
// session cache of cfg) and reports whether the server negotiates what the
// shard loops can carry (TLS 1.3), and if not, what it chose; err is a
// connection or handshake that failed, within timeout for the two
// together, or that ctx cancelled.
func probeTLS(ctx context.Context, addr string, cfg *tls.Config, timeout time.Duration) (ok bool, why string, err error) {
	cfg = cfg.Clone()
	cfg.ClientSessionCache = nil
	keys := &keyLog{}
	cfg.KeyLogWriter = keys
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, "", err
	}
	defer nc.Close()
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return false, "", err
	}
	cs := tc.ConnectionState()
	if _, err := newLoopTLS(cs.Version, cs.CipherSuite, keys); err != nil {
		return false, err.Error(), nil
	}
	return true, "", nil
}

// startTLS begins request req on c, a new connection whose connect the
// loop started (its stream begun): the handshake starts once c is
// connected. The connect timeout covers the connect and the handshake
// together: until the handshake is done, the deadline is the connect's
// start plus Config.ConnectTimeout (or the request's, if sooner), and a
// handshake still in progress then fails the request as a connect failure
// (errHandshakeTimeout), whatever the server does meanwhile.
func (s *Shard) startTLS(c *conn, req *Request) { s.startTLSWith(c, req, false) }

// startTLSWith is startTLS; noOwn leaves the handshake to crypto/tls even
// when the shard has a ticket (a connection that redoes one the server
// did not take).
func (s *Shard) startTLSWith(c *conn, req *Request, noOwn bool) {
	c.beginRequest(req)
	s.newDial(c)
	c.dial.noOwn = noOwn
	c.dial.connectByNs = s.cfg.Clock.Now() + int64(s.cfg.ConnectTimeout)
	if c.state == connBusy {
		// Connected inside connect(2).
		s.handshake(c, s.cfg.Clock.Now())
		return
	}
	s.timers.set(c, min(c.stream.StartNs()+int64(s.cfg.RequestTimeout), c.dial.connectByNs))
}

// errHandshakeTimeout is why a request whose connection's handshake did
// not end within the connect timeout failed.
func errHandshakeTimeout(timeout time.Duration) error {
	return errors.New("TLS handshake timed out after " + timeout.String())
}

// handshaken gives c, whose handshake is done, the request's own deadline
// in place of the connect's.
func (s *Shard) handshaken(c *conn) {
	s.timers.set(c, c.stream.StartNs()+int64(s.cfg.RequestTimeout))
}

// newDial readies the handshake of c, a new connection.
func (s *Shard) newDial(c *conn) {
	c.dial = &tlsDial{s: s, c: c, fd: -1}
}

// handshake starts connected c's handshake: the loop's own when it can
// resume (ownHello), else on the handshakers.
func (s *Shard) handshake(c *conn, nowNs int64) {
	s.established(c, nowNs)
	s.timers.set(c, min(c.deadlineNs, c.dial.connectByNs))
	if s.ownHello(c, nowNs) {
		return
	}
	s.submitHandshake(c)
}

func (s *Shard) submitHandshake(c *conn) {
	c.state = connHandshaking
	d := c.dial
	d.fd = c.fd
	d.p = newHSPipe(c.fd, s.remote)
	handshakers.submit(d)
}

// feedHandshake reads what c's socket holds into its handshake's pipe: one
// read per edge, and more only after a read that filled the buffer or
// once the peer hung up (see onReadable).
func (s *Shard) feedHandshake(c *conn) {
	if c.dial.own != nil {
		s.ownRead(c)
		return
	}
	if c.dial.waiting {
		// Nothing was sent: what the server says (its close) is read
		// when the handshake begins.
		return
	}
	p := c.dial.p
	for !p.ended() {
		data, realtimeNs, err := s.rx.recv(c.fd)
		switch {
		case err == errWouldBlock:
			return
		case err != nil:
			p.end(err)
			return
		case len(data) == 0:
			p.end(io.EOF)
			return
		}
		s.health.Reads++
		if realtimeNs != 0 {
			s.health.StampedReads++
		}
		s.turnBytes += len(data)
		if !p.put(data, realtimeNs) {
			p.end(errors.New("more than " + strconv.Itoa(maxHandshakeBytes>>10) + " KB from the server before the handshake ended"))
			return
		}
		if len(data) < len(s.rx.buf) && !c.hungUp {
			return
		}
	}
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
	// One wake-up for the handshakes done since the loop last took them:
	// a loop that saw the first one's takes them all (takeHandshakes runs
	// after every turn's events). Under the lock: closeAll closes the
	// eventfd only after hsClosed.
	if !s.hsPending.Swap(true) {
		s.wake.signal()
	}
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
	if d.served {
		s.tookFallback(d)
		return
	}
	h := &s.health
	if d.handshook {
		h.TLSHandshakes++
		h.TLSHandshakeCPU += d.hs.CPU
		h.TLSHandshakeTime += time.Duration(d.hs.EndNs - d.hs.StartNs)
	}
	if d.hs.Resumed {
		h.TLSResumed++
	}
	c := d.c
	if c.state != connHandshaking || c.dial != d {
		// The request ended meanwhile (its deadline, an abort).
		d.discard()
		return
	}
	// The socket is the loop's alone again.
	c.dial, d.fd = nil, -1
	if c.req == nil {
		s.tookWarm(c, d)
		return
	}
	if d.failure != "" {
		s.fail(c, d.failure)
		return
	}
	if d.fallback {
		s.fallBack(c, d)
		return
	}
	rest, stampNs, end, err := s.toLoop(c, d)
	if err != nil {
		s.fail(c, "TLS with "+s.cfg.Addr.String()+": "+err.Error())
		return
	}
	c.stream.Handshaken(d.hs.EndNs)
	s.handshaken(c)
	s.writeRequest(c)
	if c.state == connBusy && (len(rest) > 0 || end != nil) {
		// Records that came after the handshake's (session tickets), read
		// before the loop took the connection: no event reports them again.
		s.openRecords(c, rest, stampNs, end)
	}
}

// toLoop makes c, whose handshake d completed, a connection of the loop's
// record layer, busy. It returns what the handshake left in its pipe: the
// bytes after its last record, their read's stamp, and the socket's end
// if it came.
func (s *Shard) toLoop(c *conn, d *tlsDial) (rest []byte, stampNs int64, end, err error) {
	lt, err := newLoopTLS(d.version, d.suite, d.keys)
	if err != nil {
		return nil, 0, nil, err
	}
	if d.tc != nil {
		lt.records.TakeTickets(d.tc, &d.p.Gate)
	}
	c.tls, c.state = lt, connBusy
	if s.cfg.KernelTimestamps {
		c.txStamps, c.sentBytes = enableTxTimestampsFromNow(c.fd), 0
	}
	lt.out, d.p.unsent = d.p.unsent, nil
	rest, stampNs, end = d.p.rest()
	d.tc, d.keys = nil, nil
	return rest, stampNs, end, nil
}

// tookWarm ends the handshake of a warm-up's connection (see warm): it
// joins the idle pool, or it closes when it cannot carry requests on the
// loop (a failure, TLS 1.2, the server's end or data).
func (s *Shard) tookWarm(c *conn, d *tlsDial) {
	s.warmTook++
	ok := d.failure == "" && !d.fallback
	if ok {
		rest, _, end, err := s.toLoop(c, d)
		ok = err == nil && end == nil && c.tls.openIdle(rest)
		if t := c.tls; ok && len(t.out) > 0 {
			// The Finished goes now: an idle connection may wait long.
			// What the socket does not take goes before the next request.
			_, err := s.sendTLS(c, t.out, true)
			ok = err == nil
		}
	}
	if !ok {
		s.health.Warm.Failed++
		s.warmFailed = true
		d.discard()
		s.closeConn(c)
		return
	}
	s.warmOpened++
	s.putIdle(c)
}

// fallBack starts c's request on d's connection, which negotiated what the
// loop cannot carry: the socket leaves the loop for the runtime's poller,
// and serve runs the request on a goroutine of its own, as the fallback
// transport would, with a copy of c's stream. Meanwhile c stays on the
// shard's list of connections away, so that its deadline, an abort or the
// shard's end fail it (on c's stream, whose buffers, empty there, the loop
// reads no further) and cancel d, which interrupts serve.
func (s *Shard) fallBack(c *conn, d *tlsDial) {
	s.health.TLSFallbacks++
	if c == s.ticketConn {
		// Its tickets are TLS 1.2's, none for the loop.
		s.ticketConn = nil
	}
	c.stream.Handshaken(d.hs.EndNs)
	s.handshaken(c)
	raw, err := s.handOff(c, &d.reads, &d.stamped)
	if err != nil {
		d.discard()
		s.fail(c, "TLS with "+s.cfg.Addr.String()+": "+err.Error())
		return
	}
	rest, _, _ := d.p.rest()
	raw.pre = rest
	d.raw, d.p.raw = raw, raw
	if len(d.p.unsent) > 0 {
		// The handshake's last flight, before the request.
		if _, err := raw.Write(d.p.unsent); err != nil {
			d.discard()
			s.fail(c, "TLS with "+s.cfg.Addr.String()+": "+err.Error())
			return
		}
		d.p.unsent = nil
	}
	d.deadline = s.cfg.Clock.Base().Add(time.Duration(c.stream.StartNs()) + s.cfg.RequestTimeout)
	d.cl = NewClient(&s.cfg, nil, nil)
	d.cl.c.stream = c.stream
	c.state, c.dial, c.hsIndex = connHandshaking, d, len(s.away)
	s.away = append(s.away, c)
	go d.serve(c.req)
}

// handOff takes c's socket off the loop and gives it to the runtime's
// poller, as a stampedConn counting its reads in reads and stamped.
func (s *Shard) handOff(c *conn, reads, stamped *atomic.Int64) (*stampedConn, error) {
	fd := c.fd
	s.poll.del(fd)
	s.conns[fd] = nil
	c.fd = -1
	f := os.NewFile(uintptr(fd), "")
	nc, err := net.FileConn(f) // a descriptor of its own
	f.Close()
	if err != nil {
		return nil, err
	}
	raw, err := newStampedConn(nc.(*net.TCPConn), s.cfg.KernelTimestamps, reads, stamped)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return raw, nil
}

// tookFallback records the outcome of a request serve carried, unless the
// loop ended it meanwhile.
func (s *Shard) tookFallback(d *tlsDial) {
	h := &s.health
	h.Reads += d.reads.Swap(0)
	h.StampedReads += d.stamped.Swap(0)
	c, cl := d.c, d.cl
	if c.state != connHandshaking || c.dial != d {
		d.discard()
		return
	}
	s.forgetAway(c)
	if d.ok {
		cl.c.End(s.cfg.Recorder, &s.json, c.req.NumInputSequences)
	} else {
		s.cfg.Recorder.Fail(&cl.c.stream, d.text)
	}
	d.discard()
	s.release(c)
	s.closeConn(c)
}

// forgetAway takes c off the list of connections away from the loop.
func (s *Shard) forgetAway(c *conn) {
	last := len(s.away) - 1
	moved := s.away[last]
	s.away[c.hsIndex] = moved
	moved.hsIndex = c.hsIndex
	s.away[last] = nil
	s.away = s.away[:last]
	c.dial, c.hsIndex = nil, -1
}

// stopHandshakes cancels the requests away from the loop and discards the
// handshakes' results not taken; later ones are discarded as they come.
// (closeAll cancelled the handshakes in progress already.)
func (s *Shard) stopHandshakes() {
	for _, c := range s.away {
		c.dial.cancel()
		c.state = connClosed
	}
	s.away = nil
	s.hsMu.Lock()
	s.hsClosed = true
	for _, d := range s.hsDone {
		d.discard()
	}
	s.hsDone = nil
	s.hsMu.Unlock()
}
