package tls13

import (
	"crypto/tls"
	"errors"
	"strconv"
)

// RecordLayer is what a transport that reads and writes a TLS 1.3
// connection's socket itself (a shard loop) asks of TLS once crypto/tls
// has done the handshake. Records is the one implementation; the
// interface is the contract between the two sides.
type RecordLayer interface {
	// Open opens the first whole record of b in place: n is its length (0
	// with no error: b holds no whole record yet), typ its content type,
	// data the plaintext of application data. Handshake messages are
	// taken here (session tickets, a KeyUpdate); an alert comes back as
	// TypeAlert with its error (ErrCloseNotify for the peer's end).
	Open(b []byte) (n int, typ byte, data []byte, err error)
	// AppendReply appends to dst the records the peer asked for (the
	// answer to a KeyUpdate that requested one) and forgets them.
	AppendReply(dst []byte) []byte
	// Seal appends p to dst as application data records; last says p
	// ends what the transport will send for a while (the write key may
	// then let its cipher state go).
	Seal(dst, p []byte, last bool) ([]byte, error)
	// EndRead is told when the transport is done with one read's
	// records.
	EndRead()
}

var _ RecordLayer = (*Records)(nil)

// Records is one client connection's record layer after a handshake
// crypto/tls did: the two traffic keys, the server's read key warm (its
// cipher state ready for every record) and the client's write key cool
// between the requests it seals (16 or 32 key bytes; the cipher is built
// again for each). crypto/tls's tls.Conn may stay a while to take the
// server's session tickets into its session cache (TakeTickets): every
// ticket of the burst servers send right after the handshake (OpenSSL and
// rustls send two, one record each) is re-sealed as the record it expects
// and handed over through its transport's Gate, never touching the
// socket; it is let go at the end of the read that brought them, or at the
// first application data if no ticket came before it. A KeyUpdate moves
// the read key, and if the server asks, queues the client's own KeyUpdate
// (AppendReply) and moves the write key. The zero Records is not usable;
// Init makes one.
type Records struct {
	read, write Key
	// feed is the server's first traffic key, under which handshake
	// messages are re-sealed for tc (which never sees a KeyUpdate, so its
	// key never moves; its Seq counts the records tc has read). Cool but
	// while it seals.
	feed *Key
	tc   *tls.Conn // takes the session tickets; nil once they came
	gate *Gate     // tc's transport's, to feed it records
	// ticketed: tc took a ticket; it goes at the end of the read.
	ticketed bool
	reply    []byte
	// sink takes the server's tickets, on a connection whose handshake
	// was a Resumer's, with the resumption master secret res (see
	// TakeOwnTickets); nil from the first application data on.
	sink         TicketSink
	res          [48]byte
	resLen       uint8
	certNotAfter int64
}

// Carries says why a connection cannot have its records opened outside
// crypto/tls (nil if it can): only TLS 1.3, with both traffic secrets.
func Carries(version uint16, serverSecret, clientSecret []byte) error {
	if version != tls.VersionTLS13 {
		return errors.New("the server negotiated " + tls.VersionName(version) + ", not TLS 1.3")
	}
	if serverSecret == nil || clientSecret == nil {
		return errors.New("no traffic secrets in the key log")
	}
	return nil
}

// Init makes r the record layer of a connection whose handshake
// negotiated version and suite, with its first traffic secrets (from an
// NSS key log: SERVER_TRAFFIC_SECRET_0, CLIENT_TRAFFIC_SECRET_0); a
// connection Carries refuses is an error.
func (r *Records) Init(version, suite uint16, serverSecret, clientSecret []byte) error {
	if err := Carries(version, serverSecret, clientSecret); err != nil {
		return err
	}
	*r = Records{}
	if err := r.read.Init(suite, serverSecret); err != nil {
		return err
	}
	if err := r.read.Warm(); err != nil {
		return err
	}
	return r.write.Init(suite, clientSecret)
}

// TakeTickets makes r hand the server's session tickets to tc, whose
// transport reads through gate.
func (r *Records) TakeTickets(tc *tls.Conn, gate *Gate) {
	feed := r.read
	feed.Cool()
	r.tc, r.gate, r.feed = tc, gate, &feed
}

// TakeOwnTickets makes r turn the server's session tickets into Tickets
// for sink, with the connection's resumption master secret res: the
// connection's handshake was a Resumer's, and no tls.Conn is there to
// take them. Every ticket before the first application data goes to sink,
// in order, so the last of a burst stays (as in crypto/tls's cache); each
// keeps the certificate expiry of from, the ticket the handshake resumed.
func (r *Records) TakeOwnTickets(sink TicketSink, res []byte, from *Ticket) {
	r.sink, r.certNotAfter = sink, from.CertNotAfter
	r.resLen = uint8(copy(r.res[:], res))
}

// Open implements RecordLayer.
func (r *Records) Open(b []byte) (n int, typ byte, data []byte, err error) {
	n, err = Split(b)
	if n == 0 || err != nil {
		return 0, 0, nil, err
	}
	typ, p, err := Open(&r.read, b[:n])
	if err != nil {
		return n, 0, nil, err
	}
	switch typ {
	case TypeChangeCipherSpec:
	case TypeHandshake:
		err = r.handshakeMsgs(p)
	case TypeAlert:
		err = Alert(p)
	case TypeApplicationData:
		if r.tc != nil {
			r.letGo()
		}
		r.sink = nil
		data = p
	default:
		err = errors.New("TLS: unexpected content type " + strconv.Itoa(int(typ)))
	}
	return n, typ, data, err
}

// AppendReply implements RecordLayer.
func (r *Records) AppendReply(dst []byte) []byte {
	dst = append(dst, r.reply...)
	r.reply = r.reply[:0]
	return dst
}

// Seal implements RecordLayer.
func (r *Records) Seal(dst, p []byte, last bool) ([]byte, error) {
	if err := r.write.Warm(); err != nil {
		return dst, err
	}
	for len(p) > 0 {
		m := min(len(p), MaxPlaintext)
		dst = Seal(dst, &r.write, TypeApplicationData, p[:m])
		p = p[m:]
	}
	if last {
		r.write.Cool()
	}
	return dst, nil
}

// EndRead implements RecordLayer: a tls.Conn that took a ticket in the
// read goes.
func (r *Records) EndRead() {
	if r.ticketed {
		r.letGo()
	}
}

// handshakeMsgs handles the post-handshake messages of one record:
// session tickets go to crypto/tls while it is there, a KeyUpdate moves
// the read key and, when the server asks, queues the client's own
// KeyUpdate and moves the write key.
func (r *Records) handshakeMsgs(msg []byte) error {
	at, found, requested, err := FindKeyUpdate(msg)
	if err != nil {
		return err
	}
	if at > 0 && r.sink != nil {
		r.ownTicket(msg[:at])
	}
	if at > 0 && r.tc != nil {
		// A failed hand-over costs only resumption: the tls.Conn goes.
		if r.handOver(msg[:at]) != nil {
			r.letGo()
		} else {
			r.ticketed = true
		}
	}
	if !found {
		return nil
	}
	if err := r.read.Update(); err != nil {
		return err
	}
	if !requested {
		return nil
	}
	cool := r.write.AEAD == nil
	if err := r.write.Warm(); err != nil {
		return err
	}
	r.reply = Seal(r.reply, &r.write, TypeHandshake, []byte{MsgKeyUpdate, 0, 0, 1, 0})
	if cool {
		r.write.Cool()
	}
	return r.write.Update()
}

// ownTicket hands the NewSessionTickets among msgs to r.sink. A ticket
// that does not parse costs only a later resumption.
func (r *Records) ownTicket(msgs []byte) {
	for len(msgs) >= 4 {
		n := 4 + (int(msgs[1])<<16 | int(msgs[2])<<8 | int(msgs[3]))
		if n > len(msgs) {
			return
		}
		if msgs[0] == msgNewSessionTicket {
			if t, err := parseNewSessionTicket(msgs[4:n], r.read.suite, r.res[:r.resLen], nowMs(), r.certNotAfter); err == nil {
				r.sink.PutTicket(t)
			}
		}
		msgs = msgs[n:]
	}
}

// msgNewSessionTicket is the NewSessionTicket handshake message's type.
const msgNewSessionTicket = 4

// letGo drops the tls.Conn, its buffers and the key that fed it: the
// server's tickets came, or its first response began (servers send their
// tickets right after the handshake).
func (r *Records) letGo() {
	r.tc, r.gate, r.feed, r.ticketed = nil, nil, nil, false
}

// handOver hands handshake messages to crypto/tls, sealed as the record it
// expects next.
func (r *Records) handOver(msg []byte) error {
	if err := r.feed.Warm(); err != nil {
		return err
	}
	rec := Seal(nil, r.feed, TypeHandshake, msg)
	r.feed.Cool()
	return Feed(r.tc, r.gate, rec)
}
