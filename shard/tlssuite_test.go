package shard

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/stampede-bench/stampede/internal/memlimit"
	"github.com/stampede-bench/stampede/internal/tls13"
	"github.com/stampede-bench/stampede/shard/shardtest"
)

// TestTLSChaChaServer is TestTLSChaCha's server, run by it in a process
// without AES hardware support (GODEBUG=cpu.aes=off), where crypto/tls's
// server prefers ChaCha20-Poly1305 to the AES-GCM a client with AES
// hardware lists first. It serves until its stdin closes.
func TestTLSChaChaServer(t *testing.T) {
	if os.Getenv("STAMPEDE_CHACHA_SERVER") == "" {
		t.Skip("the server of TestTLSChaCha")
	}
	srv, _ := shardtest.NewTLS(t)
	fmt.Println("listening on", srv.Addr)
	io.Copy(io.Discard, os.Stdin)
}

// TestTLSChaCha: a server that picks TLS_CHACHA20_POLY1305_SHA256 for a
// client that prefers AES-GCM is carried on the loops (the probe says so,
// and its streams, keep-alive reuse and resumed reconnects work).
func TestTLSChaCha(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestTLSChaChaServer$")
	godebug := "cpu.aes=off"
	if v := os.Getenv("GODEBUG"); v != "" {
		godebug = v + "," + godebug
	}
	cmd.Env = append(os.Environ(), "STAMPEDE_CHACHA_SERVER=1", "GODEBUG="+godebug)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	var addr netip.AddrPort
	for sc := bufio.NewScanner(stdout); sc.Scan(); {
		if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			addr = netip.MustParseAddrPort(a)
			break
		}
	}
	if !addr.IsValid() {
		t.Fatal("the server process printed no address")
	}
	go io.Copy(io.Discard, stdout)

	var mu sync.Mutex
	suites := map[uint16]int{}
	cfg := PrepareTLS(&tls.Config{InsecureSkipVerify: true, VerifyConnection: func(cs tls.ConnectionState) error {
		mu.Lock()
		suites[cs.CipherSuite]++
		mu.Unlock()
		return nil
	}}, 2)
	if ok, why, err := probeTLS(t.Context(), addr.String(), cfg, timeoutForTests); err != nil || !ok {
		t.Fatalf("probe: the loops cannot carry the server's TLS: %s%v", why, err)
	}
	srv := &shardtest.Server{Addr: addr}
	paths := append(strings.Fields(strings.Repeat("/ok/3 ", 6)), "/close/2", "/close/2", "/ok/3")
	data, health := runPaths(t, srv, paths, run{slots: 2, limit: 2, streaming: true, tls: cfg})
	for _, r := range data.Results {
		want := "t0t1t2"
		if strings.HasPrefix(paths[r.Index], "/close") {
			want = "t0t1"
		}
		if !r.Success || r.GeneratedText != want {
			t.Errorf("request %d (%s): success %v, text %q, error %q", r.Index, paths[r.Index], r.Success, r.GeneratedText, r.Error)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if suites[tls.TLS_CHACHA20_POLY1305_SHA256] == 0 || len(suites) != 1 {
		t.Fatalf("negotiated suites %v, want ChaCha20-Poly1305 only", suites)
	}
	h := health[0]
	if !strings.HasPrefix(h.TLSPath, TLSPathLoop) || h.TLSHandshakes < 3 || h.TLSResumed == 0 {
		t.Errorf("path %q, %d handshakes, %d resumed", h.TLSPath, h.TLSHandshakes, h.TLSResumed)
	}
}

// timeoutForTests bounds the probe's connect and handshake.
const timeoutForTests = 10e9

// ticketServer answers one request per connection and closes it. Each of
// its connections carries two session tickets in two records: crypto/tls's
// own, then a copy of it whose identity is prefixed "2nd|" (the same
// nonce, so the same resumption key). The server's later records are
// sealed again one sequence number on. A client that caches tickets as
// crypto/tls does resumes with the second; identities receives the
// identity of every resumption attempt.
func ticketServer(t *testing.T, ln net.Listener, identities chan<- string) {
	cert := testCert(t)
	var cfg *tls.Config
	cfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13,
		WrapSession: func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) { return cfg.EncryptTicket(cs, ss) },
		UnwrapSession: func(identity []byte, cs tls.ConnectionState) (*tls.SessionState, error) {
			identities <- string(identity[:min(4, len(identity))])
			return cfg.DecryptTicket([]byte(strings.TrimPrefix(string(identity), "2nd|")), cs)
		},
	}
	answer := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
		sseChunk("data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n") + sseChunk("data: [DONE]\n\n") + "0\r\n\r\n"
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer nc.Close()
			keys := &keyLog{}
			c := cfg.Clone()
			c.KeyLogWriter = keys
			sc := tls.Server(&ticketDoubler{Conn: nc, keys: keys}, c)
			req, err := http.ReadRequest(bufio.NewReader(sc))
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			io.WriteString(sc, answer)
		}()
	}
}

// ticketDoubler is the server's side of a ticketServer connection: it
// passes the handshake's records on, doubles the session ticket and
// re-seals the application records after it one number on.
type ticketDoubler struct {
	net.Conn
	keys    *keyLog
	key     *tls13.Key // the server's first traffic key, once seen
	in, out uint64     // sequence numbers as written and as sent
	pending []byte
}

func (d *ticketDoubler) Write(p []byte) (int, error) {
	d.pending = append(d.pending, p...)
	var out []byte
	for {
		n, err := tls13.Split(d.pending)
		if err != nil {
			return 0, err
		}
		if n == 0 {
			break
		}
		rec := append([]byte(nil), d.pending[:n]...)
		d.pending = d.pending[n:]
		out = d.record(out, rec)
	}
	if _, err := d.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// record appends to out what goes on the wire for the server's record rec.
func (d *ticketDoubler) record(out, rec []byte) []byte {
	if rec[0] != tls13.TypeApplicationData || d.keys.server == nil {
		return append(out, rec...)
	}
	if d.key == nil {
		suite := uint16(tls.TLS_AES_128_GCM_SHA256)
		if len(d.keys.server) == 48 {
			suite = tls.TLS_AES_256_GCM_SHA384
		}
		k, err := tls13.NewKey(suite, d.keys.server)
		if err != nil {
			panic(err)
		}
		// A record under a handshake key does not open with it.
		probe := *k
		if _, _, err := tls13.Open(&probe, append([]byte(nil), rec...)); err != nil {
			return append(out, rec...)
		}
		d.key = k
	}
	d.key.Seq = d.in
	typ, p, err := tls13.Open(d.key, rec)
	if err != nil {
		panic(err)
	}
	d.in++
	d.key.Seq = d.out
	out = tls13.Seal(out, d.key, typ, p)
	d.out++
	if typ == tls13.TypeHandshake && len(p) > 4 && p[0] == 4 {
		// NewSessionTicket: lifetime, age_add, nonce<1>, ticket<2>, extensions.
		body := p[4:]
		nonceEnd := 8 + 1 + int(body[8])
		label := body[nonceEnd+2 : nonceEnd+2+int(binary.BigEndian.Uint16(body[nonceEnd:]))]
		rest := body[nonceEnd+2+len(label):]
		second := append([]byte(nil), body[:nonceEnd]...)
		second = binary.BigEndian.AppendUint16(second, uint16(len(label)+4))
		second = append(append(append(second, "2nd|"...), label...), rest...)
		msg := append([]byte{4, byte(len(second) >> 16), byte(len(second) >> 8), byte(len(second))}, second...)
		out = tls13.Seal(out, d.key, tls13.TypeHandshake, msg)
		d.out++
	}
	return out
}

// TestTLSTicketsCachedAsCryptoTLS: every ticket of the server's burst goes
// to the session cache, the last staying, as crypto/tls would cache them:
// reconnects resume with the second of two tickets sent in two records.
// One connection at a time: a handshake that ran concurrently could take
// the first ticket from the cache in the moment before the second.
func TestTLSTicketsCachedAsCryptoTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	identities := make(chan string, 64)
	go ticketServer(t, ln, identities)
	srv := &shardtest.Server{Addr: netip.MustParseAddrPort(ln.Addr().String())}
	cfg := PrepareTLS(&tls.Config{InsecureSkipVerify: true}, 2)
	paths := strings.Fields(strings.Repeat("/x ", 10))
	data, health := runPaths(t, srv, paths, run{slots: 1, limit: 1, streaming: true, tls: cfg})
	for _, r := range data.Results {
		if !r.Success || r.GeneratedText != "a" {
			t.Errorf("request %d: success %v, text %q, error %q", r.Index, r.Success, r.GeneratedText, r.Error)
		}
	}
	h := health[0]
	// One connection per request; all but the first resume.
	if h.TLSHandshakes != int64(len(paths)) || h.TLSResumed != h.TLSHandshakes-1 {
		t.Errorf("%d handshakes, %d resumed", h.TLSHandshakes, h.TLSResumed)
	}
	for range h.TLSResumed {
		if id := <-identities; id != "2nd|" {
			t.Errorf("a reconnect offered a ticket starting %q; want the second ticket (2nd|)", id)
		}
	}
}

// gcPercent reads the GC target.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestHandshakeRampMemory: while handshakes run, the GC target is off
// (kept if lower than the default) and the memory limit grows with the
// connections submitted, never below the live heap nor above a limit
// already set; both come back when the pool drains.
func TestHandshakeRampMemory(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, c := range []struct {
		gc    int
		limit int64
	}{{100, math.MaxInt64}, {400, math.MaxInt64}, {50, math.MaxInt64}, {-1, math.MaxInt64}, {100, 1 << 40}} {
		debug.SetGCPercent(c.gc)
		debug.SetMemoryLimit(c.limit)
		var r rampMemory
		r.start()
		wantGC := c.gc
		if c.gc >= 100 {
			wantGC = -1
		}
		if got := gcPercent(); got != wantGC {
			t.Errorf("GOGC %d: %d while handshakes run, want %d", c.gc, got, wantGC)
		}
		first := debug.SetMemoryLimit(-1)
		inUse := memlimit.InUse()
		if first > c.limit || first < min(rampMargin, c.limit) || first > inUse+rampMargin+64<<20 {
			t.Errorf("GOGC %d: limit %d with %d in use", c.gc, first, inUse)
		}
		r.submitted += 10000
		r.adjust()
		if got, want := debug.SetMemoryLimit(-1), min(first+10000*rampPerConn, c.limit); got < want-8<<20 || got > want+8<<20 {
			t.Errorf("GOGC %d: limit %d after 10,000 connections, want about %d", c.gc, got, want)
		}
		r.end()
		if got := gcPercent(); got != c.gc {
			t.Errorf("GOGC %d: %d after the handshakes, want it back", c.gc, got)
		}
		if got := debug.SetMemoryLimit(-1); got != c.limit {
			t.Errorf("limit %d after the handshakes, want %d back", got, c.limit)
		}
	}
}

// A warm-up holds one ramp over its rounds: the GC target stays off from
// hold to release, however often the handshakers go idle in between.
func TestHandshakeRampHeld(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	var p handshakePool
	p.hold()
	if got := gcPercent(); got != -1 {
		t.Fatalf("GOGC %d while a warm-up holds the ramp, want -1 (off)", got)
	}
	p.mu.Lock()
	p.running++ // a round's handshaker comes and goes
	p.mu.Unlock()
	p.work()
	if got := gcPercent(); got != -1 {
		t.Errorf("GOGC %d after a round's handshaker went idle, want the ramp still on", got)
	}
	p.release()
	if got := gcPercent(); got != 100 {
		t.Errorf("GOGC %d after the warm-up, want 100 back", got)
	}
}
