package tls13

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"sync"
	"time"
)

// Ticket is a TLS 1.3 session ticket a client can resume with (RFC 8446
// §4.6.1): the server's opaque label, the PSK that goes with it (already
// derived with the ticket's nonce), its suite, when it was issued (for the
// obfuscated ticket age) and until when it may be offered. A Ticket is
// never changed once made, so holders may share it across goroutines.
type Ticket struct {
	Suite uint16
	// AgeAdd obfuscates the ticket's age (RFC 8446 §4.2.11.1).
	AgeAdd uint32
	// IssuedMs is when the ticket was issued, in Unix milliseconds; UseBy
	// the Unix second after which it is not offered.
	IssuedMs int64
	UseBy    int64
	// CertNotAfter, when not 0, is the Unix second the server's
	// certificate expires: a resumption after it would accept a server
	// whose certificate crypto/tls no longer would.
	CertNotAfter int64
	Label        []byte
	psk          [48]byte
	pskLen       uint8
}

// PSK is the ticket's pre-shared key.
func (t *Ticket) PSK() []byte { return t.psk[:t.pskLen] }

// Usable reports whether t may be offered at nowMs (Unix milliseconds).
func (t *Ticket) Usable(nowMs int64) bool {
	return nowMs/1000 < t.UseBy && nowMs >= t.IssuedMs-1000 && (t.CertNotAfter == 0 || nowMs/1000 < t.CertNotAfter)
}

// maxTicketLifetime is RFC 8446's bound on a ticket's lifetime (7 days).
const maxTicketLifetime = 7 * 24 * 3600

// ticketError is a malformed ticket or session encoding.
type ticketError string

func (e ticketError) Error() string { return string(e) }

const (
	// ErrSessionFormat is a crypto/tls session encoding this package does
	// not read: a Go release changed the format of SessionState.Bytes.
	ErrSessionFormat  = ticketError("crypto/tls session state in a format not known here")
	errSessionNot13   = ticketError("crypto/tls session state not of a TLS 1.3 client")
	errTicketMsg      = ticketError("TLS: malformed NewSessionTicket")
	errTicketLifetime = ticketError("TLS: NewSessionTicket lifetime over 7 days")
)

// reader walks bytes of a TLS structure; ok goes false at the first read
// past its end, and every read after returns zeros.
type reader struct {
	b  []byte
	ok bool
}

func (r *reader) take(n int) []byte {
	if !r.ok || n > len(r.b) {
		r.ok = false
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) u8() int {
	if p := r.take(1); p != nil {
		return int(p[0])
	}
	return 0
}

func (r *reader) u16() int {
	if p := r.take(2); p != nil {
		return int(binary.BigEndian.Uint16(p))
	}
	return 0
}

func (r *reader) u24() int {
	if p := r.take(3); p != nil {
		return int(p[0])<<16 | int(p[1])<<8 | int(p[2])
	}
	return 0
}

func (r *reader) u32() uint32 {
	if p := r.take(4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if p := r.take(8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

// SessionReader makes Tickets of what crypto/tls hands a client's session
// cache for one server: ticket and state from
// ClientSessionState.ResumptionState, state encoded by SessionState.Bytes
// (crypto/tls's ticket.go: version, client or server, suite, created at,
// secret, extra, EMS and early-data flags, certificates, verified chains,
// ALPN with early data, then for a TLS 1.3 client use-by and age_add, and
// nothing after). For a TLS 1.3 client the secret is the ticket's PSK. A
// state of any other shape is ErrSessionFormat (or not TLS 1.3): the
// caller leaves resumption to crypto/tls.
//
// With CheckCert (the configuration verifies the server) a session is read
// as crypto/tls checks one before resuming it: its server certificate must
// be valid for ServerName, and it must have a verified chain; the ticket is
// usable only while one of its verified chains is (until the earliest
// expiry in the latest-expiring chain). The certificates' parse is kept
// for the next session with the same ones (a server hands the same chain
// to every connection), so reading a session costs a copy, not an X.509
// parse. Safe for concurrent use.
type SessionReader struct {
	ServerName string
	CheckCert  bool

	mu sync.Mutex
	// certs is the certificate bytes (leaf, verified chains) notAfter and
	// certErr were found for.
	certs    string
	notAfter int64
	certErr  error
}

const (
	errSessionUnverified = ticketError("crypto/tls session has no verified chain")
	errSessionName       = ticketError("crypto/tls session is for another server name")
)

// Read makes a Ticket of a session (see SessionReader).
func (sr *SessionReader) Read(ticket []byte, state *tls.SessionState) (*Ticket, error) {
	b, err := state.Bytes()
	if err != nil {
		return nil, err
	}
	t, certs, err := parseSessionBytes(ticket, b)
	if err != nil || !sr.CheckCert {
		return t, err
	}
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if string(certs) != sr.certs || sr.certs == "" {
		sr.notAfter, sr.certErr = chainsNotAfter(certs, sr.ServerName)
		sr.certs = string(certs)
	}
	if sr.certErr != nil {
		return nil, sr.certErr
	}
	t.CertNotAfter = sr.notAfter
	return t, nil
}

// chainsNotAfter checks a session's certificates (certs: the leaf's bytes
// prefixed by their u24 length, then the verified chains' block, see
// parseSessionBytes) as crypto/tls does before resuming, and returns the
// Unix second after which no verified chain is valid.
func chainsNotAfter(certs []byte, serverName string) (int64, error) {
	r := reader{b: certs, ok: true}
	leaf, err := x509.ParseCertificate(r.take(r.u24()))
	if err != nil {
		return 0, ErrSessionFormat
	}
	if err := leaf.VerifyHostname(serverName); err != nil {
		return 0, errSessionName
	}
	chains := reader{b: r.take(r.u24()), ok: true}
	best, found := int64(0), false
	for len(chains.b) > 0 {
		chain := reader{b: chains.take(chains.u24()), ok: true}
		end := leaf.NotAfter.Unix()
		for chains.ok && len(chain.b) > 0 {
			cert, err := x509.ParseCertificate(chain.take(chain.u24()))
			if err != nil || !chain.ok {
				return 0, ErrSessionFormat
			}
			end = min(end, cert.NotAfter.Unix())
		}
		if !found || end > best {
			best, found = end, true
		}
	}
	if !r.ok || !chains.ok {
		return 0, ErrSessionFormat
	}
	if !found {
		return 0, errSessionUnverified
	}
	return best, nil
}

// parseSessionBytes parses SessionState.Bytes (see SessionReader) and
// returns the server's certificates too: the first's bytes prefixed by
// their u24 length, then the verified chains' u24-prefixed block.
func parseSessionBytes(ticket, b []byte) (t *Ticket, certs []byte, err error) {
	r := reader{b: b, ok: true}
	version := r.u16()
	typ := r.u8()
	suite := uint16(r.u16())
	created := r.u64()
	secret := r.take(r.u8())
	r.take(r.u24()) // extra
	ems, early := r.u8(), r.u8()
	peer := reader{b: r.take(r.u24()), ok: true}
	leaf := peer.take(peer.u24())
	certsAt := len(b) - len(r.b)
	chains := r.take(r.u24()) // verified chains
	if early == 1 {
		r.take(r.u8()) // ALPN
	}
	if !r.ok || typ > 2 || typ == 0 || ems > 1 || early > 1 {
		return nil, nil, ErrSessionFormat
	}
	if version != tls.VersionTLS13 || typ != 2 {
		return nil, nil, errSessionNot13
	}
	useBy := r.u64()
	ageAdd := r.u32()
	if !r.ok || !peer.ok || len(leaf) == 0 || len(r.b) != 0 || len(secret) == 0 || len(ticket) == 0 || len(ticket) > 0xffff {
		return nil, nil, ErrSessionFormat
	}
	if err := suiteKnown(suite, len(secret)); err != nil {
		return nil, nil, err
	}
	t = &Ticket{Suite: suite, AgeAdd: ageAdd, IssuedMs: int64(created) * 1000, UseBy: int64(useBy),
		Label: append([]byte(nil), ticket...)}
	t.pskLen = uint8(copy(t.psk[:], secret))
	// The leaf with its length, then the chains with theirs.
	certs = make([]byte, 0, 3+len(leaf)+3+len(chains))
	certs = append(certs, byte(len(leaf)>>16), byte(len(leaf)>>8), byte(len(leaf)))
	certs = append(certs, leaf...)
	certs = append(certs, b[certsAt:certsAt+3+len(chains)]...)
	return t, certs, nil
}

// suiteKnown checks that suite is a TLS 1.3 suite of this package and
// that secret has its hash's size.
func suiteKnown(suite uint16, secret int) error {
	switch suite {
	case tls.TLS_AES_128_GCM_SHA256, tls.TLS_CHACHA20_POLY1305_SHA256:
		if secret != 32 {
			return errSecretSize
		}
	case tls.TLS_AES_256_GCM_SHA384:
		if secret != 48 {
			return errSecretSize
		}
	default:
		return UnsupportedSuiteError{suite}
	}
	return nil
}

// parseNewSessionTicket makes a Ticket of a NewSessionTicket message's
// body (RFC 8446 §4.6.1) received at nowMs on a connection of suite whose
// resumption_master_secret is res; the server's certificate is the one
// the ticket resumed from had (certNotAfter).
func parseNewSessionTicket(body []byte, suite uint16, res []byte, nowMs, certNotAfter int64) (*Ticket, error) {
	r := reader{b: body, ok: true}
	lifetime := r.u32()
	ageAdd := r.u32()
	nonce := r.take(r.u8())
	label := r.take(r.u16())
	r.take(r.u16()) // extensions
	if !r.ok || len(r.b) != 0 || len(label) == 0 {
		return nil, errTicketMsg
	}
	if lifetime > maxTicketLifetime {
		return nil, errTicketLifetime
	}
	t := &Ticket{Suite: suite, AgeAdd: ageAdd, IssuedMs: nowMs, UseBy: nowMs/1000 + int64(lifetime),
		CertNotAfter: certNotAfter, Label: append([]byte(nil), label...)}
	t.pskLen = uint8(len(res))
	expandLabelCtx(t.psk[:t.pskLen], suite == tls.TLS_AES_256_GCM_SHA384, res, "resumption", nonce)
	return t, nil
}

// TicketSink takes the tickets a connection whose handshake was the
// loop's own receives (see Records.TakeOwnTickets).
type TicketSink interface {
	PutTicket(*Ticket)
}

// nowMs is the wall clock in Unix milliseconds, the time a ticket's age
// counts in.
func nowMs() int64 { return time.Now().UnixMilli() }
