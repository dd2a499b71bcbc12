package mock

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"

	"github.com/stampede-bench/stampede/internal/tls13"
)

// TLS on the event loops.
//
// gnet has no TLS, and crypto/tls wants a blocking net.Conn. Putting a
// goroutine-per-connection TLS listener in front of the loops would move
// every token write off the loops, onto a goroutine the truth log cannot
// see: the stamp taken before write(2) would no longer be the time the
// bytes left. So the mock splits TLS the way kTLS does. The handshake runs
// in crypto/tls, on a goroutine of its own for the few milliseconds it
// lasts, reading the handshake records the loop hands it and writing its
// flights straight to the socket. Then the traffic secrets (taken from the
// per-connection key log) go to a TLS 1.3 record layer that lives on the
// connection: the loop decrypts what arrives, and every send seals its
// bytes into records right before the same write(2) the truth log stamps.
// The server speaks TLS 1.3 only, with the suite crypto/tls chooses
// (AES-GCM for a client with AES hardware, else ChaCha20-Poly1305).

// SelfSigned returns a self-signed ECDSA P-256 certificate for 127.0.0.1,
// ::1 and localhost, valid for a day.
func SelfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "mockllm"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// serverTLS prepares the server's TLS configuration: TLS 1.3 only, and a
// per-connection key log from which the record layer takes its secrets.
func serverTLS(base *tls.Config) *tls.Config {
	inner := base.Clone()
	inner.MinVersion = tls.VersionTLS13
	inner.MaxVersion = tls.VersionTLS13
	outer := inner.Clone()
	outer.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		h, ok := hello.Conn.(*handshakeConn)
		if !ok {
			return nil, nil
		}
		c := inner.Clone()
		c.KeyLogWriter = (*keyLog)(h)
		return c, nil
	}
	return outer
}

const (
	recordHeader   = 5
	maxPlaintext   = 16384
	recordOverhead = recordHeader + 1 + 16 // header, inner content type, AEAD tag

	typeAlert       = 21
	typeHandshake   = 22
	typeApplication = 23

	handshakeKeyUpdate = 24

	handshakeTimeout = time.Minute
)

// newRecordKey is one direction's traffic key for the mock's record
// layer (AES-GCM or ChaCha20-Poly1305 records).
func newRecordKey(suite uint16, secret []byte) (*tls13.Key, error) {
	k, err := tls13.NewKey(suite, secret)
	if err != nil {
		return nil, fmt.Errorf("TLS: %w: the mock's record layer supports TLS 1.3 suites only", err)
	}
	return k, nil
}

// tlsConn is the TLS state of one connection: its handshake while it
// lasts, then its record layer.
type tlsConn struct {
	hs *handshakeConn // the handshake; nil once the loop took over

	// Loop only, after the handshake.
	rd    *tls13.Key
	in    []byte // ciphertext not yet decrypted
	plain []byte // decrypted application data of the latest receive

	// Under conn.mu.
	wr  *tls13.Key // nil until the handshake ended
	out []byte     // sealed records of the latest send
}

// seal encrypts b into records in t.out. Called under conn.mu.
func (t *tlsConn) seal(b []byte, contentType byte) []byte {
	t.out = t.out[:0]
	for len(b) > 0 {
		n := min(len(b), maxPlaintext)
		t.out = appendRecord(t.out, t.wr, b[:n], contentType)
		b = b[n:]
	}
	return t.out
}

func appendRecord(out []byte, k *tls13.Key, p []byte, contentType byte) []byte {
	size := len(p) + 1 + k.AEAD.Overhead()
	start := len(out)
	if free := cap(out) - start; free < recordHeader+size {
		out = append(out[:cap(out)], make([]byte, recordHeader+size-free)...)[:start]
	}
	out = append(out, typeApplication, 3, 3, byte(size>>8), byte(size))
	body := len(out)
	out = append(out, p...)
	out = append(out, contentType)
	sealed := k.AEAD.Seal(out[body:body], k.NextNonce(), out[body:], out[start:body])
	return out[:body+len(sealed)]
}

// errTLSClose is the peer's close_notify or a fatal alert.
var errTLSClose = errors.New("TLS alert")

// receive takes bytes from the socket and returns the application data
// they complete (valid until the next receive). Loop only.
func (s *Server) receive(cn *conn, data []byte) ([]byte, error) {
	t := cn.tls
	if h := t.hs; h != nil {
		h.mu.Lock()
		if !h.done {
			h.buf = append(h.buf, data...)
			h.cond.Signal()
			h.mu.Unlock()
			return nil, nil
		}
		t.in = append(t.in, h.buf...)
		h.buf = nil
		h.mu.Unlock()
		t.hs = nil
		if h.err != nil {
			return nil, h.err
		}
	}
	t.in = append(t.in, data...)
	t.plain = t.plain[:0]
	off := 0
	for len(t.in)-off >= recordHeader {
		size := int(binary.BigEndian.Uint16(t.in[off+3:]))
		if len(t.in)-off < recordHeader+size {
			break
		}
		hdr := t.in[off : off+recordHeader]
		body := t.in[off+recordHeader : off+recordHeader+size]
		off += recordHeader + size
		switch hdr[0] {
		case typeApplication:
		case 20: // change_cipher_spec, for middleboxes
			continue
		default:
			return nil, errors.New("TLS: unexpected plaintext record")
		}
		p, err := t.rd.AEAD.Open(body[:0], t.rd.NextNonce(), body, hdr)
		if err != nil {
			return nil, errors.New("TLS: bad record MAC")
		}
		for len(p) > 0 && p[len(p)-1] == 0 {
			p = p[:len(p)-1]
		}
		if len(p) == 0 {
			return nil, errors.New("TLS: record without content type")
		}
		switch p[len(p)-1] {
		case typeApplication:
			t.plain = append(t.plain, p[:len(p)-1]...)
		case typeAlert:
			return nil, errTLSClose
		case typeHandshake:
			if err := s.postHandshake(cn, p[:len(p)-1]); err != nil {
				return nil, err
			}
		default:
			return nil, errors.New("TLS: unexpected content type")
		}
	}
	rest := copy(t.in, t.in[off:])
	t.in = t.in[:rest]
	return t.plain, nil
}

// postHandshake handles KeyUpdate, the one handshake message a client
// sends after the handshake.
func (s *Server) postHandshake(cn *conn, msg []byte) error {
	if len(msg) != 5 || msg[0] != handshakeKeyUpdate || msg[3] != 0 || msg[4] > 1 {
		return errors.New("TLS: unexpected post-handshake message")
	}
	if err := cn.tls.rd.Update(); err != nil {
		return err
	}
	if msg[4] == 1 { // update_requested: answer, then switch our own key
		cn.mu.Lock()
		defer cn.mu.Unlock()
		out := cn.tls.seal([]byte{handshakeKeyUpdate, 0, 0, 1, 0}, typeHandshake)
		if !cn.dead.Load() {
			cn.writeLocked(out, &s.clock)
		}
		return cn.tls.wr.Update()
	}
	return nil
}

// handshakeConn is the net.Conn crypto/tls runs the server handshake on:
// reads come from what the loop received, one record at a time, so that
// crypto/tls never holds bytes past the client's Finished; writes go to
// the socket.
type handshakeConn struct {
	s      *Server
	cn     *conn
	mu     sync.Mutex
	cond   sync.Cond
	buf    []byte // received, not yet read
	left   int    // bytes of the current record not yet read
	closed bool
	done   bool  // the loop owns buf from now on
	err    error // why the handshake failed

	sent   []byte // every byte written, to count the records of the new key
	client []byte // CLIENT_TRAFFIC_SECRET_0
	server []byte // SERVER_TRAFFIC_SECRET_0
}

// startHandshake begins the TLS handshake of a new connection.
func (s *Server) startHandshake(cn *conn) {
	h := &handshakeConn{s: s, cn: cn}
	h.cond.L = &h.mu
	cn.tls = &tlsConn{hs: h}
	go h.run()
}

func (h *handshakeConn) run() {
	stop := time.AfterFunc(handshakeTimeout, h.abort)
	err := h.handshake()
	stop.Stop()
	h.mu.Lock()
	h.done, h.err = true, err
	h.mu.Unlock()
	if err != nil {
		h.cn.close()
		return
	}
	_ = h.cn.gc.Wake(nil) // the loop decrypts what came after Finished
}

func (h *handshakeConn) handshake() error {
	tc := tls.Server(h, h.s.tls)
	if err := tc.Handshake(); err != nil {
		return err
	}
	if h.client == nil || h.server == nil {
		return errors.New("TLS: no traffic secrets")
	}
	suite := tc.ConnectionState().CipherSuite
	rd, err := newRecordKey(suite, h.client)
	if err != nil {
		return err
	}
	wr, err := newRecordKey(suite, h.server)
	if err != nil {
		return err
	}
	// The session tickets went out under the new key already; the
	// records that open under it set its sequence number.
	for b := h.sent; len(b) >= recordHeader; {
		size := int(binary.BigEndian.Uint16(b[3:]))
		if len(b) < recordHeader+size {
			break
		}
		if b[0] == typeApplication {
			body := append([]byte(nil), b[recordHeader:recordHeader+size]...)
			seq := wr.Seq
			if _, err := wr.AEAD.Open(body[:0], wr.NextNonce(), body, b[:recordHeader]); err != nil {
				wr.Seq = seq
			}
		}
		b = b[recordHeader+size:]
	}
	h.sent = nil
	h.cn.tls.rd = rd
	h.cn.mu.Lock()
	h.cn.tls.wr = wr
	h.cn.mu.Unlock()
	return nil
}

// Read hands crypto/tls received bytes, never past the end of a record.
func (h *handshakeConn) Read(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		if h.closed {
			return 0, net.ErrClosed
		}
		if h.left == 0 && len(h.buf) >= recordHeader {
			h.left = recordHeader + int(binary.BigEndian.Uint16(h.buf[3:]))
		}
		if h.left > 0 && len(h.buf) > 0 {
			break
		}
		h.cond.Wait()
	}
	n := copy(p, h.buf[:min(len(h.buf), h.left)])
	h.left -= n
	h.buf = h.buf[:copy(h.buf, h.buf[n:])]
	return n, nil
}

// Write sends a handshake flight.
func (h *handshakeConn) Write(p []byte) (int, error) {
	h.sent = append(h.sent, p...)
	if _, ok := h.cn.send(p, &h.s.clock); !ok {
		return 0, net.ErrClosed
	}
	return len(p), nil
}

// abort ends a handshake that takes too long or whose connection closed.
func (h *handshakeConn) abort() {
	h.mu.Lock()
	h.closed = true
	h.cond.Broadcast()
	h.mu.Unlock()
}

func (h *handshakeConn) Close() error                     { h.abort(); return nil }
func (h *handshakeConn) LocalAddr() net.Addr              { return h.cn.gc.LocalAddr() }
func (h *handshakeConn) RemoteAddr() net.Addr             { return h.cn.gc.RemoteAddr() }
func (h *handshakeConn) SetDeadline(time.Time) error      { return nil }
func (h *handshakeConn) SetReadDeadline(time.Time) error  { return nil }
func (h *handshakeConn) SetWriteDeadline(time.Time) error { return nil }

// keyLog receives the connection's secrets in NSS key log format.
type keyLog handshakeConn

func (k *keyLog) Write(line []byte) (int, error) {
	f := bytes.Fields(line)
	if len(f) != 3 {
		return len(line), nil
	}
	secret, err := hex.DecodeString(string(f[2]))
	if err != nil {
		return 0, err
	}
	switch string(f[0]) {
	case "CLIENT_TRAFFIC_SECRET_0":
		k.client = secret
	case "SERVER_TRAFFIC_SECRET_0":
		k.server = secret
	}
	return len(line), nil
}
