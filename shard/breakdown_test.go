package shard

import (
	"crypto/tls"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/metrics/metricstest"
	"github.com/stampede-bench/stampede/shard/shardtest"
	"github.com/stampede-bench/stampede/sse"
)

// runWires sends reqs through one shard with kernel stamps on, slots at a
// time, and returns the results and the shard's health.
func runWires(t *testing.T, srv *shardtest.Server, reqs []Request, slots int) ([]metrics.RequestResult, Health) {
	res, h, _ := runWiresRec(t, srv, reqs, slots, nil)
	return res, h
}

func runWiresRec(t *testing.T, srv *shardtest.Server, reqs []Request, slots int, tlsConfig *tls.Config) ([]metrics.RequestResult, Health, *metrics.Recorder) {
	t.Helper()
	rec := metrics.NewRecorder(metrics.Options{})
	results, sh := runShard(t, Config{CPU: -1, Addr: srv.Addr, Streaming: true, Kind: sse.Completions,
		Queue: NewQueueOf(reqs, slots), Slots: slots, ConnectTimeout: 5 * time.Second, RequestTimeout: 20 * time.Second,
		KernelTimestamps: true, Clock: NewClock(), Recorder: rec, TLS: tlsConfig}, len(reqs))
	return results, sh.Health(), rec
}

// runShard runs a shard of cfg (its Queue, Clock and Recorder set) until
// the n requests of its queue, released one by one, have ended, and
// returns their results in request order and the stopped shard.
func runShard(t *testing.T, cfg Config, n int) ([]metrics.RequestResult, *Shard) {
	t.Helper()
	sh, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(sh.Run)
	for i := range n {
		cfg.Queue.Release(i, cfg.Clock.Now())
		sh.WakeIfSleeping()
	}
	<-cfg.Queue.Done()
	sh.Stop()
	wg.Wait()
	return metricstest.Merge(n, cfg.Recorder).Results, sh
}

// checkBreakdown asserts what holds for every request's breakdown: known,
// no phase negative, and the phases add up to TTFT exactly.
func checkBreakdown(t *testing.T, res metrics.RequestResult) {
	t.Helper()
	if !res.Success {
		t.Fatalf("request %d failed: %s", res.Index, res.Error)
	}
	b := res.Breakdown
	if !b.Known {
		t.Fatalf("request %d: breakdown not recorded", res.Index)
	}
	if b.ConnectNs < 0 || b.TLSNs < 0 || b.SendNs < 0 || b.ServerNs < 0 || b.FirstTokenNs < 0 {
		t.Errorf("request %d: negative phase in %+v", res.Index, b)
	}
	if sum := b.ConnectNs + b.TLSNs + b.SendNs + b.ServerNs + b.FirstTokenNs; sum != res.TTFTNs {
		t.Errorf("request %d: phases %+v add up to %d, TTFT is %d", res.Index, b, sum, res.TTFTNs)
	}
	if !b.NewConn && b.ConnectNs != 0 {
		t.Errorf("request %d: reused connection with connect phase %d", res.Index, b.ConnectNs)
	}
}

// The server sleeps before it answers: that wait is the server's time to
// first byte, and lands in no other phase. Every request's last byte is
// stamped by the kernel, and a reused connection has no connect phase.
func TestBreakdownPhases(t *testing.T) {
	srv := shardtest.New(t)
	const sleep = 30 * time.Millisecond
	reqs := make([]Request, 6)
	for i := range reqs {
		reqs[i] = Request{Wire: shardtest.Wire("/slow/30"), PromptLen: 1}
	}
	results, h := runWires(t, srv, reqs, 2)
	fresh := 0
	for _, res := range results {
		checkBreakdown(t, res)
		if res.Breakdown.NewConn {
			fresh++
		}
		// Causality, not timing: the request was out before the server
		// read it, and the server slept after reading it.
		if res.Breakdown.ServerNs < int64(sleep) {
			t.Errorf("request %d: server time to first byte %v is shorter than the server's sleep %v", res.Index, time.Duration(res.Breakdown.ServerNs), sleep)
		}
	}
	if got := int(srv.Accepted.Load()); fresh != got {
		t.Errorf("%d requests opened a connection, the server accepted %d", fresh, got)
	}
	if h.Sent != int64(len(reqs)) || h.TxStamped != h.Sent {
		t.Errorf("sent %d, kernel-stamped %d; want %d, %d", h.Sent, h.TxStamped, len(reqs), len(reqs))
	}
	t.Logf("health: %d of %d requests written right after connect", h.EarlyWrites, fresh)
}

// A request too large for the send buffer goes out over several writes,
// each stamped: the stamp kept is its last byte's, whatever the other
// stamps and the request before on the same connection left queued.
func TestBreakdownLargeRequest(t *testing.T) {
	srv := shardtest.New(t)
	body := []byte(`{"prompt":"` + strings.Repeat("x", 4<<20) + `"}`)
	reqs := []Request{{Wire: shardtest.WireBody("/ok/3", body)}, {Wire: shardtest.WireBody("/ok/3", body)}, {Wire: shardtest.Wire("/ok/2")}}
	results, h := runWires(t, srv, reqs, 1)
	for _, res := range results {
		checkBreakdown(t, res)
	}
	if h.TxStamped != 3 {
		t.Errorf("kernel-stamped %d of 3 requests", h.TxStamped)
	}
	if results[1].Breakdown.NewConn || results[2].Breakdown.NewConn {
		t.Errorf("requests 1 and 2 should reuse request 0's connection: %+v %+v", results[1].Breakdown, results[2].Breakdown)
	}
}

// Over TLS on the loop the stamps count from the request's first
// ciphertext byte, after the handshake's: every request is stamped,
// large ones sealed and written in pieces and KeyUpdates included.
func TestTxStampsOverTLS(t *testing.T) {
	shardtest.HoldKernelStamps(t)
	srv, tlsConfig := shardtest.NewTLS(t)
	body := []byte(`{"prompt":"` + strings.Repeat("x", 1<<20) + `"}`)
	reqs := []Request{{Wire: shardtest.WireBody("/ok/3", body)}, {Wire: shardtest.Wire("/ok/6")}, {Wire: shardtest.WireBody("/ok/3", body)}, {Wire: shardtest.Wire("/ok/2")}}
	results, h, _ := runWiresRec(t, srv, reqs, 1, PrepareTLS(tlsConfig, 1))
	for _, res := range results {
		if !res.Success {
			t.Errorf("request %d: %s", res.Index, res.Error)
		}
		checkBreakdown(t, res)
	}
	if h.Sent != 4 || h.TxStamped != 4 {
		t.Errorf("sent %d, kernel-stamped %d; want 4 of 4", h.Sent, h.TxStamped)
	}
}

// Token events of a stream parsed from one read share its stamp, and are
// counted: the test server writes each response in one write.
func TestSharedStampsCounted(t *testing.T) {
	srv := shardtest.New(t)
	results, _, rec := runWiresRec(t, srv, []Request{{Wire: shardtest.Wire("/ok/5")}, {Wire: shardtest.Wire("/ok/4")}}, 1, nil)
	zero := 0
	for _, res := range results {
		if !res.Success {
			t.Fatal(res.Error)
		}
		for _, g := range res.ITLNs {
			if g == 0 {
				zero++
			}
		}
	}
	if zero == 0 {
		t.Fatal("no two token events shared a read; the test needs them to")
	}
	if got := rec.SharedStamps(); got != int64(zero) {
		t.Errorf("shared stamps counted %d, ITLs of 0: %d", got, zero)
	}
}

// A server that closes after each answer makes every later request
// reconnect; one that resets before answering is counted as dropping the
// connection before a response.
func TestConnectTroubleCounted(t *testing.T) {
	srv := shardtest.New(t)
	reqs := []Request{{Wire: shardtest.Wire("/close/2")}, {Wire: shardtest.Wire("/close/2")}, {Wire: shardtest.Wire("/reset-head")}, {Wire: shardtest.Wire("/ok/2")}}
	_, h := runWires(t, srv, reqs, 1)
	if h.Connections != 4 || h.Reconnects != 3 {
		t.Errorf("%d connections, %d reconnects; want 4, 3", h.Connections, h.Reconnects)
	}
	if h.DroppedBeforeResponse != 1 {
		t.Errorf("dropped before a response %d, want 1", h.DroppedBeforeResponse)
	}
}

// With a warm-up, the connections are open before the first request: no
// request opens one, and the server accepts exactly the warm-up's. Over
// TLS their handshakes are done as well: no request has a TLS phase.
func TestWarmConnections(t *testing.T) {
	t.Run("plain", func(t *testing.T) {
		srv := shardtest.New(t)
		h, results := runWarm(t, srv, nil, 40)
		if h.Warm.Opened != 40 || h.Warm.Failed != 0 || h.Connections != 40 {
			t.Errorf("warm-up %+v, %d connections; want 40 opened, no other", h.Warm, h.Connections)
		}
		checkWarmed(t, results)
		if got := srv.Accepted.Load(); got != 40 {
			t.Errorf("server accepted %d connections, want 40", got)
		}
	})
	t.Run("TLS", func(t *testing.T) {
		srv, tlsConfig := shardtest.NewTLS(t)
		h, results := runWarm(t, srv, PrepareTLS(tlsConfig, 40), 40)
		if h.Warm.Opened != 40 || h.Warm.Failed != 0 || h.Connections != 40 || h.TLSHandshakes != 40 {
			t.Errorf("warm-up %+v, %d connections, %d handshakes; want 40 opened, no other", h.Warm, h.Connections, h.TLSHandshakes)
		}
		checkWarmed(t, results)
		for _, res := range results {
			if !res.Success || res.Breakdown.TLSNs != 0 {
				t.Errorf("request %d: success %v (%s), TLS phase %d ns", res.Index, res.Success, res.Error, res.Breakdown.TLSNs)
			}
		}
		if got := srv.Accepted.Load(); got != 40 {
			t.Errorf("server accepted %d connections, want 40", got)
		}
	})
	t.Run("TLS 1.2", func(t *testing.T) {
		// The warm-up's connections cannot stay on the loop: they close,
		// and the requests open their own, which fall back.
		srv, tlsConfig := shardtest.NewTLSWith(t, func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 })
		h, results := runWarm(t, srv, PrepareTLS(tlsConfig, 4), 4)
		if h.Warm.Opened != 0 || h.Warm.Failed == 0 {
			t.Errorf("warm-up %+v; want every connection failed", h.Warm)
		}
		for _, res := range results {
			if !res.Success || !res.Breakdown.NewConn {
				t.Errorf("request %d: success %v (%s), new connection %v", res.Index, res.Success, res.Error, res.Breakdown.NewConn)
			}
		}
	})
}

// runWarm runs n requests on one shard with n slots after a warm-up of n
// connections, over TLS if tlsConfig is set.
func runWarm(t *testing.T, srv *shardtest.Server, tlsConfig *tls.Config, n int) (Health, []metrics.RequestResult) {
	t.Helper()
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = Request{Wire: shardtest.Wire("/ok/2")}
	}
	q := NewQueueOf(reqs, 0)
	clock := NewClock()
	rec := metrics.NewRecorder(metrics.Options{})
	var warmed sync.WaitGroup
	warmed.Add(1)
	sh, err := New(Config{CPU: -1, Addr: srv.Addr, Streaming: true, Kind: sse.Completions,
		Queue: q, Slots: n, ConnectTimeout: 5 * time.Second, RequestTimeout: 20 * time.Second,
		KernelTimestamps: true, Clock: clock, Recorder: rec, Warm: n, Warmed: &warmed, TLS: tlsConfig})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(sh.Run)
	warmed.Wait()
	for i := range reqs {
		q.Release(i, clock.Now())
		sh.WakeIfSleeping()
	}
	<-q.Done()
	sh.Stop()
	wg.Wait()
	return sh.Health(), metricstest.Merge(n, rec).Results
}

func checkWarmed(t *testing.T, results []metrics.RequestResult) {
	t.Helper()
	for _, res := range results {
		checkBreakdown(t, res)
		if res.Breakdown.NewConn {
			t.Errorf("request %d opened a connection after the warm-up", res.Index)
		}
	}
}

// Over TLS the handshake is a phase of its own: on the new connection it
// is positive, on the reused one 0, and the phases still add up.
func TestBreakdownTLS(t *testing.T) {
	srv, tlsConfig := shardtest.NewTLS(t)
	reqs := []Request{{Wire: shardtest.Wire("/ok/2")}, {Wire: shardtest.Wire("/slow/20")}}
	q := NewQueueOf(reqs, 1)
	clock := NewClock()
	rec := metrics.NewRecorder(metrics.Options{})
	tr := startFallback(Config{Addr: srv.Addr, Streaming: true, Kind: sse.Completions, Queue: q,
		ConnectTimeout: 5 * time.Second, RequestTimeout: 10 * time.Second, KernelTimestamps: true, Clock: clock, Recorder: rec}, tlsConfig, 1, "")
	for i := range reqs {
		q.Release(i, clock.Now())
		tr.Wake()
	}
	<-q.Done()
	tr.Stop()
	tr.Wait()
	results := metricstest.Merge(len(reqs), rec).Results
	for _, res := range results {
		checkBreakdown(t, res)
	}
	if b := results[0].Breakdown; !b.NewConn || b.TLSNs <= 0 {
		t.Errorf("first request: %+v; want a new connection with a TLS handshake", b)
	}
	// Over TLS the send instant is the clock after the write, which a busy
	// machine can take late; the server's 20 ms sleep lies after the start
	// of the write, so only send delay + server TTFB must hold it.
	if b := results[1].Breakdown; b.NewConn || b.TLSNs != 0 || b.SendNs+b.ServerNs < int64(20*time.Millisecond) {
		t.Errorf("second request: %+v; want the reused connection, no handshake, the server's 20 ms sleep in send delay + TTFB", b)
	}
}
