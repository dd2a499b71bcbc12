package shard

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/stampede-bench/stampede/internal/tls13"
)

// TLS connections on the shard loops (Config.TLS). The loop connects a
// new connection's socket as it does a plain one, and a handshaker
// goroutine runs crypto/tls's handshake over it, the loop reading for it
// (tlshandshake.go); the two traffic keys then come to the shard, and the
// connection lives on the loop like any other. From there on the loop
// reads ciphertext with the same recvmsg (kernel stamps included), opens
// each record in place in its one read buffer with the server's key and
// feeds the plaintext to the connection's Response, and seals the requests with the client's key and
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
	raw      *recordGate // tc's transport's, to feed it records
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
	return feedTLS(t.tc, t.raw, rec)
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
func (t *loopTLS) takeTickets(tc *tls.Conn, raw *recordGate) {
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

// startTLS begins request req on c, a new connection whose connect the
// loop started (its stream begun): the handshake starts once c is
// connected. Until then the connect's own deadline stands.
func (s *Shard) startTLS(c *conn, req *Request) {
	c.beginRequest(req)
	s.newDial(c)
	if c.state == connBusy {
		// Connected inside connect(2).
		s.handshake(c, s.cfg.Clock.Now())
		return
	}
	s.timers.set(c, min(c.stream.StartNs()+int64(s.cfg.RequestTimeout), s.cfg.Clock.Now()+int64(s.cfg.ConnectTimeout)))
}

// newDial readies the handshake of c, a new connection.
func (s *Shard) newDial(c *conn) {
	c.dial = &tlsDial{s: s, c: c, fd: -1, p: newHSPipe(c.fd, s.remote)}
}

// handshake hands connected c to the handshakers.
func (s *Shard) handshake(c *conn, nowNs int64) {
	s.established(c, nowNs)
	s.submitHandshake(c)
}

func (s *Shard) submitHandshake(c *conn) {
	c.state = connHandshaking
	d := c.dial
	d.fd = c.fd
	handshakers.submit(d)
}

// feedHandshake reads what c's socket holds into its handshake's pipe: one
// read per edge, and more only after a read that filled the buffer or
// once the peer hung up (see onReadable).
func (s *Shard) feedHandshake(c *conn) {
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
		lt.takeTickets(d.tc, &d.p.recordGate)
	}
	c.tls, c.state = lt, connBusy
	if s.cfg.KernelTimestamps {
		c.txStamps, c.sentBytes = enableTxTimestampsFromNow(c.fd), 0
	}
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
	c.stream.Handshaken(d.hs.EndNs)
	raw, err := s.handOff(c, &d.reads, &d.stamped)
	if err != nil {
		d.discard()
		s.fail(c, "TLS with "+s.cfg.Addr.String()+": "+err.Error())
		return
	}
	rest, _, _ := d.p.rest()
	raw.pre = rest
	d.raw, d.p.raw = raw, raw
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
		c.sentBytes += uint32(m)
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
// the shard's read buffer behind the partial record c kept from before
// (see openRecords). It reports whether more may be waiting that no event
// will report (see readOnce).
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
	if len(data) == 0 {
		if k > 0 && c.gotBytes {
			s.fail(c, c.FailureText(errors.New("connection closed inside a TLS record")))
			return false
		}
		s.onEOF(c, s.readTime(c, realtimeNs))
		return false
	}
	s.health.Reads++
	s.turnBytes += len(data)
	s.stamped = realtimeNs != 0
	if s.stamped {
		s.health.StampedReads++
	}
	s.openRecords(c, buf[:k+len(data)], realtimeNs, nil)
	return c.state != connClosed && (len(data) == len(buf)-k || c.hungUp)
}

// openRecords opens the whole records in b, all read by the read stamped
// realtimeNs (0: none): application data goes to the Response with the
// read's time, handshake messages to handshakeMsgs; c keeps the partial
// record at the end for the next read. end, when not nil, is the
// socket's end or error, read after b.
func (s *Shard) openRecords(c *conn, b []byte, realtimeNs int64, end error) {
	t := c.tls
	ts := s.readTime(c, realtimeNs)
	for c.state == connBusy {
		n, err := splitRecord(b)
		if err != nil {
			s.fail(c, c.FailureText(err))
			return
		}
		if n == 0 {
			break
		}
		typ, p, err := openRecord(&t.read, b[:n])
		b = b[n:]
		if err != nil {
			s.fail(c, c.FailureText(err))
			return
		}
		switch typ {
		case tlsChangeSpec:
		case tlsHandshake:
			if err := t.handshakeMsgs(p); err != nil {
				s.fail(c, c.FailureText(err))
				return
			}
		case tlsAlert:
			if err := alertError(p); err != errCloseNotify {
				s.connFailed(c, err)
				return
			}
			s.onEOF(c, ts)
			return
		case tlsAppData:
			if t.tc != nil {
				t.letGo()
			}
			if len(p) == 0 {
				continue
			}
			if !c.gotBytes {
				if c.txPending {
					s.readTxStamps(c)
				}
				c.stream.FirstByte(ts)
				c.gotBytes = true
			}
			// A response that ended leaves c idle (or closed), which ends
			// the loop; records after it are seen to below.
			s.deliver(c, p, ts, t.sent)
		default:
			s.fail(c, c.FailureText(errors.New("TLS: unexpected content type "+strconv.Itoa(int(typ)))))
			return
		}
	}
	if c.state == connIdle && len(b) > 0 && !t.openIdle(b) {
		// The response ended, and what came after it in the same read was
		// not what a server may send between requests.
		s.lost++
		s.closeConn(c)
	}
	if c.state != connBusy {
		return
	}
	if t.ticketed {
		t.letGo()
	}
	t.partial = append(t.partial[:0], b...)
	if len(t.out) > 0 {
		s.writeTLS(c)
	}
	switch {
	case c.state != connBusy || end == nil:
	case end != io.EOF:
		s.connFailed(c, end)
	case len(t.partial) > 0 && c.gotBytes:
		s.fail(c, c.FailureText(errors.New("connection closed inside a TLS record")))
	default:
		s.onEOF(c, ts)
	}
}

// idleTLS reads what waits on idle connection c and opens its whole
// records (see openIdle): false when the socket ended or failed, or a
// record was not one a server may send between requests.
func (s *Shard) idleTLS(c *conn) bool {
	t := c.tls
	buf := s.rx.buf
	for {
		k := copy(buf, t.partial)
		data, realtimeNs, err := s.rx.recvInto(c.fd, buf[k:])
		switch {
		case err == errWouldBlock:
			return true
		case err != nil || len(data) == 0:
			return false
		}
		s.health.Reads++
		if realtimeNs != 0 {
			s.health.StampedReads++
		}
		if !t.openIdle(buf[:k+len(data)]) {
			return false
		}
		if len(data) < len(buf)-k {
			return true
		}
	}
}

// openIdle opens the whole records in b on a connection between requests:
// handshake messages (session tickets, a KeyUpdate) are taken as on a busy
// connection, a ChangeCipherSpec is passed over, and anything else (data,
// an alert) makes it report false. A partial record at the end stays for
// the next read.
func (t *loopTLS) openIdle(b []byte) bool {
	for {
		n, err := splitRecord(b)
		if err != nil {
			return false
		}
		if n == 0 {
			break
		}
		typ, p, err := openRecord(&t.read, b[:n])
		b = b[n:]
		switch {
		case err != nil:
			return false
		case typ == tlsChangeSpec:
		case typ != tlsHandshake || t.handshakeMsgs(p) != nil:
			return false
		}
	}
	if t.ticketed {
		t.letGo()
	}
	t.partial = append(t.partial[:0], b...)
	return true
}
