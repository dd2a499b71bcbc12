package shard

import (
	"errors"
	"io"

	"github.com/stampede-bench/stampede/internal/tls13"
)

// TLS connections on the shard loops (Config.TLS), once their handshake
// is done (tlsdial.go): the loop reads ciphertext with the same recvmsg
// (kernel stamps included), has the connection's record layer
// (tls13.Records) open each record in place in its one read buffer and
// feeds the plaintext to the connection's Response; it has the requests
// sealed with the client's key and writes them itself. What a record
// means (session tickets, KeyUpdate, alerts) is the record layer's; what
// this file keeps is the socket's side: the partial record a read left,
// sealed bytes the socket did not take, and when a request counts as
// sent.
//
// Memory: a connection that takes tickets (every full handshake, one
// resumed in ticketEvery) holds its tls.Conn until the server's tickets
// (or its first response record); the others let it go when the handshake
// ends. From then on only the two keys, inside loopTLS's record layer,
// the read key warm and the write key cool.

// sealBatch is how much of a request the loop seals per write.
const sealBatch = 4 * tls13.MaxPlaintext

// loopTLS is one TLS connection on a shard loop.
type loopTLS struct {
	records tls13.Records
	// partial holds the start of a record a read did not complete.
	partial []byte
	// out holds sealed bytes not written yet: the handshake's last flight
	// (the client's Finished), which goes in front of the request's first
	// record (see hsPipe.Write), a KeyUpdate's answer, and what a write
	// left when the socket's buffer was full.
	out []byte
	// sent: the request's last byte was written.
	sent bool
}

// unsent reports whether t (nil on a plain connection) holds sealed
// bytes the socket did not take yet.
func (t *loopTLS) unsent() bool { return t != nil && len(t.out) > 0 }

// newLoopTLS takes the traffic keys of a TLS 1.3 connection from its key
// log; any other connection cannot run on a loop.
func newLoopTLS(version, suite uint16, keys *keyLog) (*loopTLS, error) {
	t := &loopTLS{}
	if err := t.records.Init(version, suite, keys.server, keys.client); err != nil {
		return nil, err
	}
	return t, nil
}

// writeTLS writes what t.out holds and seals and writes what is left of
// c's request (if any) behind it, in one write per batch; when the send
// buffer is full, EPOLLOUT brings the loop back.
func (s *Shard) writeTLS(c *conn) {
	t := c.tls
	for {
		pending, fromOut := t.out, true
		if c.req != nil && c.written < len(c.req.Wire) {
			n := min(len(c.req.Wire)-c.written, sealBatch)
			last := c.written+n == len(c.req.Wire)
			var err error
			s.seal = append(s.seal[:0], t.out...)
			t.out = t.out[:0]
			if s.seal, err = t.records.Seal(s.seal, c.req.Wire[c.written:c.written+n], last); err != nil {
				s.fail(c, c.FailureText(err))
				return
			}
			c.written += n
			pending, fromOut = s.seal, false
		}
		if len(pending) == 0 {
			return
		}
		m, err := s.sendTLS(c, pending, fromOut)
		if err != nil {
			s.connFailed(c, err)
			return
		}
		if c.req != nil && !t.sent && c.written == len(c.req.Wire) && len(t.out) == 0 {
			t.sent = true
			s.requestSent(c)
		}
		if m < len(pending) {
			return
		}
	}
}

// sendTLS writes pending, which is t.out itself (fromOut) or bytes
// sealed behind what t.out held, and keeps in t.out what the socket did
// not take.
func (s *Shard) sendTLS(c *conn, pending []byte, fromOut bool) (int, error) {
	t := c.tls
	m, err := write(c.fd, pending)
	if err != nil {
		return 0, err
	}
	c.sentBytes += uint32(m)
	if fromOut {
		t.out = t.out[:copy(t.out, t.out[m:])]
	} else if m < len(pending) {
		t.out = append(t.out[:0], pending[m:]...)
	}
	return m, nil
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
		n, typ, p, err := t.records.Open(b)
		if n == 0 && err == nil {
			break
		}
		b = b[n:]
		switch {
		case typ == tls13.TypeAlert:
			if err != tls13.ErrCloseNotify {
				s.connFailed(c, err)
				return
			}
			s.onEOF(c, ts)
			return
		case err != nil:
			s.fail(c, c.FailureText(err))
			return
		case typ == tls13.TypeHandshake:
			t.out = t.records.AppendReply(t.out)
		case typ != tls13.TypeApplicationData || len(p) == 0:
		default:
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
	t.records.EndRead()
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
		n, typ, _, err := t.records.Open(b)
		switch {
		case err != nil:
			return false
		case n == 0:
			t.records.EndRead()
			t.partial = append(t.partial[:0], b...)
			return true
		case typ == tls13.TypeHandshake:
			t.out = t.records.AppendReply(t.out)
		case typ != tls13.TypeChangeCipherSpec:
			return false
		}
		b = b[n:]
	}
}
