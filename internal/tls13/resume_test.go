package tls13

import (
	"bufio"
	"bytes"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"hash"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"
)

// testServer is a crypto/tls server on loopback that answers the first
// line a connection sends upper-cased.
type testServer struct {
	ln      net.Listener
	cfg     *tls.Config
	resumed chan bool
	alpn    chan string
	wg      sync.WaitGroup
}

func selfSigned(t testing.TB) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tls13.test"},
		DNSNames: []string{"tls13.test"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func startServer(t testing.TB, cert tls.Certificate, mod func(*tls.Config)) *testServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{ln: ln, resumed: make(chan bool, 16), alpn: make(chan string, 16),
		cfg: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13, NextProtos: []string{"http/1.1"}}}
	if mod != nil {
		mod(s.cfg)
	}
	s.wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() {
				defer nc.Close()
				tc := tls.Server(nc, s.cfg)
				if tc.Handshake() != nil {
					s.resumed <- false
					return
				}
				cs := tc.ConnectionState()
				s.resumed <- cs.DidResume
				s.alpn <- cs.NegotiatedProtocol
				line, err := bufio.NewReader(tc).ReadBytes('\n')
				if err != nil {
					return
				}
				tc.Write(bytes.ToUpper(line))
			})
		}
	})
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

// captureCache is a session cache that keeps what crypto/tls puts.
type captureCache struct {
	mu   sync.Mutex
	last *tls.ClientSessionState
}

func (c *captureCache) Get(string) (*tls.ClientSessionState, bool) { return nil, false }
func (c *captureCache) Put(_ string, cs *tls.ClientSessionState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs != nil {
		c.last = cs
	}
}

// fullHandshake makes one crypto/tls connection to s and returns the
// ticket it got, parsed.
func fullHandshake(t *testing.T, s *testServer, cfg *tls.Config) *Ticket {
	t.Helper()
	ticket, state := fullSession(t, s, cfg)
	sr := SessionReader{ServerName: cfg.ServerName, CheckCert: !cfg.InsecureSkipVerify}
	tk, err := sr.Read(ticket, state)
	if err != nil {
		t.Fatalf("parsing crypto/tls's session state (has its format changed?): %v", err)
	}
	return tk
}

// fullSession makes one crypto/tls connection to s and returns the
// session crypto/tls put in its cache.
func fullSession(t *testing.T, s *testServer, cfg *tls.Config) ([]byte, *tls.SessionState) {
	t.Helper()
	cache := &captureCache{}
	cfg = cfg.Clone()
	cfg.ClientSessionCache = cache
	tc, err := tls.Dial("tcp", s.ln.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if _, err := tc.Write([]byte("full\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(tc).ReadString('\n'); err != nil || line != "FULL\n" {
		t.Fatalf("full handshake's answer %q, %v", line, err)
	}
	if <-s.resumed {
		t.Fatal("the first handshake resumed")
	}
	<-s.alpn
	cache.mu.Lock()
	cs := cache.last
	cache.mu.Unlock()
	if cs == nil {
		t.Fatal("crypto/tls put no session")
	}
	ticket, state, err := cs.ResumptionState()
	if err != nil {
		t.Fatal(err)
	}
	return ticket, state
}

// A session is read as crypto/tls resumes one: with verification, only
// for the server name its certificate is for, and only with a verified
// chain, usable until the certificate expires; without, any. The
// certificates are parsed once for sessions that share them.
func TestSessionReaderChecks(t *testing.T) {
	cert := selfSigned(t)
	s := startServer(t, cert, nil)
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	verified := &tls.Config{ServerName: "tls13.test", RootCAs: pool}
	ticket, state := fullSession(t, s, verified)
	sr := SessionReader{ServerName: "tls13.test", CheckCert: true}
	tk, err := sr.Read(ticket, state)
	if err != nil || tk.CertNotAfter != leaf.NotAfter.Unix() {
		t.Fatalf("verified session: %v, certificate expiry %d, want %d", err, tk.CertNotAfter, leaf.NotAfter.Unix())
	}
	sr.notAfter = 42 // what the reader found for these certificates
	if tk, err = sr.Read(ticket, state); err != nil || tk.CertNotAfter != 42 {
		t.Fatalf("the same session again: %v, or its certificates parsed again", err)
	}
	other := SessionReader{ServerName: "other.test", CheckCert: true}
	if _, err := other.Read(ticket, state); err != errSessionName {
		t.Fatalf("another server's name: %v, want %v", err, errSessionName)
	}
	skip := SessionReader{CheckCert: false}
	if tk, err := skip.Read(ticket, state); err != nil || tk.CertNotAfter != 0 {
		t.Fatalf("without verification: %v, expiry %d", err, tk.CertNotAfter)
	}
	// A session made without verification has no verified chain: a
	// configuration that verifies does not resume it.
	ticket, state = fullSession(t, s, &tls.Config{ServerName: "tls13.test", InsecureSkipVerify: true})
	if _, err := sr.Read(ticket, state); err != errSessionUnverified {
		t.Fatalf("unverified session: %v, want %v", err, errSessionUnverified)
	}
}

type sinkFunc func(*Ticket)

func (f sinkFunc) PutTicket(t *Ticket) { f(t) }

// resume runs a Resumer's handshake with s over a fresh connection, sends
// a line under the traffic keys and reads the answer, and returns the
// ticket the server sent after the handshake (nil if none).
func resume(t *testing.T, s *testServer, r *Resumer, tk *Ticket, hc *HelloConfig) (*Ticket, error) {
	t.Helper()
	nc, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	hello, err := r.Hello(tk, hc, time.Now().UnixMilli())
	if err != nil {
		return nil, err
	}
	if _, err := nc.Write(hello); err != nil {
		t.Fatal(err)
	}
	var in []byte
	buf := make([]byte, 4096)
	for {
		m, err := nc.Read(buf)
		if err != nil {
			return nil, err
		}
		in = append(in, buf[:m]...)
		n, done, err := r.Read(in)
		in = in[n:]
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	out, err := r.AppendFinished(nil)
	if err != nil {
		t.Fatal(err)
	}
	var rec Records
	server, client, res := r.Secrets()
	if err := rec.Init(tls.VersionTLS13, r.Suite(), server, client); err != nil {
		t.Fatal(err)
	}
	var got *Ticket
	rec.TakeOwnTickets(sinkFunc(func(nt *Ticket) { got = nt }), res, tk)
	if out, err = rec.Seal(out, []byte("resumed\n"), true); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(out); err != nil {
		t.Fatal(err)
	}
	var answer []byte
	for !bytes.HasSuffix(answer, []byte("\n")) {
		for {
			n, typ, data, err := rec.Open(in)
			if err != nil {
				t.Fatalf("record after the resumed handshake: %v", err)
			}
			if n == 0 {
				break
			}
			if typ == TypeApplicationData {
				answer = append(answer, data...)
			}
			in = in[n:]
		}
		if bytes.HasSuffix(answer, []byte("\n")) {
			break
		}
		m, err := nc.Read(buf)
		if err != nil {
			t.Fatalf("reading the answer: %v (so far %q)", err, answer)
		}
		in = append(in, buf[:m]...)
	}
	if string(answer) != "RESUMED\n" {
		t.Fatalf("answer %q", answer)
	}
	return got, nil
}

// The format crypto/tls encodes its sessions in is read here: a full
// handshake through crypto/tls gives a ticket that a Resumer resumes with
// against crypto/tls's server (a future Go that changes the format fails
// this test), the server's own ticket after it resumes again, with each
// key exchange and with and without ALPN.
func TestResumeAgainstCryptoTLS(t *testing.T) {
	cert := selfSigned(t)
	for _, c := range []struct {
		name  string
		group tls.CurveID
		alpn  []string
	}{
		{"P-256", tls.CurveP256, nil},
		{"X25519 with ALPN", tls.X25519, []string{"http/1.1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startServer(t, cert, nil)
			pool := x509.NewCertPool()
			leaf, _ := x509.ParseCertificate(cert.Certificate[0])
			pool.AddCert(leaf)
			cfg := &tls.Config{ServerName: "tls13.test", RootCAs: pool, CurvePreferences: []tls.CurveID{c.group}, NextProtos: c.alpn}
			tk := fullHandshake(t, s, cfg)
			if tk.CertNotAfter != leaf.NotAfter.Unix() || !tk.Usable(time.Now().UnixMilli()) {
				t.Fatalf("ticket's certificate expiry %d, the certificate's %v", tk.CertNotAfter, leaf.NotAfter)
			}
			if tk.Usable(leaf.NotAfter.Add(time.Second).UnixMilli()) {
				t.Fatal("a ticket usable after its certificate expired")
			}
			hc, err := NewHelloConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var r Resumer
			for i := range 3 {
				next, err := resume(t, s, &r, tk, &hc)
				if err != nil {
					t.Fatalf("resumption %d: %v", i, err)
				}
				if !<-s.resumed {
					t.Fatalf("resumption %d: the server did a full handshake", i)
				}
				if alpn := <-s.alpn; (c.alpn != nil) != (alpn == "http/1.1") {
					t.Fatalf("ALPN %q, offered %q", alpn, c.alpn)
				}
				if next == nil || next.CertNotAfter != tk.CertNotAfter {
					t.Fatalf("resumption %d: ticket from the server %v", i, next)
				}
				tk = next
			}
		})
	}
}

// Resumptions with TLS_AES_256_GCM_SHA384 and
// TLS_CHACHA20_POLY1305_SHA256 against crypto/tls's server, which picks
// neither for a full handshake on a host with AES hardware: the server is
// handed the ticket's session (Config.UnwrapSession, a server-side
// SessionState of the ticket's suite and PSK), and the Resumer's hello
// offers only that suite. The server's own ticket after each is read
// too.
func TestResumeOtherSuites(t *testing.T) {
	cert := selfSigned(t)
	for _, suite := range []uint16{tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256} {
		t.Run(tls.CipherSuiteName(suite), func(t *testing.T) {
			tk := testTicket(suite)
			tk.IssuedMs = time.Now().UnixMilli()
			s := startServer(t, cert, func(c *tls.Config) {
				c.UnwrapSession = func(identity []byte, _ tls.ConnectionState) (*tls.SessionState, error) {
					if !bytes.Equal(identity, tk.Label) {
						return nil, nil
					}
					return serverSession(suite, tk.PSK())
				}
			})
			hc := HelloConfig{Group: tls.X25519}
			var r Resumer
			next, err := resume(t, s, &r, tk, &hc)
			if err != nil {
				t.Fatal(err)
			}
			if !<-s.resumed {
				t.Fatal("the server did a full handshake")
			}
			<-s.alpn
			if r.Suite() != suite || next == nil || next.Suite != suite || len(next.PSK()) != len(tk.PSK()) {
				t.Fatalf("suite %x, ticket from the server %+v", r.Suite(), next)
			}
		})
	}
}

// serverSession is crypto/tls's server-side session state of a TLS 1.3
// session of suite with PSK psk and no client certificate, as
// SessionState.Bytes encodes it (see parseSessionBytes).
func serverSession(suite uint16, psk []byte) (*tls.SessionState, error) {
	b := []byte{3, 4, 1, byte(suite >> 8), byte(suite)}
	b = binary.BigEndian.AppendUint64(b, uint64(time.Now().Unix()))
	b = append(b, byte(len(psk)))
	b = append(b, psk...)
	b = append(b, 0, 0, 0, 0, 0) // extra; EMS, early data
	b = append(b, 0, 0, 0)       // the client's certificates: none
	b = append(b, 0, 0, 0)       // verified chains: none
	return tls.ParseSessionState(b)
}

// A server that does not take the ticket (its ticket keys changed) does a
// full handshake: the Resumer stops at its ServerHello with
// ErrPSKDeclined; one that takes none of the groups offered answers with
// an alert, ErrServerAlert.
func TestResumeDeclined(t *testing.T) {
	cert := selfSigned(t)
	keys := func(c *tls.Config) { c.SetSessionTicketKeys([][32]byte{{1, 2, 3}}) }
	s := startServer(t, cert, keys)
	cfg := &tls.Config{InsecureSkipVerify: true, CurvePreferences: []tls.CurveID{tls.CurveP256}}
	tk := fullHandshake(t, s, cfg)
	hc, _ := NewHelloConfig(cfg)
	var r Resumer

	other := startServer(t, cert, nil) // its own ticket keys
	if _, err := resume(t, other, &r, tk, &hc); !errors.Is(err, ErrPSKDeclined) {
		t.Fatalf("ticket of another server: %v, want ErrPSKDeclined", err)
	}
	x25519Only := startServer(t, cert, func(c *tls.Config) {
		keys(c)
		c.CurvePreferences = []tls.CurveID{tls.X25519}
	})
	// A hello that lists only P-256 leaves it nothing to retry with.
	if _, err := resume(t, x25519Only, &r, tk, &hc); !errors.Is(err, ErrServerAlert) {
		t.Fatalf("a server without P-256: %v, want ErrServerAlert", err)
	}
	// And after those, the same Resumer still resumes.
	if _, err := resume(t, s, &r, tk, &hc); err != nil {
		t.Fatal(err)
	}
	if !<-s.resumed {
		t.Fatal("the server did a full handshake")
	}
}

// BenchmarkResumeClient is the client's CPU and garbage of one resumed
// handshake: the ClientHello (one key pair, the binder), the server's
// flight (the shared secret, the key schedule, the Finished checked) and
// the client's Finished. The server's side, made by fakeServer, runs with
// the timer stopped.
func BenchmarkResumeClient(b *testing.B) {
	for _, g := range []tls.CurveID{tls.CurveP256, tls.X25519} {
		b.Run(g.String(), func(b *testing.B) {
			tk := testTicket(tls.TLS_AES_128_GCM_SHA256)
			hc := HelloConfig{ServerName: "tls13.test", Group: g, ALPN: []string{"http/1.1"}}
			var r Resumer
			var fin []byte
			b.ReportAllocs()
			for b.Loop() {
				hello, err := r.Hello(tk, &hc, 0)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				flight := fakeServer(b, tk, hello)
				b.StartTimer()
				n, done, err := r.Read(flight)
				if err != nil || !done || n != len(flight) {
					b.Fatalf("read %d of %d, done %v, %v", n, len(flight), done, err)
				}
				if fin, err = r.AppendFinished(fin[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkResumeSteps is BenchmarkResumeClient's two loop turns apart:
// the ClientHello (the connect's turn) and the server's flight with the
// client Finished (the read's turn).
func BenchmarkResumeSteps(b *testing.B) {
	tk := testTicket(tls.TLS_AES_128_GCM_SHA256)
	hc := HelloConfig{ServerName: "tls13.test", Group: tls.CurveP256}
	var r Resumer
	b.Run("hello", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Hello(tk, &hc, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("flight", func(b *testing.B) {
		var fin []byte
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			hello, err := r.Hello(tk, &hc, 0)
			if err != nil {
				b.Fatal(err)
			}
			flight := fakeServer(b, tk, hello)
			b.StartTimer()
			if _, done, err := r.Read(flight); err != nil || !done {
				b.Fatal(done, err)
			}
			if fin, err = r.AppendFinished(fin[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func testTicket(suite uint16) *Ticket {
	tk := &Ticket{Suite: suite, UseBy: 1 << 40, AgeAdd: 77, Label: bytes.Repeat([]byte{1}, 128)}
	tk.pskLen = 32
	if suite == tls.TLS_AES_256_GCM_SHA384 {
		tk.pskLen = 48
	}
	for i := range tk.psk {
		tk.psk[i] = byte(i)
	}
	return tk
}

// fakeServer answers a Resumer's ClientHello record as a server holding
// tk would: ServerHello (taking the PSK and the key share), then
// EncryptedExtensions and Finished in one record under the server's
// handshake key. It is this package's key schedule run from the server's
// side, for the benchmark and the fuzz seeds; TestResumeAgainstCryptoTLS
// is the check against another implementation.
func fakeServer(tb testing.TB, tk *Ticket, hello []byte) []byte {
	sh, k, enc := fakeServerParts(tb, tk, hello, nil, nil)
	return Seal(sh, k, TypeHandshake, enc)
}

// fakeServerParts is fakeServer's flight in parts: the ServerHello record
// (with shExt's extensions after its own) and the change_cipher_spec, the
// server's handshake key, and the EncryptedExtensions (eeExt its
// extensions) and Finished the key is to seal.
func fakeServerParts(tb testing.TB, tk *Ticket, hello, shExt, eeExt []byte) (sh []byte, k *Key, enc []byte) {
	ch := hello[HeaderLen:]
	// The key share: find extension 51 by walking the hello.
	p := reader{b: ch[4+2+32:], ok: true}
	p.take(p.u8())
	p.take(p.u16())
	p.take(p.u8())
	exts := reader{b: p.take(p.u16()), ok: true}
	var group int
	var share []byte
	for len(exts.b) > 0 {
		typ := exts.u16()
		body := reader{b: exts.take(exts.u16()), ok: true}
		if typ == 51 {
			body.u16()
			group = body.u16()
			share = body.take(body.u16())
		}
	}
	curve := ecdh.P256()
	if tls.CurveID(group) == tls.X25519 {
		curve = ecdh.X25519()
	}
	priv, err := curve.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	peer, err := curve.NewPublicKey(share)
	if err != nil {
		tb.Fatal(err)
	}
	shared, _ := priv.ECDH(peer)
	pub := priv.PublicKey().Bytes()
	msg := []byte{2, 0, 0, 0, 3, 3}
	msg = append(msg, make([]byte, 32)...)
	msg = append(msg, 0, byte(tk.Suite>>8), byte(tk.Suite), 0)
	ext := []byte{0, 43, 0, 2, 3, 4, 0, 41, 0, 2, 0, 0, 0, 51}
	ext = appendU16(ext, 4+len(pub))
	ext = appendU16(ext, group)
	ext = appendU16(ext, len(pub))
	ext = append(ext, pub...)
	ext = append(ext, shExt...)
	msg = appendU16(msg, len(ext))
	msg = append(msg, ext...)
	msg[3] = byte(len(msg) - 4)
	sha384 := tk.Suite == tls.TLS_AES_256_GCM_SHA384
	var h hash.Hash = sha256.New()
	size := 32
	empty := emptyHash256[:]
	if sha384 {
		h, size, empty = sha512.New384(), 48, emptyHash384[:]
	}
	h.Write(ch)
	h.Write(msg)
	var zeros, early, derived, hs, sHS, fkey, verify [48]byte
	hmacSum(&early, sha384, zeros[:size], tk.PSK())
	expandLabelCtx(derived[:size], sha384, early[:size], "derived", empty)
	hmacSum(&hs, sha384, derived[:size], shared)
	expandLabelCtx(sHS[:size], sha384, hs[:size], "s hs traffic", h.Sum(nil))
	ee := []byte{8, 0, 0, byte(2 + len(eeExt)), 0, byte(len(eeExt))}
	ee = append(ee, eeExt...)
	h.Write(ee)
	expandLabel(fkey[:size], sha384, sHS[:size], "finished")
	hmacSum(&verify, sha384, fkey[:size], h.Sum(nil))
	fin := append([]byte{20, 0, 0, byte(size)}, verify[:size]...)
	k, err = NewKey(tk.Suite, sHS[:size])
	if err != nil {
		tb.Fatal(err)
	}
	sh = []byte{TypeHandshake, 3, 3, 0, byte(len(msg))}
	sh = append(sh, msg...)
	sh = append(sh, TypeChangeCipherSpec, 3, 3, 0, 1, 1)
	return sh, k, append(ee, fin...)
}

// A ServerHello or EncryptedExtensions with an extension twice, or one
// the hello did not ask for, abandons the attempt (RFC 8446 §4.2); the
// extensions it may carry pass.
func TestResumerRejectsExtensions(t *testing.T) {
	alpn := []byte{0, 16, 0, 5, 0, 3, 2, 'h', '2'}
	groups := []byte{0, 10, 0, 4, 0, 2, 0, 23}
	for _, c := range []struct {
		name         string
		shExt, eeExt []byte
		want         error
	}{
		{"ALPN and groups", nil, append(bytes.Clone(alpn), groups...), nil},
		{"server_name acknowledged", nil, []byte{0, 0, 0, 0}, nil},
		{"ALPN twice", nil, append(bytes.Clone(alpn), alpn...), ErrBadFlight},
		{"server_name twice", nil, []byte{0, 0, 0, 0, 0, 0, 0, 0}, ErrBadFlight},
		{"early_data", nil, []byte{0, 42, 0, 0}, ErrBadFlight},
		{"unknown in EncryptedExtensions", nil, []byte{0xfe, 0, 0, 0}, ErrBadFlight},
		{"supported_versions twice", []byte{0, 43, 0, 2, 3, 4}, nil, ErrBadServerHello},
		{"pre_shared_key twice", []byte{0, 41, 0, 2, 0, 0}, nil, ErrBadServerHello},
		{"unknown in ServerHello", []byte{0, 16, 0, 0}, nil, ErrBadServerHello},
	} {
		tk := testTicket(tls.TLS_AES_128_GCM_SHA256)
		hc := HelloConfig{ServerName: "tls13.test", Group: tls.CurveP256, ALPN: []string{"h2"}}
		var r Resumer
		hello, err := r.Hello(tk, &hc, 0)
		if err != nil {
			t.Fatal(err)
		}
		sh, k, enc := fakeServerParts(t, tk, hello, c.shExt, c.eeExt)
		_, done, err := r.Read(Seal(sh, k, TypeHandshake, enc))
		if err != c.want || done != (c.want == nil) {
			t.Errorf("%s: done %v, %v; want %v", c.name, done, err, c.want)
		}
	}
}

// The ticket age a hello reports (obfuscated by AgeAdd) counts from the
// ticket's issue, and is 0, not a wrapped 2^32-1000, for a ticket from a
// clock a second ahead of ours.
func TestResumerTicketAge(t *testing.T) {
	for _, c := range []struct{ issued, now, age int64 }{{1000, 3500, 2500}, {5000, 4000, 0}} {
		tk := testTicket(tls.TLS_AES_128_GCM_SHA256)
		tk.IssuedMs = c.issued
		var r Resumer
		hello, err := r.Hello(tk, &HelloConfig{Group: tls.CurveP256}, c.now)
		if err != nil {
			t.Fatal(err)
		}
		at := bytes.Index(hello, tk.Label) + len(tk.Label)
		if got := binary.BigEndian.Uint32(hello[at:]) - tk.AgeAdd; int64(got) != c.age {
			t.Errorf("issued %d, now %d: age %d, want %d", c.issued, c.now, got, c.age)
		}
	}
}

// The Resumer's own server flight, from fakeServer, verifies; with any
// byte of it changed, the handshake fails (or waits for more) and never
// reports done with a Finished that did not verify.
func TestResumerRejectsAlteredFlight(t *testing.T) {
	for _, suite := range []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256} {
		tk := testTicket(suite)
		hc := HelloConfig{Group: tls.CurveP256}
		var r Resumer
		hello, err := r.Hello(tk, &hc, 0)
		if err != nil {
			t.Fatal(err)
		}
		flight := fakeServer(t, tk, hello)
		if _, done, err := r.Read(bytes.Clone(flight)); !done || err != nil {
			t.Fatalf("%s: done %v, %v", tls.CipherSuiteName(suite), done, err)
		}
		for i := 0; i < len(flight); i += 5 {
			hello, err := r.Hello(tk, &hc, 0)
			if err != nil {
				t.Fatal(err)
			}
			bad := fakeServer(t, tk, hello)
			if legacyVersion(bad, i) {
				continue
			}
			bad[i] ^= 0x20
			if _, done, err := r.Read(bad); done && err == nil {
				// The ServerHello's random is not authenticated by
				// anything but the transcript, which the Finished covers.
				t.Fatalf("%s: byte %d altered, the handshake completed", tls.CipherSuiteName(suite), i)
			}
		}
	}
}

// legacyVersion reports whether byte i of a flight of records is in a
// record header's legacy_record_version, which RFC 8446 §5.1 has a
// receiver ignore.
func legacyVersion(flight []byte, i int) bool {
	for at := 0; at+HeaderLen <= len(flight); at += HeaderLen + (int(flight[at+3])<<8 | int(flight[at+4])) {
		if i == at+1 || i == at+2 {
			return true
		}
	}
	return false
}

// A Resumer's Hello allocates only crypto/ecdh's key pair (7 allocations
// for P-256 in Go 1.26): its record is built in the buffer of the
// handshake before.
func TestResumerHelloGarbage(t *testing.T) {
	tk := testTicket(tls.TLS_AES_128_GCM_SHA256)
	hc := HelloConfig{ServerName: "tls13.test", Group: tls.CurveP256, ALPN: []string{"http/1.1"}}
	var r Resumer
	r.Hello(tk, &hc, 0)
	hello := func() {
		if _, err := r.Hello(tk, &hc, 0); err != nil {
			t.Fatal(err)
		}
	}
	keyPair := testing.AllocsPerRun(20, func() {
		k, _ := ecdh.P256().GenerateKey(rand.Reader)
		_ = k.PublicKey().Bytes()
	})
	if n := testing.AllocsPerRun(20, hello); n > keyPair {
		t.Errorf("Hello allocates %v times, its key pair %v", n, keyPair)
	}
}

// A HelloRetryRequest (the ServerHello with its fixed random) ends the
// attempt as such.
func TestResumerHelloRetry(t *testing.T) {
	tk := testTicket(tls.TLS_AES_128_GCM_SHA256)
	hc := HelloConfig{Group: tls.CurveP256}
	var r Resumer
	hello, _ := r.Hello(tk, &hc, 0)
	flight := fakeServer(t, tk, hello)
	copy(flight[HeaderLen+6:], helloRetryRandom[:])
	if _, _, err := r.Read(flight); err != ErrHelloRetry {
		t.Fatalf("err %v, want ErrHelloRetry", err)
	}
}

// FuzzResumerRead feeds a Resumer that sent its ClientHello arbitrary
// server bytes (records, or, for an input that does not start like one,
// a valid ServerHello and those bytes sealed under the server's handshake
// key): it must never panic, consume more than it was given, or report
// done unless a Finished verified (a fuzzer cannot forge one).
func FuzzResumerRead(f *testing.F) {
	tk := testTicket(tls.TLS_AES_128_GCM_SHA256)
	hc := HelloConfig{Group: tls.X25519}
	var seedR Resumer
	hello, err := seedR.Hello(tk, &hc, 0)
	if err != nil {
		f.Fatal(err)
	}
	flight := fakeServer(f, tk, hello)
	f.Add(flight)
	f.Add(flight[:HeaderLen+10])
	shEnd := HeaderLen + (int(flight[3])<<8 | int(flight[4]))
	f.Add(flight[:shEnd])
	f.Add([]byte{TypeAlert, 3, 3, 0, 2, 2, 40})
	f.Add([]byte{TypeHandshake, 3, 3, 0, 4, 2, 0, 0, 0})
	hrr := bytes.Clone(flight[:shEnd])
	copy(hrr[HeaderLen+6:], helloRetryRandom[:])
	f.Add(hrr)
	// Sealed seeds: the plaintext of the encrypted handshake record.
	_, _, enc := fakeServerParts(f, tk, hello, nil, nil)
	f.Add(enc)
	f.Add(enc[:6])
	_, _, enc = fakeServerParts(f, tk, hello, nil, []byte{0, 16, 0, 5, 0, 3, 2, 'h', '2', 0, 10, 0, 4, 0, 2, 0, 29})
	f.Add(enc)
	f.Add([]byte{20, 0, 0, 32})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Resumer
		hello, err := r.Hello(tk, &hc, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && b[0] != TypeHandshake && b[0] != TypeAlert {
			// Not a record: the plaintext of the encrypted handshake
			// record after a valid ServerHello for this hello, so that
			// EncryptedExtensions and Finished are reached.
			sh, k, _ := fakeServerParts(t, tk, hello, nil, nil)
			b = Seal(sh, k, TypeHandshake, b)
		}
		n, done, err := r.Read(b)
		if n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		if done && err == nil {
			t.Fatal("a handshake completed on bytes no server made for this hello")
		}
	})
}

// FuzzParseSession: crypto/tls's session encoding, as a cache gets it,
// never panics the parser, and what parses has a PSK of its suite's size.
func FuzzParseSession(f *testing.F) {
	seed := []byte{3, 4, 2, 0x13, 1, 0, 0, 0, 0, 0, 0, 0, 1, 32}
	seed = append(seed, bytes.Repeat([]byte{9}, 32)...)
	seed = append(seed, 0, 0, 0, 0, 0) // extra; EMS, early data
	seed = append(seed, 0, 0, 6, 0, 0, 1, 'x', 0, 0, 0, 0, 0)
	seed = append(seed, 0, 0, 0, 0, 0x7f, 0, 0, 0, 0, 0, 0, 42)
	if _, _, err := parseSessionBytes([]byte("ticket"), seed); err != nil {
		f.Fatalf("the seed: %v", err)
	}
	f.Add(seed)
	f.Add([]byte{3, 3, 2, 0xc0, 0x2f})
	f.Fuzz(func(t *testing.T, b []byte) {
		tk, certs, err := parseSessionBytes([]byte("ticket"), b)
		if err != nil {
			return
		}
		chainsNotAfter(certs, "x") // walks the certificates' bytes without a panic
		if suiteKnown(tk.Suite, len(tk.PSK())) != nil {
			t.Fatalf("suite %x with a %d-byte PSK", tk.Suite, len(tk.PSK()))
		}
	})
}

// FuzzNewSessionTicket: a server's NewSessionTicket body never panics the
// parser; what parses has a label and a lifetime within 7 days.
func FuzzNewSessionTicket(f *testing.F) {
	f.Add([]byte{0, 0, 0x1c, 0x20, 1, 2, 3, 4, 1, 0, 0, 3, 'a', 'b', 'c', 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 0, 0, 1, 'a', 0, 0})
	f.Add([]byte{0, 0, 0, 1, 1, 2, 3, 4, 0, 0, 0, 0, 0})
	res := bytes.Repeat([]byte{5}, 32)
	f.Fuzz(func(t *testing.T, b []byte) {
		tk, err := parseNewSessionTicket(b, tls.TLS_AES_128_GCM_SHA256, res, 1000, 0)
		if err != nil {
			return
		}
		if len(tk.Label) == 0 || tk.UseBy-1 > maxTicketLifetime || len(tk.PSK()) != 32 {
			t.Fatalf("ticket %+v", tk)
		}
	})
}
