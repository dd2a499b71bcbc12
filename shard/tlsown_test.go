package shard

import (
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/internal/tls13"
	"github.com/stampede-bench/stampede/shard/shardtest"
)

// ownRun sends n requests one after another, each on a connection of its
// own (the server closes it after the answer), with the given curves.
func ownRun(t *testing.T, srv *shardtest.Server, client *tls.Config, curves []tls.CurveID, n int) Health {
	t.Helper()
	cfg := PrepareTLS(client, 1)
	if curves != nil {
		cfg.CurvePreferences = curves
	}
	paths := strings.Fields(strings.Repeat("/close/3 ", n))
	data, health := runPaths(t, srv, paths, run{slots: 1, limit: 1, streaming: true, stamps: true, tls: withTicketStore(cfg)})
	for _, r := range data.Results {
		if !r.Success || r.GeneratedText != "t0t1t2" {
			t.Errorf("request %d: success %v, text %q, error %q", r.Index, r.Success, r.GeneratedText, r.Error)
		}
		checkBreakdown(t, r)
	}
	return health[0]
}

// TestTLSOwnResumption: after the first connection's full handshake
// (crypto/tls's), every reconnect resumes on the loop's own handshake,
// with P-256 or X25519, against crypto/tls's server, and every request
// succeeds; the server's tickets after those handshakes keep the store
// fresh. STAMPEDE_TLS_OWN_RESUME=0 leaves them all to crypto/tls.
func TestTLSOwnResumption(t *testing.T) {
	shardtest.HoldKernelStamps(t)
	const n = 40
	for _, curves := range [][]tls.CurveID{{tls.CurveP256}, {tls.X25519}} {
		srv, client := shardtest.NewTLS(t)
		h := ownRun(t, srv, client, curves, n)
		if h.TLSHandshakes != n || h.TLSResumed != n-1 || h.TLSOwn != n-1 || h.TLSOwnRedone != 0 {
			t.Errorf("%v: %d handshakes, %d resumed, %d the loop's own, %d redone (%s)", curves, h.TLSHandshakes, h.TLSResumed, h.TLSOwn, h.TLSOwnRedone, h.TLSOwnWhy)
		}
		if h.TLSHandshakeCPU <= 0 {
			t.Errorf("handshake CPU %v", h.TLSHandshakeCPU)
		}
		if h.Reads == 0 || h.StampedReads != h.Reads {
			t.Errorf("kernel stamps on %d of %d reads", h.StampedReads, h.Reads)
		}
	}
	t.Setenv(OwnResumeEnv, "0")
	srv, client := shardtest.NewTLS(t)
	h := ownRun(t, srv, client, nil, 8)
	if h.TLSOwn != 0 || h.TLSResumed != 7 || h.TLSOwnWhy != OwnResumeEnv+"=0" {
		t.Errorf("switched off: %d own, %d resumed, why %q", h.TLSOwn, h.TLSResumed, h.TLSOwnWhy)
	}
}

// TestTLSOwnDeclined: a server that forgets its tickets (new ticket keys
// for every connection) declines each own resumption: each is redone
// through crypto/tls on a fresh connection, every request succeeds, and
// the health says why.
func TestTLSOwnDeclined(t *testing.T) {
	srv, client := forgetfulTLSServer(t)
	const n = 6
	h := ownRun(t, srv, client, nil, n)
	if h.TLSOwnRedone == 0 || h.TLSOwn != 0 || h.TLSOwnWhy != tls13.ErrPSKDeclined.Error() {
		t.Errorf("%d own, %d redone, why %q", h.TLSOwn, h.TLSOwnRedone, h.TLSOwnWhy)
	}
	if h.TLSHandshakes != n || srv.Accepted.Load() != n+h.TLSOwnRedone {
		t.Errorf("%d handshakes, %d redone, %d accepted", h.TLSHandshakes, h.TLSOwnRedone, srv.Accepted.Load())
	}
}

// A session crypto/tls puts fills the store, for the server it is for
// only; one the store does not take leaves it as it is and says why;
// crypto/tls's deletion of the server's session empties it.
func TestTicketCacheParses(t *testing.T) {
	srv, client := shardtest.NewTLS(t)
	c := withTicketStore(PrepareTLS(client, 1))
	tc := c.ClientSessionCache.(*ticketCache)
	tc.Put("k", nil)
	tc.Put("k", &tls.ClientSessionState{})
	if tc.store.get(0) != nil || tc.store.unreadWhy() != "" {
		t.Fatalf("a nil or empty session stored something, or was not read (%q)", tc.store.unreadWhy())
	}
	// A real session: crypto/tls puts it when the server's ticket comes,
	// read with the answer.
	conn, err := tls.Dial("tcp", srv.Addr.String(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /ok/1 HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := io.ReadAtLeast(conn, make([]byte, 64), 1); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	key := tc.store.key
	tk := tc.store.get(now)
	cs, _ := tc.next.Get(key)
	if tk == nil || key != "127.0.0.1" || cs == nil {
		t.Fatalf("ticket %v for %q, crypto/tls's session %v", tk, key, cs)
	}
	tc.Put("other.test", cs)
	if tc.store.get(now) != tk || !strings.Contains(tc.store.unreadWhy(), "for another server (other.test)") {
		t.Fatalf("another server's session: %q", tc.store.unreadWhy())
	}
	// The same session, read for a configuration that names another
	// server: its certificate is not valid for it.
	named := &ticketCache{next: tls.NewLRUClientSessionCache(1), store: &ticketStore{},
		sessions: tls13.SessionReader{ServerName: "other.test", CheckCert: true}}
	named.Put("other.test", cs)
	if named.store.get(now) != nil || named.store.unreadWhy() != "crypto/tls session not read: crypto/tls session is for another server name" {
		t.Fatalf("a session for another name: %q", named.store.unreadWhy())
	}
	tc.Put(key, nil)
	if tc.store.get(now) != nil {
		t.Fatal("crypto/tls deleted the session, the store kept its ticket")
	}
}

// TestTLSOwnServerCloses: a server that closes the connection on the
// loop's own ClientHello (a proxy in front of crypto/tls's server that
// drops hellos without a legacy session ID, which crypto/tls always
// sends): the attempt is redone through crypto/tls, which resumes, and its
// ticket forgotten (as crypto/tls forgets a session whose resumption
// failed), so the next connection resumes through crypto/tls at once;
// every request succeeds. A ticket that a resumed crypto/tls connection
// brings later can make a later connection try once more (whether it
// comes before the next connect is the scheduler's), each such try
// redone and its ticket dropped alike, at most once a request.
func TestTLSOwnServerCloses(t *testing.T) {
	back, client := shardtest.NewTLS(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var dropped atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				hello := make([]byte, tls13.HeaderLen+4+2+32+1)
				if _, err := io.ReadFull(c, hello); err != nil {
					return
				}
				if hello[len(hello)-1] == 0 {
					dropped.Add(1)
					return
				}
				shardtest.Pipe(c, back.Addr, hello)
			}()
		}
	}()
	srv := &shardtest.Server{Addr: netip.MustParseAddrPort(ln.Addr().String())}
	const n = 5
	h := ownRun(t, srv, client, nil, n)
	if h.TLSOwn != 0 || h.TLSOwnRedone < 1 || h.TLSOwnRedone > n-1 || dropped.Load() != h.TLSOwnRedone || h.TLSResumed != n-1 {
		t.Errorf("%d own, %d redone (%q), %d dropped, %d resumed", h.TLSOwn, h.TLSOwnRedone, h.TLSOwnWhy, dropped.Load(), h.TLSResumed)
	}
	// A close with the hello unread resets the connection.
	if h.TLSOwnWhy != io.EOF.Error() && h.TLSOwnWhy != "connection reset by peer" {
		t.Errorf("why %q", h.TLSOwnWhy)
	}
}

// TestTLSOwnRampWaitsForTicket: requests released together, each on a
// connection of its own: the first connection's handshake is crypto/tls's,
// the others wait for the ticket its server sends and then resume on the
// loop's own handshakes. Against a server that sends no ticket they wait
// for the first answer, then go to crypto/tls.
func TestTLSOwnRampWaitsForTicket(t *testing.T) {
	const n = 20
	for _, noTickets := range []bool{false, true} {
		srv, client := shardtest.NewTLSWith(t, func(c *tls.Config) { c.SessionTicketsDisabled = noTickets })
		cfg := withTicketStore(PrepareTLS(client, n))
		data, health := runPaths(t, srv, strings.Fields(strings.Repeat("/close/2 ", n)), run{slots: n, streaming: true, tls: cfg})
		for _, r := range data.Results {
			if !r.Success || r.GeneratedText != "t0t1" {
				t.Errorf("no tickets %v, request %d: success %v, text %q, error %q", noTickets, r.Index, r.Success, r.GeneratedText, r.Error)
			}
		}
		h := health[0]
		want := int64(n - 1)
		if noTickets {
			want = 0
		}
		if h.TLSOwn != want || h.TLSHandshakes != n || h.TLSOwnRedone != 0 {
			t.Errorf("no tickets %v: %d own of %d handshakes, %d redone (%s); want %d own", noTickets, h.TLSOwn, h.TLSHandshakes, h.TLSOwnRedone, h.TLSOwnWhy, want)
		}
	}
}

// TestTLSOwnStopsMidRamp: against a server that declines every ticket,
// many connections at once: the shard stops its own handshakes while
// others are in flight or waiting for a ticket; those finish through
// crypto/tls, and every request succeeds.
func TestTLSOwnStopsMidRamp(t *testing.T) {
	srv, client := forgetfulTLSServer(t)
	const n, slots = 300, 40
	cfg := withTicketStore(PrepareTLS(client, slots))
	data, health := runPaths(t, srv, strings.Fields(strings.Repeat("/close/2 ", n)), run{slots: slots, streaming: true, tls: cfg})
	for _, r := range data.Results {
		if !r.Success || r.GeneratedText != "t0t1" {
			t.Errorf("request %d: success %v, text %q, error %q", r.Index, r.Success, r.GeneratedText, r.Error)
		}
	}
	h := health[0]
	if h.TLSOwn != 0 || h.TLSHandshakes != n || !strings.HasPrefix(h.TLSOwnWhy, "stopped after ") {
		t.Errorf("%d own of %d handshakes, %d redone, why %q", h.TLSOwn, h.TLSHandshakes, h.TLSOwnRedone, h.TLSOwnWhy)
	}
}

// Only the run's ramp waits for a ticket: once the run has had one, a
// connection with none to offer (a decline emptied the store) is left to
// crypto/tls at once, not made to wait for another connection's ticket.
func TestTicketWaitOnlyBeforeFirst(t *testing.T) {
	for _, had := range []bool{false, true} {
		s := &Shard{}
		s.tickets = &ticketStore{had: had}
		first, second := &conn{dial: &tlsDial{}}, &conn{dial: &tlsDial{}}
		if s.awaitTicket(first, 0) {
			t.Fatalf("had a ticket %v: the first connection waits", had)
		}
		if waits := s.awaitTicket(second, 0); waits == had || (len(s.waiting) == 1) != waits {
			t.Errorf("had a ticket %v: the second connection waits %v", had, waits)
		}
	}
}

// TestTLSOwnWaves: more requests than slots, each on a connection of its
// own, so the connections after the first wave open while the run holds a
// ticket; their hellos and flights wait for the steps the turns after
// their events take (ownTurnSteps), and all of them resume on the loop.
func TestTLSOwnWaves(t *testing.T) {
	const n, slots = 60, 20
	srv, client := shardtest.NewTLS(t)
	cfg := withTicketStore(PrepareTLS(client, slots))
	data, health := runPaths(t, srv, strings.Fields(strings.Repeat("/close/2 ", n)), run{slots: slots, streaming: true, stamps: true, tls: cfg})
	for _, r := range data.Results {
		if !r.Success || r.GeneratedText != "t0t1" {
			t.Errorf("request %d: success %v, text %q, error %q", r.Index, r.Success, r.GeneratedText, r.Error)
		}
	}
	h := health[0]
	if h.TLSOwn != n-1 || h.TLSHandshakes != n || h.TLSOwnRedone != 0 {
		t.Errorf("%d own of %d handshakes, %d redone (%s); want %d own", h.TLSOwn, h.TLSHandshakes, h.TLSOwnRedone, h.TLSOwnWhy, n-1)
	}
}

// forgetfulTLSServer is a TLS server that forgets its tickets: new ticket
// keys for every connection, so it declines every resumption.
func forgetfulTLSServer(t *testing.T) (*shardtest.Server, *tls.Config) {
	var conns atomic.Int64
	return shardtest.NewTLSWith(t, func(c *tls.Config) {
		base := c.Clone()
		c.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cc := base.Clone()
			cc.SetSessionTicketKeys([][32]byte{{byte(conns.Add(1))}})
			return cc, nil
		}
	})
}
