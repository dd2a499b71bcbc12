package shard

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/internal/tls13"
	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/metrics/metricstest"
	"github.com/stampede-bench/stampede/shard/shardtest"
	"github.com/stampede-bench/stampede/sse"
	"golang.org/x/sys/unix"
)

// TestTLSOnLoop: streams over TLS run on the shard loop with keep-alive
// reuse, every read kernel-stamped; connections the server closes are
// reopened with a resumed session; the handshake is its own phase.
func TestTLSOnLoop(t *testing.T) {
	shardtest.HoldKernelStamps(t) // the test asserts every read was stamped
	srv, tlsConfig := shardtest.NewTLS(t)
	paths := append(strings.Fields(strings.Repeat("/ok/5 ", 12)), "/close/2", "/close/2", "/close/2", "/500", "/reset-mid")
	data, health := runPaths(t, srv, paths, run{slots: 2, limit: 2, streaming: true, stamps: true, tls: PrepareTLS(tlsConfig, 2)})
	for _, res := range data.Results[:15] {
		want := "t0t1t2t3t4"
		if strings.HasPrefix(paths[res.Index], "/close") {
			want = "t0t1"
		}
		if !res.Success || res.GeneratedText != want || res.TTFTNs <= 0 {
			t.Errorf("request %d (%s): success %v, text %q, error %q", res.Index, paths[res.Index], res.Success, res.GeneratedText, res.Error)
		}
		checkBreakdown(t, res)
		if b := res.Breakdown; b.NewConn != (b.TLSNs > 0) {
			t.Errorf("request %d: new connection %v with TLS handshake %d ns", res.Index, b.NewConn, b.TLSNs)
		}
	}
	if r := data.Results[15]; r.Error != "Internal Server Error" {
		t.Errorf("500 over TLS: %q", r.Error)
	}
	if r := data.Results[16]; r.Success || !strings.Contains(r.Error, "after 2 token events") {
		t.Errorf("reset over TLS: %q", r.Error)
	}
	h := health[0]
	if h.TLSHandshakes != srv.Accepted.Load() || h.TLSHandshakes < 4 {
		t.Errorf("%d handshakes for %d accepted connections", h.TLSHandshakes, srv.Accepted.Load())
	}
	// Every connection after the first two (opened together, before any
	// ticket) resumes.
	if h.TLSResumed < h.TLSHandshakes-2 {
		t.Errorf("%d of %d handshakes resumed", h.TLSResumed, h.TLSHandshakes)
	}
	if h.Reads == 0 || h.StampedReads != h.Reads {
		t.Errorf("kernel stamps on %d of %d reads", h.StampedReads, h.Reads)
	}
	if h.Sent != int64(len(paths)) || h.TxStamped != h.Sent {
		t.Errorf("sent %d, kernel-stamped %d; want %d of each", h.Sent, h.TxStamped, len(paths))
	}
	if !strings.HasPrefix(h.TLSPath, TLSPathLoop) || h.TLSHandshakeCPU <= 0 || h.CPUTime < h.TLSHandshakeCPU {
		t.Errorf("path %q, handshake CPU %v, shard CPU %v", h.TLSPath, h.TLSHandshakeCPU, h.CPUTime)
	}
}

// clientGoroutines counts the goroutines outside the test server.
func clientGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if len(g) > 0 && !bytes.Contains(g, []byte("shardtest.")) {
			count++
		}
	}
	return count
}

// TestTLSStreamsNeedNoGoroutines: 500 TLS streams in flight on one shard
// add no goroutine per connection once their handshakes are done (the
// handshakers leave when idle).
func TestTLSStreamsNeedNoGoroutines(t *testing.T) {
	srv, tlsConfig := shardtest.NewTLS(t)
	const n = 500
	before := clientGoroutines()
	sh, rec, wg := startStalledTLS(t, srv, tlsConfig, n)
	for srv.Requests.Load() < n {
		time.Sleep(5 * time.Millisecond)
	}
	// The handshakers finish their last result and leave.
	var during int
	for range 200 {
		if during = clientGoroutines(); during <= before+2 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	sh.Abort()
	wg.Wait()
	if during > before+2 {
		t.Errorf("%d goroutines outside the server with %d TLS streams in flight, %d before; want the loop's alone", during, n, before)
	}
	for _, r := range metricstest.Merge(n, rec).Results {
		if r.Error != "cancelled" || r.ChunkEvents != 1 {
			t.Fatalf("request %d: %d events, error %q; want the first token, then cancelled", r.Index, r.ChunkEvents, r.Error)
		}
	}
}

// keyUpdateServer accepts one TLS 1.3 connection, reads the first
// request through crypto/tls, then writes its own records: a KeyUpdate
// asking the client to update too, and the response under the new key
// (each answer's last record split across two segments). The
// second request on the connection can only be read by crypto/tls if the
// client sent its KeyUpdate and sealed the request with its updated key.
// With idle set, the server sends its KeyUpdate (not asking for one back)
// after its first whole answer instead, while the client's connection is
// idle, then closes idle.
func keyUpdateServer(ln net.Listener, cert tls.Certificate, got chan<- string, records *recordCounter, idle chan struct{}) {
	nc, err := ln.Accept()
	if err != nil {
		got <- err.Error()
		return
	}
	defer nc.Close()
	c := &countingConn{Conn: nc, n: records}
	keys := &keyLog{}
	// No tickets: the server's first record after the handshake is then
	// number 0 under its first traffic key.
	sc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}, SessionTicketsDisabled: true, KeyLogWriter: keys,
		MinVersion: tls.VersionTLS13})
	r := bufio.NewReader(sc)
	answer := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		sseChunk("data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n") + sseChunk("data: [DONE]\n\n") + "0\r\n\r\n"
	var key *tls13.Key
	for i := range 2 {
		req, err := http.ReadRequest(r)
		if err != nil {
			got <- "request " + strconv.Itoa(i) + ": " + err.Error()
			return
		}
		io.Copy(io.Discard, req.Body)
		got <- req.URL.Path
		var out []byte
		if i == 0 {
			if key, err = tls13.NewKey(sc.ConnectionState().CipherSuite, keys.server); err != nil {
				got <- err.Error()
				return
			}
		}
		if i == 0 && idle != nil {
			c.Write(tls13.Seal(nil, key, tls13.TypeApplicationData, []byte(answer)))
			c.Write(tls13.Seal(nil, key, tls13.TypeHandshake, []byte{tls13.MsgKeyUpdate, 0, 0, 1, 0}))
			key.Update()
			close(idle)
			continue
		}
		if i == 0 {
			out = tls13.Seal(nil, key, tls13.TypeHandshake, []byte{tls13.MsgKeyUpdate, 0, 0, 1, 1})
			key.Update()
		}
		out = tls13.Seal(out, key, tls13.TypeApplicationData, []byte(answer))
		// The last record in two segments: the read that completes it
		// completes the answer, and the connection is then reused.
		c.Write(out[:len(out)-7])
		time.Sleep(20 * time.Millisecond)
		c.Write(out[len(out)-7:])
	}
}

// startKeyUpdateServer starts keyUpdateServer on a loopback port; got
// receives the paths it read (or its errors), records counts the client's
// protected records.
func startKeyUpdateServer(t *testing.T, idle chan struct{}) (netip.AddrPort, chan string, *recordCounter) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got, records := make(chan string, 4), &recordCounter{}
	go keyUpdateServer(ln, testCert(t), got, records, idle)
	return netip.MustParseAddrPort(ln.Addr().String()), got, records
}

func sseChunk(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }

func testCert(t *testing.T) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestTLSKeyUpdate: a KeyUpdate from the server moves the loop's read key
// (the answer after it is read), and, asked to, the loop sends its own and
// seals the next request with its new write key (crypto/tls on the server
// reads it).
func TestTLSKeyUpdate(t *testing.T) {
	addr, got, records := startKeyUpdateServer(t, nil)
	srv := &shardtest.Server{Addr: addr}
	cfg := PrepareTLS(&tls.Config{InsecureSkipVerify: true}, 1)
	data, _ := runPaths(t, srv, []string{"/first", "/second"}, run{slots: 1, limit: 1, streaming: true, tls: cfg})
	for _, r := range data.Results {
		if !r.Success || r.GeneratedText != "a" {
			t.Errorf("request %d: success %v, text %q, error %q", r.Index, r.Success, r.GeneratedText, r.Error)
		}
	}
	for _, want := range []string{"/first", "/second"} {
		if p := <-got; p != want {
			t.Errorf("server read %q, want %q", p, want)
		}
	}
	// The client's protected records: its Finished, the first request,
	// its KeyUpdate, the second request.
	if n := records.count(); n != 4 {
		t.Errorf("client sent %d protected records; want 4 (Finished, request, KeyUpdate, request)", n)
	}
}

// TestTLSIdleKeyUpdate: a KeyUpdate that reaches a connection between
// requests moves its read key, and the connection carries the next
// request (before, any byte on an idle connection closed it, and the next
// request, on a server that accepts once, failed).
func TestTLSIdleKeyUpdate(t *testing.T) {
	idle := make(chan struct{})
	addr, _, _ := startKeyUpdateServer(t, idle)
	reqs := []Request{{Wire: shardtest.Wire("/first")}, {Wire: shardtest.Wire("/second")}}
	q := NewQueueOf(reqs, 1)
	clock := NewClock()
	rec := metrics.NewRecorder(metrics.Options{KeepText: true})
	sh, err := New(Config{CPU: -1, Addr: addr, Streaming: true, Kind: sse.Completions,
		Queue: q, Slots: 1, ConnectTimeout: 5 * time.Second, RequestTimeout: 10 * time.Second,
		Clock: clock, Recorder: rec, TLS: PrepareTLS(&tls.Config{InsecureSkipVerify: true}, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(sh.Run)
	q.Release(0, clock.Now())
	sh.WakeIfSleeping()
	<-idle // the first answer and the KeyUpdate after it were sent
	q.Release(1, clock.Now())
	sh.WakeIfSleeping()
	<-q.Done()
	sh.Stop()
	wg.Wait()
	for _, r := range metricstest.Merge(2, rec).Results {
		if !r.Success || r.GeneratedText != "a" {
			t.Errorf("request %d: success %v, text %q, error %q", r.Index, r.Success, r.GeneratedText, r.Error)
		}
	}
	if h := sh.Health(); h.Connections != 1 {
		t.Errorf("%d connections; want the one, reused", h.Connections)
	}
}

// recordCounter counts the protected records in a TLS byte stream.
type recordCounter struct {
	mu      sync.Mutex
	hdr     []byte
	skip    int
	records int
}

func (r *recordCounter) feed(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(b) > 0 {
		if r.skip > 0 {
			n := min(r.skip, len(b))
			r.skip -= n
			b = b[n:]
			continue
		}
		n := min(tls13.HeaderLen-len(r.hdr), len(b))
		r.hdr = append(r.hdr, b[:n]...)
		b = b[n:]
		if len(r.hdr) == tls13.HeaderLen {
			if r.hdr[0] == tls13.TypeApplicationData {
				r.records++
			}
			r.skip = int(r.hdr[3])<<8 | int(r.hdr[4])
			r.hdr = r.hdr[:0]
		}
	}
}

func (r *recordCounter) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.records
}

type countingConn struct {
	net.Conn
	n *recordCounter
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.feed(p[:n])
	return n, err
}

// fixedLoopTLS is a connection's record layer whose both keys are
// fuzzKey's, its request sent.
func fixedLoopTLS(tb testing.TB) *loopTLS {
	secret := bytes.Repeat([]byte{7}, 32)
	t := &loopTLS{sent: true}
	if err := t.records.Init(tls.VersionTLS13, tls.TLS_AES_128_GCM_SHA256, secret, secret); err != nil {
		tb.Fatal(err)
	}
	return t
}

// fuzzKey is a fixed AES-128-GCM traffic key, so sealed seeds stay valid.
func fuzzKey(tb testing.TB) *tls13.Key {
	k, err := tls13.NewKey(tls.TLS_AES_128_GCM_SHA256, bytes.Repeat([]byte{7}, 32))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// loopTLSConn is a shard and a busy TLS connection on it, read through
// readTLS from a socket pair whose other end gets records sealed under the
// same fixed key, the response head already parsed.
func loopTLSConn(tb testing.TB) (s *Shard, c *conn, peer int, seal *tls13.Key) {
	tb.Helper()
	return loopTLSConnWith(tb, nil)
}

// loopTLSConnWith is loopTLSConn; with a store, the connection's handshake
// was the loop's own (its records take the server's tickets for the
// store), and a NewSessionTicket comes before the response head.
func loopTLSConnWith(tb testing.TB, store *ticketStore) (s *Shard, c *conn, peer int, seal *tls13.Key) {
	tb.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Close(fds[1]) })
	rec := metrics.NewRecorder(metrics.Options{})
	s, err = New(Config{Slots: 1, Streaming: true, Kind: sse.Completions, Recorder: rec, Queue: NewQueue(1, 0), Clock: NewClock(), RequestTimeout: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	s.clock = newStampClock(s.cfg.Clock)
	tb.Cleanup(s.closeAll)
	c = &conn{fd: fds[0], heapIndex: -1, state: connBusy, tls: fixedLoopTLS(tb)}
	s.setConn(c.fd, c)
	c.Init(s.decoder, true)
	rec.Begin(&c.stream, 0, 1, 0, 0)
	for range 4096 {
		c.stream.Token(0, nil)
	}
	rec.Begin(&c.stream, 0, 1, 0, 0)
	c.beginRequest(&Request{Wire: []byte("x")})
	c.written = 1
	seal = fuzzKey(tb)
	var head []byte
	if store != nil {
		c.tls.records.TakeOwnTickets(store, bytes.Repeat([]byte{5}, 32), &tls13.Ticket{})
		head = tls13.Seal(head, seal, tls13.TypeHandshake, []byte{4, 0, 0, 16, 0, 0, 0, 60, 1, 2, 3, 4, 1, 9, 0, 2, 'a', 'b', 0, 0})
	}
	head = tls13.Seal(head, seal, tls13.TypeApplicationData, []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"))
	unix.Write(fds[1], head)
	s.readTLS(c)
	if c.state != connBusy || !c.gotBytes {
		tb.Fatalf("head not read: state %d", c.state)
	}
	return s, c, fds[1], seal
}

// TestTLSLoopEventAllocatesNothing: on the loop, a token event's record
// (read, opened in place, parsed, recorded) allocates nothing, also when
// a record arrives in two reads, and on a connection whose handshake was
// the loop's own (whose records took the server's ticket).
func TestTLSLoopEventAllocatesNothing(t *testing.T) {
	t.Run("crypto/tls's handshake", func(t *testing.T) { checkLoopEventAllocs(t, nil) })
	t.Run("own handshake", func(t *testing.T) {
		store := &ticketStore{}
		checkLoopEventAllocs(t, store)
		if store.get(time.Now().UnixMilli()) == nil {
			t.Error("the server's ticket did not reach the store")
		}
	})
}

func checkLoopEventAllocs(t *testing.T, store *ticketStore) {
	s, c, peer, seal := loopTLSConnWith(t, store)
	const runs = 300
	event := chunkedEvent(`{"choices":[{"index":0,"text":"x"}]}`)
	var records [][]byte
	for range runs + 2 {
		records = append(records, tls13.Seal(nil, seal, tls13.TypeApplicationData, event))
	}
	i := 0
	allocs := testing.AllocsPerRun(runs, func() {
		rec := records[i]
		i++
		unix.Write(peer, rec[:9])
		s.readTLS(c)
		unix.Write(peer, rec[9:])
		s.readTLS(c)
	})
	if allocs != 0 {
		t.Errorf("%.2f allocations per token event on the loop over TLS; want 0", allocs)
	}
	if c.state != connBusy || c.stream.TokenEvents() != i {
		t.Errorf("state %d, %d events after %d records", c.state, c.stream.TokenEvents(), i)
	}
}

// BenchmarkTLSLoopEventPath measures one token event's record on the
// loop: recvmsg, opening in place, de-chunking, SSE parsing, recording
// (the write to the socket pair counts too).
func BenchmarkTLSLoopEventPath(b *testing.B) {
	s, c, peer, seal := loopTLSConn(b)
	event := chunkedEvent(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`)
	var stream []byte
	for range 1024 {
		stream = tls13.Seal(stream, seal, tls13.TypeApplicationData, event)
	}
	n, _ := tls13.Split(stream)
	b.ReportAllocs()
	b.SetBytes(int64(len(event)))
	b.ResetTimer()
	for i := range b.N {
		if i%1024 == 0 && i > 0 {
			b.StopTimer()
			// The next 1,024 records continue the sequence numbers.
			stream = stream[:0]
			for range 1024 {
				stream = tls13.Seal(stream, seal, tls13.TypeApplicationData, event)
			}
			if i%4096 == 0 {
				s.cfg.Recorder.Begin(&c.stream, 0, 1, 0, 0)
			}
			b.StartTimer()
		}
		off := i % 1024 * n
		unix.Write(peer, stream[off:off+n])
		s.readTLS(c)
	}
	if c.state != connBusy {
		b.Fatalf("connection ended: %d", c.state)
	}
}

// TestTLSLoopReusedResetIsNotResent: on the loop as on plain TCP, a
// request whose reused TLS connection the server resets before answering
// fails, and is never sent again.
func TestTLSLoopReusedResetIsNotResent(t *testing.T) {
	srv, tlsConfig := shardtest.NewTLS(t)
	data, _ := runPaths(t, srv, []string{"/ok/1", "/reset-head"}, run{slots: 1, limit: 1, streaming: true, tls: PrepareTLS(tlsConfig, 1)})
	if !data.Results[0].Success {
		t.Errorf("request 0: %q", data.Results[0].Error)
	}
	if r := data.Results[1]; r.Success || !strings.Contains(r.Error, "on a reused keep-alive connection (not sent again)") {
		t.Errorf("request 1: success %v, error %q; want a failure on the reused connection", r.Success, r.Error)
	}
	if got := srv.Requests.Load(); got != 2 {
		t.Errorf("server saw %d requests; want 2, each once", got)
	}
	if got := srv.Accepted.Load(); got != 1 {
		t.Errorf("server accepted %d connections; want 1", got)
	}
}

// TestTLSLoopHandshakeFailure: a handshake the client refuses (an
// untrusted certificate) fails its request with the reason, on the loop.
func TestTLSLoopHandshakeFailure(t *testing.T) {
	srv, _ := shardtest.NewTLS(t)
	data, health := runPaths(t, srv, []string{"/ok/1", "/ok/1"}, run{slots: 2, streaming: true, tls: PrepareTLS(&tls.Config{ServerName: "127.0.0.1"}, 2)})
	for _, r := range data.Results {
		if r.Success || !strings.Contains(r.Error, "TLS handshake with "+srv.Addr.String()) {
			t.Errorf("request %d: success %v, error %q", r.Index, r.Success, r.Error)
		}
	}
	if h := health[0]; h.TLSHandshakes != 2 || h.Connections != 2 {
		t.Errorf("%d handshakes on %d connections; want 2 on 2", h.TLSHandshakes, h.Connections)
	}
}

// A handshake computes only while it holds a CPU token and gives it back
// while a Read waits for the server: a second handshake runs then, and the
// first, its bytes come, waits for the token again.
func TestHandshakeCPUTokens(t *testing.T) {
	tokens := newTokenSet(1)
	first, second := newHSPipe(-1, nil), newHSPipe(-1, nil)
	first.tokens, second.tokens = tokens, tokens
	// The first handshake, on a goroutine of its own as in run: take the
	// token, compute, Read, then give the token back.
	firstHolds, startRead, readDone, finish, firstDone := make(chan struct{}), make(chan struct{}), make(chan error, 1), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(firstDone)
		first.acquire()
		close(firstHolds)
		<-startRead
		_, err := first.Read(make([]byte, 1))
		readDone <- err
		<-finish
		first.release()
	}()
	<-firstHolds
	secondHolds, releaseSecond := make(chan struct{}), make(chan struct{})
	go func() {
		second.acquire()
		close(secondHolds)
		<-releaseSecond
		second.release()
	}()
	select {
	case <-secondHolds:
		t.Fatal("a second handshake took the only token while the first computed")
	case <-time.After(50 * time.Millisecond):
	}

	close(startRead)
	<-secondHolds             // the first's Read gave its token back
	first.put([]byte("x"), 0) // as the loop does with what it read
	select {
	case <-readDone:
		t.Fatal("the first handshake's Read returned while the second held the token")
	case <-time.After(50 * time.Millisecond):
	}
	close(releaseSecond)
	if err := <-readDone; err != nil {
		t.Fatal(err)
	}
	if tokens.held() != 1 {
		t.Fatalf("after its Read the first should hold the one token; %d taken", tokens.held())
	}
	close(finish)
	<-firstDone
	if first.held || tokens.held() != 0 {
		t.Fatalf("after release: held %v, %d tokens taken", first.held, tokens.held())
	}
	if first.cpu <= 0 {
		t.Errorf("the first handshake's CPU over its spans holding a token is %v; want it counted", first.cpu)
	}
}

// mixedVersions makes a test server's connections alternate TLS 1.3 and
// TLS 1.2 (the odd ones, from the first, 1.3), as behind a load balancer
// whose backends differ; tls12 counts the TLS 1.2 ones.
func mixedVersions(tls12 *atomic.Int64) func(*tls.Config) {
	return func(cfg *tls.Config) {
		base := cfg.Clone()
		var n atomic.Int64
		cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			if n.Add(1)%2 == 1 {
				return nil, nil
			}
			tls12.Add(1)
			c := base.Clone()
			c.MaxVersion = tls.VersionTLS12
			return c, nil
		}
	}
}

// TestTLSLoopFallsBackPerConnection: the probe's handshake chooses the
// loop (TLS 1.3), then every other connection negotiates TLS 1.2; those
// carry their requests through crypto/tls on goroutines instead of
// failing them, every request succeeds with its tokens, kernel-stamped,
// and the shard counts the connections that fell back.
func TestTLSLoopFallsBackPerConnection(t *testing.T) {
	shardtest.HoldKernelStamps(t) // the test asserts every read was stamped
	var tls12 atomic.Int64
	srv, tlsConfig := shardtest.NewTLSWith(t, mixedVersions(&tls12))
	if ok, why, err := probeTLS(t.Context(), srv.Addr.String(), tlsConfig, time.Minute); err != nil || !ok {
		t.Fatalf("the probe's TLS 1.3 connection did not choose the loop: %s%v", why, err)
	}
	paths := strings.Fields(strings.Repeat("/ok/5 ", 24))
	data, health := runPaths(t, srv, paths, run{slots: 4, limit: 4, streaming: true, stamps: true, tls: PrepareTLS(tlsConfig, 4)})
	for _, res := range data.Results {
		if !res.Success || res.GeneratedText != "t0t1t2t3t4" {
			t.Errorf("request %d: success %v, text %q, error %q", res.Index, res.Success, res.GeneratedText, res.Error)
			continue
		}
		checkBreakdown(t, res)
		if b := res.Breakdown; !b.NewConn && b.TLSNs != 0 {
			t.Errorf("request %d: reused connection with TLS phase %d", res.Index, b.TLSNs)
		}
	}
	h := health[0]
	// A resumed handshake of the loop's own that met TLS 1.2 was redone
	// through crypto/tls on a fresh connection (which may have met TLS
	// 1.3, or fallen back).
	if h.TLSFallbacks == 0 || h.TLSFallbacks+h.TLSOwnRedone != tls12.Load() {
		t.Errorf("%d connections fell back and %d own handshakes were redone, the server negotiated TLS 1.2 on %d", h.TLSFallbacks, h.TLSOwnRedone, tls12.Load())
	}
	// (A TLS 1.2 server alerts on a hello that offers TLS 1.3 alone.)
	if why := h.TLSOwnWhy; h.TLSOwnRedone > 0 && why != tls13.ErrNotTLS13.Error() && why != tls13.ErrServerAlert.Error() {
		t.Errorf("own handshakes redone for %q", h.TLSOwnWhy)
	}
	if accepted := srv.Accepted.Load() - 1; h.TLSHandshakes+h.TLSOwnRedone != accepted { // the probe's
		t.Errorf("%d handshakes and %d redone for %d accepted connections", h.TLSHandshakes, h.TLSOwnRedone, accepted)
	}
	if h.Reads == 0 || h.StampedReads != h.Reads {
		t.Errorf("kernel stamps on %d of %d reads", h.StampedReads, h.Reads)
	}
	if !strings.HasPrefix(h.TLSPath, TLSPathLoop) {
		t.Errorf("path %q", h.TLSPath)
	}
}

// TestTLSLoopFallbackDeadlineAndAbort: a request on a connection that fell
// back ends at its deadline as on the loop, and an abort ends the ones in
// flight as cancelled, without waiting for the server.
func TestTLSLoopFallbackDeadlineAndAbort(t *testing.T) {
	srv, tlsConfig := shardtest.NewTLSWith(t, func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 })
	data, health := runPaths(t, srv, []string{"/stall", "/ok/3"},
		run{streaming: true, timeout: 300 * time.Millisecond, tls: PrepareTLS(tlsConfig, 2)})
	if r := data.Results[0]; r.Error != "request timed out after 300ms" {
		t.Errorf("stalled request over TLS 1.2: success %v, error %q", r.Success, r.Error)
	}
	if r := data.Results[1]; !r.Success || r.GeneratedText != "t0t1t2" {
		t.Errorf("request over TLS 1.2: success %v, text %q, error %q", r.Success, r.GeneratedText, r.Error)
	}
	if h := health[0]; h.TLSFallbacks != 2 {
		t.Errorf("%d connections fell back, want 2", h.TLSFallbacks)
	}

	// Abort, with every request sent and stalled on its goroutine.
	const n = 3
	before := clientGoroutines()
	sent := srv.Requests.Load()
	sh, rec, wg := startStalledTLS(t, srv, tlsConfig, n)
	for srv.Requests.Load() < sent+n && rec.Failed() == 0 {
		time.Sleep(time.Millisecond)
	}
	sh.Abort()
	wg.Wait()
	for _, r := range metricstest.Merge(n, rec).Results {
		if r.Error != "cancelled" {
			t.Errorf("request %d after the abort: success %v, error %q", r.Index, r.Success, r.Error)
		}
	}
	if h := sh.Health(); h.TLSFallbacks != n {
		t.Errorf("%d connections fell back, want %d", h.TLSFallbacks, n)
	}
	// The goroutines that read the fallen-back connections end too (a
	// hang here ends at go test's -timeout with every goroutine's stack).
	for clientGoroutines() > before {
		time.Sleep(time.Millisecond)
	}
}

// startStalledTLS runs a shard sending n /stall requests over TLS to srv,
// all released at once; the caller aborts it and waits on wg.
func startStalledTLS(t *testing.T, srv *shardtest.Server, tlsConfig *tls.Config, n int) (*Shard, *metrics.Recorder, *sync.WaitGroup) {
	t.Helper()
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = Request{Wire: shardtest.Wire("/stall")}
	}
	q := NewQueueOf(reqs, 0)
	clock := NewClock()
	rec := metrics.NewRecorder(metrics.Options{})
	sh, err := New(Config{CPU: -1, Addr: srv.Addr, Streaming: true, Kind: sse.Completions, Queue: q, Slots: n,
		ConnectTimeout: time.Minute, RequestTimeout: time.Minute, Clock: clock, Recorder: rec, TLS: PrepareTLS(tlsConfig, n)})
	if err != nil {
		t.Fatal(err)
	}
	wg := new(sync.WaitGroup)
	wg.Go(sh.Run)
	for i := range reqs {
		q.Release(i, clock.Now())
	}
	sh.WakeIfSleeping()
	return sh, rec, wg
}

// The token a handshaker carries from one handshake to the next goes back
// once the queue is empty: after a run of more handshakes than the pool
// has tokens, none is left held.
func TestHandshakeTokensGoBack(t *testing.T) {
	srv, tlsConfig := shardtest.NewTLS(t)
	paths := make([]string, 24)
	for i := range paths {
		paths[i] = "/ok/1"
	}
	data, health := runPaths(t, srv, paths, run{slots: 24, streaming: true, tls: PrepareTLS(tlsConfig, 24)})
	for _, r := range data.Results {
		if !r.Success {
			t.Fatalf("request %d: %q", r.Index, r.Error)
		}
	}
	var handshakes int64
	for _, h := range health {
		handshakes += int64(h.TLSHandshakes)
	}
	if handshakes != 24 {
		t.Fatalf("%d handshakes, want 24", handshakes)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		handshakers.mu.Lock()
		idle := handshakers.running == 0
		handshakers.mu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("handshakers still running 10 s after the run")
		}
		time.Sleep(time.Millisecond)
	}
	if n := handshakeCPU.tokens().held(); n != 0 {
		t.Errorf("%d CPU tokens still held after the handshakers went idle", n)
	}
}
