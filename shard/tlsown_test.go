package shard

import (
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

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
	var conns atomic.Int64
	srv, client := shardtest.NewTLSWith(t, func(c *tls.Config) {
		base := c.Clone()
		c.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cc := base.Clone()
			cc.SetSessionTicketKeys([][32]byte{{byte(conns.Add(1))}})
			return cc, nil
		}
	})
	const n = 6
	h := ownRun(t, srv, client, nil, n)
	if h.TLSOwnRedone == 0 || h.TLSOwn != 0 || h.TLSOwnWhy != tls13.ErrPSKDeclined.Error() {
		t.Errorf("%d own, %d redone, why %q", h.TLSOwn, h.TLSOwnRedone, h.TLSOwnWhy)
	}
	if h.TLSHandshakes != n || srv.Accepted.Load() != n+h.TLSOwnRedone {
		t.Errorf("%d handshakes, %d redone, %d accepted", h.TLSHandshakes, h.TLSOwnRedone, srv.Accepted.Load())
	}
}

// A session crypto/tls puts that does not parse leaves the store empty
// and says why; one that parses fills it.
func TestTicketCacheParses(t *testing.T) {
	c := withTicketStore(PrepareTLS(&tls.Config{}, 1))
	tc := c.ClientSessionCache.(*ticketCache)
	tc.Put("k", nil)
	if tc.store.get(0) != nil || tc.store.unreadWhy() != "" {
		t.Fatal("a nil session stored something")
	}
	tc.Put("k", &tls.ClientSessionState{})
	if tc.store.get(0) != nil {
		t.Fatal("an empty session gave a ticket")
	}
}

// TestTLSOwnServerCloses: a server that closes the connection on the
// loop's own ClientHello (a proxy in front of crypto/tls's server that
// drops hellos without a legacy session ID, which crypto/tls always
// sends): each attempt is redone through crypto/tls, which resumes, and
// every request succeeds.
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
				b, err := net.Dial("tcp", back.Addr.String())
				if err != nil {
					return
				}
				defer b.Close()
				b.Write(hello)
				go io.Copy(b, c)
				io.Copy(c, b)
			}()
		}
	}()
	srv := &shardtest.Server{Addr: netip.MustParseAddrPort(ln.Addr().String())}
	const n = 5
	h := ownRun(t, srv, client, nil, n)
	if h.TLSOwn != 0 || h.TLSOwnRedone != n-1 || dropped.Load() != n-1 || h.TLSResumed != n-1 {
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
