package tls13

import (
	"crypto/ecdh"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"hash"
	"math"
	"net/netip"
)

// A client's resumed TLS 1.3 handshake (RFC 8446 §2.2, psk_dhe_ke), for a
// transport that runs it on its own thread rather than through crypto/tls:
// one ClientHello offering one ticket and one key share, the server's
// ServerHello, EncryptedExtensions and Finished (verified), and the
// client's Finished; then the traffic secrets go to a Records. Anything
// else the server answers (a HelloRetryRequest, a full handshake because
// it declined the ticket, TLS 1.2, an alert) ends the attempt with an
// error before the client said anything it cannot take back: the caller
// closes the connection and does it again through crypto/tls. The server's
// certificate was verified by the full handshake (crypto/tls's) that
// issued the first ticket; a PSK handshake authenticates the server by
// its knowledge of the PSK, proven by its Finished.

// HelloConfig is what a resumed ClientHello offers, fixed for a run:
// the server name (none for an IP address), the ALPN protocols, the key
// exchange group.
type HelloConfig struct {
	ServerName string
	ALPN       []string
	Group      tls.CurveID
}

// NewHelloConfig is the resumed ClientHello of connections made with c,
// or an error saying why c's connections need crypto/tls: a key exchange
// other than X25519 or P-256 first in its preferences, no TLS 1.3, hooks
// that crypto/tls runs on every handshake (VerifyConnection), Encrypted
// Client Hello, or a key log.
func NewHelloConfig(c *tls.Config) (HelloConfig, error) {
	h := HelloConfig{ALPN: c.NextProtos}
	if len(c.CurvePreferences) == 0 {
		return h, helloError("no key exchange configured")
	}
	switch g := c.CurvePreferences[0]; g {
	case tls.X25519, tls.CurveP256:
		h.Group = g
	default:
		return h, helloError("key exchange " + g.String() + " is crypto/tls's alone")
	}
	switch {
	case c.MaxVersion != 0 && c.MaxVersion < tls.VersionTLS13:
		return h, helloError("TLS 1.3 not enabled")
	case c.VerifyConnection != nil:
		return h, helloError("a VerifyConnection hook")
	case len(c.EncryptedClientHelloConfigList) > 0:
		return h, helloError("Encrypted Client Hello")
	case c.KeyLogWriter != nil:
		return h, helloError("a key log")
	case c.SessionTicketsDisabled:
		return h, helloError("session tickets disabled")
	}
	if _, err := netip.ParseAddr(c.ServerName); err != nil {
		h.ServerName = c.ServerName
	}
	if len(h.ServerName) > 255 {
		return h, helloError("server name over 255 bytes")
	}
	alpn := 0
	for _, p := range h.ALPN {
		if len(p) == 0 || len(p) > 255 {
			return h, helloError("an ALPN protocol of " + itoa(len(p)) + " bytes")
		}
		alpn += 1 + len(p)
	}
	if alpn > 1024 {
		return h, helloError("ALPN protocols over 1 KB")
	}
	return h, nil
}

type helloError string

func (e helloError) Error() string { return "own resumption off: " + string(e) }

// ResumeError is why a resumed handshake was abandoned; its text is a
// constant, so counting reasons allocates nothing.
type ResumeError string

func (e ResumeError) Error() string { return string(e) }

// The reasons a resumed handshake is abandoned.
const (
	ErrHelloRetry     = ResumeError("HelloRetryRequest")
	ErrPSKDeclined    = ResumeError("ticket declined")
	ErrNotTLS13       = ResumeError("server did not negotiate TLS 1.3")
	ErrServerAlert    = ResumeError("server alert in the handshake")
	ErrBadServerHello = ResumeError("malformed or unexpected ServerHello")
	ErrBadFlight      = ResumeError("malformed or unexpected server handshake message")
	ErrBadFinished    = ResumeError("server Finished did not verify")
	ErrBadRecord      = ResumeError("handshake record did not open")
	ErrKeyExchange    = ResumeError("key exchange failed")
	ErrFlightTooLarge = ResumeError("server handshake flight over 16 KB")
	ErrTicketTooLarge = ResumeError("ticket too large for a ClientHello")
)

// The handshake's states.
const (
	stIdle uint8 = iota
	stServerHello
	stEncryptedExtensions
	stFinished
	stDone
)

// helloRetryRandom is the ServerHello random of a HelloRetryRequest (RFC
// 8446 §4.1.3).
var helloRetryRandom = [32]byte{
	0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
	0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
}

// emptyHash256 and emptyHash384 are the hashes of no bytes, the context
// of "derived" and "res binder".
var (
	emptyHash256 = sha256.Sum256(nil)
	emptyHash384 = sha512.Sum384(nil)
)

// sigAlgs is the signature_algorithms list a ClientHello offers (RFC 8446
// requires the extension; a PSK handshake signs nothing).
var sigAlgs = []uint16{0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601, 0x0807}

// maxFlight bounds the server's handshake messages a Resumer buffers.
const maxFlight = 16 << 10

// Resumer runs resumed handshakes, one at a time, with buffers it keeps
// from one to the next: Hello starts one, Read takes the server's
// records, Finished and Secrets end it. The zero Resumer is ready. Not
// safe for concurrent use.
type Resumer struct {
	state  uint8
	sha384 bool
	hsize  int
	suite  uint16
	cfg    *HelloConfig
	ticket *Ticket

	h256, h384 hash.Hash
	h          hash.Hash // the transcript: h256 or h384
	sum        [64]byte  // a transcript hash, taken from h

	priv *ecdh.PrivateKey

	hello []byte // the ClientHello record
	msgs  []byte // server handshake messages not yet taken

	// The key schedule (RFC 8446 §7.1), each secret of the suite's hash.
	early, hs, master           [48]byte
	clientHS, serverHS          [48]byte
	clientApp, serverApp, resMS [48]byte
	read, write                 Key // the handshake traffic keys
}

// Hello starts a handshake resuming t with cfg's offer and returns its
// ClientHello record, valid until the next Hello. nowMs is the wall clock
// in Unix milliseconds (the ticket's age).
func (r *Resumer) Hello(t *Ticket, cfg *HelloConfig, nowMs int64) ([]byte, error) {
	if err := suiteKnown(t.Suite, int(t.pskLen)); err != nil {
		return nil, err
	}
	if len(t.Label) > 0xffff-512 {
		return nil, ErrTicketTooLarge
	}
	r.state, r.cfg, r.ticket, r.suite = stServerHello, cfg, t, t.Suite
	r.sha384 = t.Suite == tls.TLS_AES_256_GCM_SHA384
	r.hsize = sha256.Size
	if r.sha384 {
		r.hsize = sha512.Size384
		if r.h384 == nil {
			r.h384 = sha512.New384()
		}
		r.h = r.h384
	} else {
		if r.h256 == nil {
			r.h256 = sha256.New()
		}
		r.h = r.h256
	}
	r.h.Reset()
	r.msgs = r.msgs[:0]
	curve := ecdh.P256()
	if cfg.Group == tls.X25519 {
		curve = ecdh.X25519()
	}
	var err error
	if r.priv, err = curve.GenerateKey(rand.Reader); err != nil {
		return nil, ErrKeyExchange
	}
	pub := r.priv.PublicKey().Bytes()

	b := append(r.hello[:0], TypeHandshake, 3, 1, 0, 0) // the record's length goes in last
	b = append(b, 1, 0, 0, 0)                           // ClientHello, its length last
	b = append(b, 3, 3)
	b = append(b, make([]byte, 32)...)
	rand.Read(b[len(b)-32:])
	b = append(b, 0)                                           // legacy_session_id: none
	b = append(b, 0, 2, byte(t.Suite>>8), byte(t.Suite), 1, 0) // the ticket's suite; no compression
	extAt := len(b)
	b = append(b, 0, 0)
	if name := cfg.ServerName; name != "" {
		b = appendU16(b, 0)
		b = appendU16(b, len(name)+5)
		b = appendU16(b, len(name)+3)
		b = append(b, 0)
		b = appendU16(b, len(name))
		b = append(b, name...)
	}
	b = append(b, 0, 43, 0, 3, 2, 3, 4) // supported_versions: TLS 1.3
	b = append(b, 0, 10, 0, 4, 0, 2, byte(cfg.Group>>8), byte(cfg.Group))
	b = appendU16(b, 51) // key_share
	b = appendU16(b, len(pub)+6)
	b = appendU16(b, len(pub)+4)
	b = append(b, byte(cfg.Group>>8), byte(cfg.Group))
	b = appendU16(b, len(pub))
	b = append(b, pub...)
	b = appendU16(b, 13)
	b = appendU16(b, 2*len(sigAlgs)+2)
	b = appendU16(b, 2*len(sigAlgs))
	for _, a := range sigAlgs {
		b = appendU16(b, int(a))
	}
	if len(cfg.ALPN) > 0 {
		n := 0
		for _, p := range cfg.ALPN {
			n += 1 + len(p)
		}
		b = appendU16(b, 16)
		b = appendU16(b, n+2)
		b = appendU16(b, n)
		for _, p := range cfg.ALPN {
			b = append(b, byte(len(p)))
			b = append(b, p...)
		}
	}
	b = append(b, 0, 45, 0, 2, 1, 1) // psk_key_exchange_modes: psk_dhe_ke
	// pre_shared_key, last (RFC 8446 §4.2.11): one identity, its binder.
	label := t.Label
	b = appendU16(b, 41)
	b = appendU16(b, 2+2+len(label)+4+2+1+r.hsize)
	b = appendU16(b, 2+len(label)+4)
	b = appendU16(b, len(label))
	b = append(b, label...)
	// The age in milliseconds, 0 for a ticket from a clock ahead of ours
	// (Usable allows a second of that), so it cannot wrap.
	age := min(max(nowMs-t.IssuedMs, 0), math.MaxUint32)
	b = binary.BigEndian.AppendUint32(b, uint32(age)+t.AgeAdd)
	binders := len(b)
	b = appendU16(b, 1+r.hsize)
	b = append(b, byte(r.hsize))
	b = append(b, make([]byte, r.hsize)...)
	putU16(b[extAt:], len(b)-extAt-2)
	putU16(b[3:], len(b)-HeaderLen)
	msgLen := len(b) - HeaderLen - 4
	b[HeaderLen+1], b[HeaderLen+2], b[HeaderLen+3] = byte(msgLen>>16), byte(msgLen>>8), byte(msgLen)
	if len(b)-HeaderLen > MaxPlaintext {
		return nil, ErrTicketTooLarge
	}
	r.hello = b

	// The binder: HMAC over the hello up to its binders (RFC 8446
	// §4.2.11.2), with the key from the early secret.
	var zeros [48]byte
	psk := t.PSK()
	hmacSum(&r.early, r.sha384, zeros[:r.hsize], psk)
	var binderKey, finishedKey, binder [48]byte
	expandLabelCtx(binderKey[:r.hsize], r.sha384, r.early[:r.hsize], "res binder", r.emptyHash())
	expandLabel(finishedKey[:r.hsize], r.sha384, binderKey[:r.hsize], "finished")
	r.h.Write(b[HeaderLen:binders])
	hmacSum(&binder, r.sha384, finishedKey[:r.hsize], r.transcript())
	copy(b[len(b)-r.hsize:], binder[:r.hsize])
	r.h.Write(b[binders:])
	return b, nil
}

// Read takes the whole records at the start of b, the server's side of the
// handshake: n is how many bytes it consumed (a partial record stays for
// the caller to complete), done that the server's Finished verified (the
// records after it, if any, are left in b[n:], under the traffic keys).
// Any error abandons the handshake.
func (r *Resumer) Read(b []byte) (n int, done bool, err error) {
	for r.state != stDone {
		size, err := Split(b[n:])
		if err != nil {
			return n, false, ErrBadRecord
		}
		if size == 0 {
			return n, false, nil
		}
		rec := b[n : n+size]
		n += size
		switch rec[0] {
		case TypeChangeCipherSpec:
			if r.state == stServerHello || size != HeaderLen+1 || rec[HeaderLen] != 1 {
				return n, false, ErrBadFlight
			}
			continue
		case TypeAlert:
			return n, false, ErrServerAlert
		case TypeHandshake:
			if r.state != stServerHello {
				return n, false, ErrBadFlight
			}
			err = r.take(rec[HeaderLen:])
		case TypeApplicationData:
			if r.state == stServerHello {
				return n, false, ErrBadFlight
			}
			typ, p, oerr := Open(&r.read, rec)
			switch {
			case oerr != nil:
				return n, false, ErrBadRecord
			case typ == TypeAlert:
				return n, false, ErrServerAlert
			case typ != TypeHandshake:
				return n, false, ErrBadFlight
			}
			err = r.take(p)
		default:
			return n, false, ErrBadRecord
		}
		if err != nil {
			return n, false, err
		}
		if (r.state == stEncryptedExtensions || r.state == stDone) && len(r.msgs) > 0 {
			// Keys change after the ServerHello and the Finished: no
			// message may share a record with them (RFC 8446 §5.1).
			return n, false, ErrBadFlight
		}
	}
	return n, true, nil
}

// take buffers handshake bytes and handles the whole messages among them.
func (r *Resumer) take(p []byte) error {
	if len(r.msgs)+len(p) > maxFlight {
		return ErrFlightTooLarge
	}
	r.msgs = append(r.msgs, p...)
	for len(r.msgs) >= 4 && r.state != stDone {
		size := 4 + (int(r.msgs[1])<<16 | int(r.msgs[2])<<8 | int(r.msgs[3]))
		if size > maxFlight {
			return ErrFlightTooLarge
		}
		if len(r.msgs) < size {
			return nil
		}
		msg := r.msgs[:size]
		var err error
		switch r.state {
		case stServerHello:
			err = r.serverHello(msg)
		case stEncryptedExtensions:
			err = r.encryptedExtensions(msg)
		case stFinished:
			err = r.finished(msg)
		}
		if err != nil {
			return err
		}
		r.msgs = r.msgs[:copy(r.msgs, r.msgs[size:])]
	}
	return nil
}

// serverHello checks the ServerHello (RFC 8446 §4.1.3): TLS 1.3, our
// suite, our group, our ticket; then the handshake keys.
func (r *Resumer) serverHello(msg []byte) error {
	if msg[0] != 2 {
		return ErrBadServerHello
	}
	p := reader{b: msg[4:], ok: true}
	legacy := p.u16()
	random := p.take(32)
	session := p.take(p.u8())
	suite := uint16(p.u16())
	comp := p.u8()
	exts := reader{b: p.take(p.u16()), ok: true}
	if !p.ok || len(p.b) != 0 || legacy != 0x0303 || comp != 0 {
		return ErrBadServerHello
	}
	if [32]byte(random) == helloRetryRandom {
		return ErrHelloRetry
	}
	version, group, pskSeen, pskIdentity := 0, 0, false, 0
	var share []byte
	// Each extension at most once, and only those a ServerHello answers
	// the hello with (RFC 8446 §4.2).
	var seen uint8
	for len(exts.b) > 0 && exts.ok {
		typ := exts.u16()
		body := reader{b: exts.take(exts.u16()), ok: true}
		var bit uint8
		switch typ {
		case 43:
			bit, version = 1, body.u16()
		case 51:
			bit, group = 2, body.u16()
			share = body.take(body.u16())
		case 41:
			bit, pskSeen, pskIdentity = 4, true, body.u16()
		default:
			return ErrBadServerHello
		}
		if !body.ok || len(body.b) != 0 || seen&bit != 0 {
			return ErrBadServerHello
		}
		seen |= bit
	}
	switch {
	case !exts.ok:
		return ErrBadServerHello
	case version != tls.VersionTLS13:
		return ErrNotTLS13
	case !pskSeen:
		return ErrPSKDeclined
	case pskIdentity != 0 || len(session) != 0 || suite != r.suite || group != int(r.cfg.Group) || share == nil:
		return ErrBadServerHello
	}
	peer, err := r.priv.Curve().NewPublicKey(share)
	if err != nil {
		return ErrKeyExchange
	}
	shared, err := r.priv.ECDH(peer)
	if err != nil {
		return ErrKeyExchange
	}
	r.h.Write(msg)
	var derived [48]byte
	size := r.hsize
	expandLabelCtx(derived[:size], r.sha384, r.early[:size], "derived", r.emptyHash())
	hmacSum(&r.hs, r.sha384, derived[:size], shared)
	th := r.transcript()
	expandLabelCtx(r.clientHS[:size], r.sha384, r.hs[:size], "c hs traffic", th)
	expandLabelCtx(r.serverHS[:size], r.sha384, r.hs[:size], "s hs traffic", th)
	if err := r.read.Init(r.suite, r.serverHS[:size]); err != nil {
		return err
	}
	if err := r.read.Warm(); err != nil {
		return err
	}
	r.state = stEncryptedExtensions
	return nil
}

// encryptedExtensions checks the server's extensions: each at most once,
// each one the hello asked for (server_name's empty acknowledgement, the
// server's supported_groups, ALPN), and an ALPN protocol must be one
// offered (RFC 8446 §4.2).
func (r *Resumer) encryptedExtensions(msg []byte) error {
	if msg[0] != 8 {
		return ErrBadFlight
	}
	p := reader{b: msg[4:], ok: true}
	exts := reader{b: p.take(p.u16()), ok: true}
	if !p.ok || len(p.b) != 0 {
		return ErrBadFlight
	}
	var seen uint8
	for len(exts.b) > 0 && exts.ok {
		typ := exts.u16()
		body := reader{b: exts.take(exts.u16()), ok: true}
		var bit uint8
		switch typ {
		case 0: // server_name: empty, and only if one was sent
			bit = 1
			if r.cfg.ServerName == "" || len(body.b) != 0 {
				return ErrBadFlight
			}
		case 10: // supported_groups: the server's, for later
			bit = 2
		case 16: // ALPN: one protocol, one of ours
			bit = 4
			list := reader{b: body.take(body.u16()), ok: true}
			proto := list.take(list.u8())
			if !body.ok || !list.ok || len(body.b) != 0 || len(list.b) != 0 || !r.offered(proto) {
				return ErrBadFlight
			}
		default: // early_data and the rest: not asked for
			return ErrBadFlight
		}
		if seen&bit != 0 {
			return ErrBadFlight
		}
		seen |= bit
	}
	if !exts.ok {
		return ErrBadFlight
	}
	r.h.Write(msg)
	r.state = stFinished
	return nil
}

func (r *Resumer) offered(proto []byte) bool {
	for _, p := range r.cfg.ALPN {
		if p == string(proto) {
			return true
		}
	}
	return false
}

// finished verifies the server's Finished (RFC 8446 §4.4.4) and derives
// the traffic secrets.
func (r *Resumer) finished(msg []byte) error {
	size := r.hsize
	if msg[0] != 20 || len(msg) != 4+size {
		return ErrBadFlight
	}
	var key, want [48]byte
	expandLabel(key[:size], r.sha384, r.serverHS[:size], "finished")
	hmacSum(&want, r.sha384, key[:size], r.transcript())
	if subtle.ConstantTimeCompare(want[:size], msg[4:]) != 1 {
		return ErrBadFinished
	}
	r.h.Write(msg)
	var derived, zeros [48]byte
	expandLabelCtx(derived[:size], r.sha384, r.hs[:size], "derived", r.emptyHash())
	hmacSum(&r.master, r.sha384, derived[:size], zeros[:size])
	th := r.transcript()
	expandLabelCtx(r.clientApp[:size], r.sha384, r.master[:size], "c ap traffic", th)
	expandLabelCtx(r.serverApp[:size], r.sha384, r.master[:size], "s ap traffic", th)
	r.state = stDone
	return nil
}

// AppendFinished appends to dst the client's Finished record, sealed under
// the client's handshake key, once Read reported done, and derives the
// resumption master secret.
func (r *Resumer) AppendFinished(dst []byte) ([]byte, error) {
	size := r.hsize
	var key, verify [48]byte
	expandLabel(key[:size], r.sha384, r.clientHS[:size], "finished")
	hmacSum(&verify, r.sha384, key[:size], r.transcript())
	var msg [4 + 48]byte
	msg[0], msg[3] = 20, byte(size)
	copy(msg[4:], verify[:size])
	r.h.Write(msg[:4+size])
	expandLabelCtx(r.resMS[:size], r.sha384, r.master[:size], "res master", r.transcript())
	if err := r.write.Init(r.suite, r.clientHS[:size]); err != nil {
		return dst, err
	}
	if err := r.write.Warm(); err != nil {
		return dst, err
	}
	dst = Seal(dst, &r.write, TypeHandshake, msg[:4+size])
	r.read.Cool()
	r.write.Cool()
	r.priv = nil
	return dst, nil
}

// Suite is the handshake's cipher suite.
func (r *Resumer) Suite() uint16 { return r.suite }

// Secrets are the traffic secrets and the resumption master secret, for
// Records.Init and Records.TakeOwnTickets, once AppendFinished ran; valid
// until the next Hello.
func (r *Resumer) Secrets() (server, client, resumption []byte) {
	return r.serverApp[:r.hsize], r.clientApp[:r.hsize], r.resMS[:r.hsize]
}

// transcript is the hash of the handshake messages so far.
func (r *Resumer) transcript() []byte { return r.h.Sum(r.sum[:0]) }

func (r *Resumer) emptyHash() []byte {
	if r.sha384 {
		return emptyHash384[:]
	}
	return emptyHash256[:]
}

func appendU16(b []byte, v int) []byte { return append(b, byte(v>>8), byte(v)) }

func putU16(b []byte, v int) { b[0], b[1] = byte(v>>8), byte(v) }

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}
