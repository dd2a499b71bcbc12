// Package shardtest is a scripted HTTP/1.1 streaming server for the tests of
// the shard and engine packages: the request path picks a normal stream or a
// fault, and the server counts connections and concurrent requests so tests
// can check keep-alive reuse and the concurrency cap from the server side.
package shardtest

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is a small streaming server whose behaviour is chosen by the
// request path, so every fault can be produced deterministically:
//
//	/ok/N        200, chunked SSE: N token chunks, a usage chunk, [DONE]
//	/close/N     as /ok/N with "Connection: close"
//	/drop/N      as /ok/N, then the idle connection is closed after 20 ms
//	/hangup/N    as /ok/N advertising "Keep-Alive: timeout=5, max=100",
//	             then the connection is closed at once
//	/hangup-quiet/N as /hangup/N without the Keep-Alive header
//	/lateclose/N as /hangup/N, but the connection is closed 5 to 90 ms
//	             after the answer, unread, as llama.cpp's server does: a
//	             request that reached it in between dies with it
//	/lateclose-quiet/N as /lateclose/N without the Keep-Alive header
//	/idle/N      as /ok/N, then the server waits 200 ms for the next
//	             request and closes the connection if none came (a
//	             keep-alive timeout; IdleClosed counts them)
//	/kamax/N     as /ok/1 with "Keep-Alive: timeout=5, max=N"; the server
//	             closes the connection right after its Nth response
//	/eof/N       as /ok/N with neither length nor chunking: the body ends
//	             when the server closes the connection
//	/500         500 Internal Server Error
//	/reset-head  reset before any response byte
//	/reset-mid   head and 2 token chunks, then a reset
//	/malformed   head, then a malformed chunk size
//	/stall       head and 1 token chunk, then silence until the test ends
//	/empty       200 with only [DONE]: no token event
//	/pool        200 with a Content-Length JSON body carrying usage
//	/slow/MS     as /ok/3 after sleeping MS milliseconds
//	/flood       head, then SSE comments (": ping") without end, as fast as
//	             the client reads them
//	/flood-tokens head, then token chunks without end, as fast as read
//	/endless     head, then one SSE line that never ends
//
// A query (?i=7) is ignored by the answer; it tells requests apart for
// Repeated.
type Server struct {
	ln   net.Listener
	Addr netip.AddrPort
	// Accepted counts connections, Requests requests, MaxActive the most
	// requests being answered at once.
	Accepted atomic.Int64
	Requests atomic.Int64
	// IdleClosed counts connections closed by /idle's timeout.
	IdleClosed atomic.Int64
	// Dropped counts connections /drop closed.
	Dropped atomic.Int64
	// hangingUp counts the answers after which /hangup, /lateclose and
	// their quiet forms close the connection, each counted before its
	// answer is written; hungUp counts those closes, each after it.
	hangingUp, hungUp atomic.Int64
	// Repeated counts requests whose path and query the server had read
	// before: a request sent twice.
	Repeated atomic.Int64
	seen     sync.Map
	// workers, when not nil, bounds the connections served at once (see
	// NewLimited).
	workers   chan struct{}
	alternate atomic.Int64 // requests to /alternate
	MaxActive atomic.Int64
	active    atomic.Int64
	stop      chan struct{}
	tls       *tls.Config
	wg        sync.WaitGroup
	peersMu   sync.Mutex
	peers     map[netip.Addr]int
}

// HungUp reports whether every connection that /hangup, /lateclose or
// their quiet forms answered has been closed: a client that has read an
// answer of theirs, and then sees HungUp true, has the close in its socket
// (on loopback the FIN reaches the client's socket within the server's
// close).
func (s *Server) HungUp() bool {
	// hungUp first: it never passes hangingUp, so a hungUp at least the
	// later hangingUp means every answer counted by then was closed.
	closed := s.hungUp.Load()
	return closed >= s.hangingUp.Load()
}

// hangUp writes answer and closes c after wait, counting both for HungUp.
func (s *Server) hangUp(c conn, answer []byte, wait time.Duration) {
	s.hangingUp.Add(1)
	c.Write(answer)
	if wait > 0 {
		time.Sleep(wait)
	}
	c.raw.Close()
	s.hungUp.Add(1)
}

// Peers counts the accepted connections by their remote address.
func (s *Server) Peers() map[netip.Addr]int {
	s.peersMu.Lock()
	defer s.peersMu.Unlock()
	out := make(map[netip.Addr]int, len(s.peers))
	for a, n := range s.peers {
		out[a] = n
	}
	return out
}

// New starts a Server on a loopback port; it stops when the test ends.
func New(t testing.TB) *Server { return start(t, nil) }

// NewLimited starts a server that serves at most workers connections at
// once, as a server with a fixed pool of HTTP threads does (llama.cpp's):
// a connection beyond them is accepted and waits, unread, for a worker.
func NewLimited(t testing.TB, workers int) *Server {
	return startWith(t, nil, make(chan struct{}, workers))
}

// NewTLS starts a Server that speaks TLS with a fresh self-signed
// certificate for 127.0.0.1, and returns a client configuration that trusts
// it.
func NewTLS(t testing.TB) (*Server, *tls.Config) { return NewTLSWith(t, nil) }

// NewTLSWith is NewTLS with the server's configuration edited by edit
// (e.g. a MaxVersion or cipher suites), if not nil.
func NewTLSWith(t testing.TB, edit func(*tls.Config)) (*Server, *tls.Config) {
	cert, pool := selfSigned(t)
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if edit != nil {
		edit(cfg)
	}
	s := start(t, cfg)
	return s, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "stampede test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

func start(t testing.TB, tlsConfig *tls.Config) *Server { return startWith(t, tlsConfig, nil) }

func startWith(t testing.TB, tlsConfig *tls.Config, workers chan struct{}) *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{ln: ln, Addr: netip.MustParseAddrPort(ln.Addr().String()), stop: make(chan struct{}), tls: tlsConfig, workers: workers}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(s.close)
	return s
}

// StopListening closes the listener, so new connections are refused.
func (s *Server) StopListening() { s.ln.Close() }

func (s *Server) close() {
	close(s.stop)
	s.ln.Close()
	s.wg.Wait()
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.Accepted.Add(1)
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
			s.peersMu.Lock()
			if s.peers == nil {
				s.peers = map[netip.Addr]int{}
			}
			s.peers[ap.Addr()]++
			s.peersMu.Unlock()
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(c.(*net.TCPConn))
		}()
	}
}

func (s *Server) handle(raw *net.TCPConn) {
	defer raw.Close()
	go func() { <-s.stop; raw.Close() }()
	if s.workers != nil {
		select {
		case s.workers <- struct{}{}:
			defer func() { <-s.workers }()
		case <-s.stop:
			return
		}
	}
	c := conn{Conn: raw, raw: raw}
	if s.tls != nil {
		c.Conn = tls.Server(raw, s.tls)
	}
	r := bufio.NewReader(c)
	for served := 0; ; {
		path, err := readRequest(r)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				// Counted once closed, so that a test that waits for the
				// count sends after the close, not just before it.
				raw.Close()
				s.IdleClosed.Add(1)
			}
			return
		}
		s.Requests.Add(1)
		if _, again := s.seen.LoadOrStore(path, true); again {
			s.Repeated.Add(1)
		}
		raw.SetReadDeadline(time.Time{})
		n := s.active.Add(1)
		for m := s.MaxActive.Load(); n > m && !s.MaxActive.CompareAndSwap(m, n); m = s.MaxActive.Load() {
		}
		keep := s.respond(c, path, served)
		served++
		s.active.Add(-1)
		if !keep {
			return
		}
	}
}

// readRequest reads one request head and its Content-Length body.
func readRequest(r *bufio.Reader) (path string, err error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	parts := strings.Fields(line)
	if len(parts) < 2 {
		return "", fmt.Errorf("bad request line %q", line)
	}
	length := 0
	for {
		h, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		h = strings.TrimSpace(h)
		if h == "" {
			break
		}
		if k, v, ok := strings.Cut(h, ":"); ok && strings.EqualFold(k, "content-length") {
			length, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if _, err := r.Discard(length); err != nil {
		return "", err
	}
	return parts[1], nil
}

const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"

// Response is a 200 SSE stream of n token chunks, a usage chunk and
// [DONE], as /ok/N answers, with the header lines fields (each ending in
// CRLF) added to its head.
func Response(n int, fields string) []byte {
	return []byte(sseHead + fields + "\r\n" + streamBody(n))
}

func chunk(payload string) string {
	return strconv.FormatInt(int64(len(payload)), 16) + "\r\n" + payload + "\r\n"
}

func tokenChunk(i int) string {
	return chunk(`data: {"id":"x","choices":[{"index":0,"text":"t` + strconv.Itoa(i) + `"}]}` + "\n\n")
}

func streamBody(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(tokenChunk(i))
	}
	b.WriteString(chunk(`data: {"id":"x","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":` + strconv.Itoa(n) + `}}` + "\n\n"))
	b.WriteString(chunk("data: [DONE]\n\n"))
	b.WriteString("0\r\n\r\n")
	return b.String()
}

// respond answers one request and says whether the connection stays open.
// conn is the connection a response is written to (TLS or not) and the
// TCP socket under it, whose linger setting turns a close into a reset.
type conn struct {
	net.Conn
	raw *net.TCPConn
}

func (c conn) reset() {
	c.raw.SetLinger(0)
	c.raw.Close()
}

// served counts the responses c carried before this one.
func (s *Server) respond(c conn, path string, served int) bool {
	path, _, _ = strings.Cut(path, "?")
	kind, arg, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	n, _ := strconv.Atoi(arg)
	switch kind {
	case "ok":
		_, err := c.Write([]byte(sseHead + "\r\n" + streamBody(n)))
		return err == nil
	case "slow":
		time.Sleep(time.Duration(n) * time.Millisecond)
		_, err := c.Write([]byte(sseHead + "\r\n" + streamBody(3)))
		return err == nil
	case "drop":
		// A keep-alive response, then the server closes the idle
		// connection, as servers do when their keep-alive timeout expires.
		c.Write([]byte(sseHead + "\r\n" + streamBody(n)))
		time.Sleep(20 * time.Millisecond)
		c.raw.Close()
		s.Dropped.Add(1)
		return false
	case "close":
		c.Write([]byte(sseHead + "Connection: close\r\n\r\n" + streamBody(n)))
		return false
	case "hangup":
		s.hangUp(c, Response(n, "Keep-Alive: timeout=5, max=100\r\n"), 0)
		return false
	case "hangup-quiet":
		s.hangUp(c, Response(n, ""), 0)
		return false
	case "lateclose", "lateclose-quiet":
		fields := "Keep-Alive: timeout=5, max=100\r\n"
		if kind == "lateclose-quiet" {
			fields = ""
		}
		s.hangUp(c, Response(n, fields), time.Duration(5+mrand.IntN(86))*time.Millisecond)
		return false
	case "idle":
		_, err := c.Write([]byte(sseHead + "\r\n" + streamBody(n)))
		c.raw.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		return err == nil
	case "kamax":
		_, err := c.Write(Response(1, "Keep-Alive: timeout=5, max="+strconv.Itoa(n)+"\r\n"))
		return err == nil && served+1 < n
	case "eof":
		var b strings.Builder
		for i := range n {
			b.WriteString("data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"text\":\"t" + strconv.Itoa(i) + "\"}]}\n\n")
		}
		b.WriteString("data: [DONE]\n\n")
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + b.String()))
		return false
	case "500":
		c.Write([]byte("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\noops!"))
		return true
	case "alternate":
		// Every second request to this path answers 503, the others n
		// tokens.
		if s.alternate.Add(1)%2 == 0 {
			_, err := c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"))
			return err == nil
		}
		_, err := c.Write([]byte(sseHead + "\r\n" + streamBody(n)))
		return err == nil
	case "reset-head":
		c.reset()
		return false
	case "reset-mid":
		c.Write([]byte(sseHead + "\r\n" + tokenChunk(0) + tokenChunk(1)))
		time.Sleep(20 * time.Millisecond)
		c.reset()
		return false
	case "malformed":
		c.Write([]byte(sseHead + "\r\n" + tokenChunk(0) + "zz\r\n"))
		return true
	case "stall":
		c.Write([]byte(sseHead + "\r\n" + tokenChunk(0)))
		<-s.stop
		return false
	case "empty":
		c.Write([]byte(sseHead + "\r\n" + chunk("data: [DONE]\n\n") + "0\r\n\r\n"))
		return true
	case "flood":
		flood(c, sseHead+"\r\n", chunk(strings.Repeat(": ping\n\n", 2000)))
		return false
	case "flood-tokens":
		var b strings.Builder
		for i := range 200 {
			b.WriteString(tokenChunk(i))
		}
		flood(c, sseHead+"\r\n", b.String())
		return false
	case "endless":
		flood(c, sseHead+"\r\n"+chunk("data: "), chunk(strings.Repeat("x", 16<<10)))
		return false
	case "pool":
		body := `{"object":"list","data":[],"usage":{"prompt_tokens":7,"total_tokens":7}}`
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body))
		return true
	}
	c.Write([]byte("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"))
	return true
}

// flood writes head, then body over and over until the client goes away
// (or the server stops).
func flood(c conn, head, body string) {
	if _, err := c.Write([]byte(head)); err != nil {
		return
	}
	b := []byte(body)
	for {
		if _, err := c.Write(b); err != nil {
			return
		}
	}
}

// Wire encodes a POST to path with a small JSON body.
func Wire(path string) []byte { return WireBody(path, []byte("{}")) }

// WireBody encodes a POST to path with the given body.
func WireBody(path string, body []byte) []byte {
	head := "POST " + path + " HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	return append([]byte(head), body...)
}

// Pipe connects c to the server at addr, first writing sent (what the
// caller already read of c), and copies both ways until either side ends:
// a test's front that hands some connections on to a real server.
func Pipe(c net.Conn, addr netip.AddrPort, sent []byte) {
	b, err := net.Dial("tcp", addr.String())
	if err != nil {
		return
	}
	defer b.Close()
	if len(sent) > 0 {
		if _, err := b.Write(sent); err != nil {
			return
		}
	}
	go io.Copy(b, c)
	io.Copy(c, b)
}
