package shard

import (
	"bufio"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/metrics/metricstest"
	"github.com/stampede-bench/stampede/shard/shardtest"
	"github.com/stampede-bench/stampede/sse"
)

// handLoop is a shard whose loop the test turns by hand, over a raw
// listener, so that a server's close can land exactly between the idle
// pool's look at a connection and the request's write: the race a server
// that closes kept-alive connections runs with every request, which no
// server on loopback produces on demand.
type handLoop struct {
	t   *testing.T
	sh  *Shard
	q   *Queue
	rec *metrics.Recorder
	ln  *net.TCPListener
}

func newHandLoop(t *testing.T, reqs []Request) *handLoop {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	h := &handLoop{t: t, ln: ln, q: NewQueueOf(reqs, 0), rec: metrics.NewRecorder(metrics.Options{})}
	h.sh, err = New(Config{CPU: -1, Addr: netip.MustParseAddrPort(ln.Addr().String()), Streaming: true, Kind: sse.Completions,
		Queue: h.q, Slots: 1, ConnectTimeout: time.Minute, RequestTimeout: 10 * time.Second,
		Clock: NewClock(), Recorder: h.rec})
	if err != nil {
		t.Fatal(err)
	}
	h.sh.startBudget = maxStartsPerTurn
	t.Cleanup(h.sh.closeAll)
	return h
}

// accept takes the shard's next connection on the server side.
func (h *handLoop) accept() (*net.TCPConn, *bufio.Reader) {
	h.t.Helper()
	h.ln.SetDeadline(time.Now().Add(5 * time.Second))
	c, err := h.ln.AcceptTCP()
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// turn runs the loop's turns until done reports true. Each turn has its
// own budget of starts, as Run's do (a stalled start would otherwise end
// starting for good).
func (h *handLoop) turn(done func() bool) {
	h.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !done(); {
		if time.Now().After(deadline) {
			h.t.Fatal("the loop did not get there in 5 s")
		}
		h.sh.startBudget, h.sh.startsSinceNs = maxStartsPerTurn, 0
		events, err := h.sh.poll.wait(10)
		if err != nil {
			h.t.Fatal(err)
		}
		for i := range events {
			h.sh.handle(&events[i])
		}
		h.sh.serveReady()
		h.sh.takeWork()
	}
}

// release releases request i; the next turn starts it.
func (h *handLoop) release(i int) { h.q.Release(i, h.sh.cfg.Clock.Now()) }

// readRequest reads one request head from r, and fails the test unless
// its path is want.
func readRequest(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil || !strings.Contains(line, " "+want+" ") {
		t.Fatalf("request line %q (%v); want %s", line, err, want)
	}
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if l == "\r\n" {
			break
		}
	}
	r.Discard(len("{}"))
}

// reusedAfterServerClose runs request 0 to its end on a kept-alive
// connection, lets server (given the server's side of the connection and
// its reader) do its part, and then sends request 1 on that connection as
// the idle pool would once it found nothing waiting on it. It returns the
// connection.
func (h *handLoop) reusedAfterServerClose(server func(*net.TCPConn, *bufio.Reader)) *conn {
	h.t.Helper()
	h.release(0)
	h.turn(func() bool { return h.sh.busy == 1 })
	a, r := h.accept()
	readRequest(h.t, r, "/a")
	a.Write(shardtest.Response(1, ""))
	h.turn(func() bool { return h.rec.Completed() == 1 })
	c := h.sh.idles[0]
	if c == nil {
		h.t.Fatal("no idle connection after request 0")
	}
	server(a, r)
	// What popIdle does once it found the socket empty, and start after.
	h.sh.unlinkIdle(c)
	c.state = connBusy
	h.release(1)
	i, arrivalNs, _ := h.q.take()
	h.sh.busy++
	h.sh.cfg.Recorder.Begin(&c.stream, i, 3, arrivalNs, h.sh.cfg.Clock.Now())
	h.sh.send(c, h.q.request(i))
	if c.written != len(c.req.Wire) {
		h.t.Fatalf("request 1: %d of %d bytes written", c.written, len(c.req.Wire))
	}
	return c
}

func twoRequests() []Request {
	return []Request{{Wire: shardtest.Wire("/a"), PromptLen: 3}, {Wire: shardtest.Wire("/b"), PromptLen: 3}}
}

// The server closed the kept-alive connection (its FIN) before the request
// reached it, and answered the request's bytes with a reset: the request
// goes out again on a fresh connection, and succeeds there, timed from its
// first send.
func TestResendAfterServerClosedBeforeReading(t *testing.T) {
	h := newHandLoop(t, twoRequests())
	c := h.reusedAfterServerClose(func(a *net.TCPConn, _ *bufio.Reader) {
		// A full close with nothing unread: a FIN, and a reset for any
		// byte that comes after it.
		a.Close()
	})
	if !c.reused {
		t.Fatal("the connection is not marked reused")
	}
	startNs := c.stream.StartNs()
	h.turn(func() bool { return h.sh.health.Resent == 1 || h.rec.Failed() > 0 })
	if h.rec.Failed() > 0 {
		t.Fatalf("request 1 failed: %+v", metricstest.Merge(2, h.rec).Results[1])
	}
	b, r := h.accept()
	readRequest(t, r, "/b")
	b.Write(shardtest.Response(2, ""))
	h.turn(func() bool { return h.rec.Completed()+h.rec.Failed() == 2 })
	res := metricstest.Merge(2, h.rec).Results[1]
	if !res.Success || res.ChunkEvents != 2 {
		t.Fatalf("request 1: %+v", res)
	}
	// TTFT counts from the first send, not the second.
	if res.StartNs != startNs {
		t.Errorf("request 1 timed from %d; it was first sent at %d", res.StartNs, startNs)
	}
	if h.sh.health.Resent != 1 || h.sh.health.DroppedBeforeResponse != 1 {
		t.Errorf("resent %d, dropped %d; want 1, 1", h.sh.health.Resent, h.sh.health.DroppedBeforeResponse)
	}
	if h.sh.busy != 0 || h.q.Finished() != 2 {
		t.Errorf("busy %d, finished %d after both requests; want 0, 2", h.sh.busy, h.q.Finished())
	}
}

// The server read the request and then closed the connection without an
// answer: its FIN acknowledges the request, which may have been acted on,
// so it fails and is not sent again.
func TestNoResendAfterServerReadAndClosed(t *testing.T) {
	h := newHandLoop(t, twoRequests())
	var a *net.TCPConn
	var r *bufio.Reader
	h.reusedAfterServerClose(func(ac *net.TCPConn, rc *bufio.Reader) { a, r = ac, rc })
	readRequest(t, r, "/b")
	a.Close()
	h.turn(func() bool { return h.rec.Failed() == 1 })
	want := "connection closed by server before the response head on a reused keep-alive connection (not sent again)"
	if res := metricstest.Merge(2, h.rec).Results[1]; res.Success || res.Error != want {
		t.Errorf("request 1: success %v, error %q; want %q", res.Success, res.Error, want)
	}
	if h.sh.health.Resent != 0 {
		t.Errorf("resent %d; want 0", h.sh.health.Resent)
	}
}

// The server read the request and then reset the connection: a reset
// acknowledges nothing, so it cannot show the request unread, and the
// request fails.
func TestNoResendAfterServerReadAndReset(t *testing.T) {
	h := newHandLoop(t, twoRequests())
	var a *net.TCPConn
	var r *bufio.Reader
	h.reusedAfterServerClose(func(ac *net.TCPConn, rc *bufio.Reader) { a, r = ac, rc })
	readRequest(t, r, "/b")
	a.SetLinger(0)
	a.Close()
	h.turn(func() bool { return h.rec.Failed() == 1 })
	want := "connection reset by peer before the response head on a reused keep-alive connection (not sent again)"
	if res := metricstest.Merge(2, h.rec).Results[1]; res.Success || res.Error != want {
		t.Errorf("request 1: success %v, error %q; want %q", res.Success, res.Error, want)
	}
	if h.sh.health.Resent != 0 {
		t.Errorf("resent %d; want 0", h.sh.health.Resent)
	}
}

// A server that closes every connection right after each streamed answer,
// while it advertises keep-alive: its Keep-Alive header keeps the shard
// from reusing a connection before it knows, and the closes come first.
// No request fails, and none reaches the server twice. In a run the
// closes come first by time (proveIdle, or a wave of fresh connections,
// against the server's close at once); here the shard's proof waits for
// the server's closes (proofGate), so that a stalled machine cannot
// reorder the two.
func TestServerClosingKeptAliveConnections(t *testing.T) {
	srv := shardtest.New(t)
	const slots = 8
	data, _ := runPaths(t, srv, distinct("/hangup/2", 64), run{slots: slots, limit: slots, streaming: true, proofGate: srv.HungUp})
	checkHangups(t, srv, data.Results)
}

// A server that closes every connection 5 to 90 ms after each streamed
// answer, unread (llama.cpp's server), and serves fewer connections at
// once than the run has in flight, so answers come in waves and the
// waiting connections sit in its accept queue: no request fails, none
// reaches the server twice, and reuse stops on every shard. As above, the
// shard's proof of reuse waits for the server's closes, which in a run
// come within proveIdle by time.
func TestServerClosingLateAfterAnswers(t *testing.T) {
	srv := shardtest.NewLimited(t, 8)
	const shards, slots = 2, 16
	data, hs := runPaths(t, srv, distinct("/lateclose/2", 192), run{shards: shards, slots: slots, limit: shards * slots, streaming: true, proofGate: srv.HungUp})
	checkHangups(t, srv, data.Results)
	for i, h := range hs {
		if !h.StoppedReuse {
			t.Errorf("shard %d did not stop reusing connections", i)
		}
		t.Logf("shard %d: %d connections, %d fresh before reuse was known, %d re-sent", i, h.Connections, h.FreshBeforeReuse, h.Resent)
	}
}

// A server that advertises keep-alive (Keep-Alive: max=N) and keeps it:
// the shard opens at most a wave of fresh connections before it knows, the
// first answer on a reused one proves it, and from then on connections are
// reused; reuse never stops.
func TestAdvertisedKeepAliveIsReused(t *testing.T) {
	srv := shardtest.New(t)
	const slots = 4
	data, hs := runPaths(t, srv, distinct("/kamax/1000", 200), run{slots: slots, limit: slots, streaming: true})
	checkHangups(t, srv, data.Results)
	h := hs[0]
	if h.StoppedReuse || h.FreshBeforeReuse > slots {
		t.Errorf("stopped reuse %v, %d fresh before reuse was known; want no stop, at most %d", h.StoppedReuse, h.FreshBeforeReuse, slots)
	}
	if got := srv.Accepted.Load(); got > 2*slots {
		t.Errorf("server accepted %d connections for %d requests over %d slots; want at most %d", got, len(data.Results), slots, 2*slots)
	}
}

// The same server without its Keep-Alive header: nothing says to wait, so
// the first reuses race its closes and can fail, but the first failure
// stops reuse on its shard, so at most a slot's worth fail a shard, and
// none reaches the server twice.
func TestServerClosingLateWithoutHint(t *testing.T) {
	srv := shardtest.NewLimited(t, 8)
	const shards, slots = 2, 16
	data, hs := runPaths(t, srv, distinct("/lateclose-quiet/2", 192), run{shards: shards, slots: slots, limit: shards * slots, streaming: true})
	checkUnhinted(t, srv, data.Results, hs, shards*slots)
}

// A server that closes every connection as its answer ends, without a
// Keep-Alive header, plain and over TLS: its close is usually there before
// a request takes the connection, and the one reuse that can race it and
// fail stops reuse.
func TestServerHangingUpWithoutHint(t *testing.T) {
	const slots = 8
	t.Run("plain", func(t *testing.T) {
		srv := shardtest.New(t)
		data, hs := runPaths(t, srv, distinct("/hangup-quiet/2", 64), run{slots: slots, limit: slots, streaming: true})
		checkUnhinted(t, srv, data.Results, hs, slots)
	})
	t.Run("TLS", func(t *testing.T) {
		srv, tlsConfig := shardtest.NewTLS(t)
		data, hs := runPaths(t, srv, distinct("/hangup-quiet/2", 64), run{slots: slots, limit: slots, streaming: true, tls: PrepareTLS(tlsConfig, slots)})
		checkUnhinted(t, srv, data.Results, hs, slots)
	})
}

// checkUnhinted holds a run against a server that closes what it keeps
// alive, unannounced, to what the shard promises then: only reuses fail,
// at most the given number, none reaches the server twice, and every shard
// that met a close stopped reusing.
func checkUnhinted(t *testing.T, srv *shardtest.Server, results []metrics.RequestResult, hs []Health, most int) {
	t.Helper()
	failed := 0
	for _, r := range results {
		switch {
		case r.Success:
		case strings.HasSuffix(r.Error, "on a reused keep-alive connection (not sent again)"):
			failed++
		default:
			t.Errorf("request %d failed: %s", r.Index, r.Error)
		}
	}
	if failed > most {
		t.Errorf("%d requests failed on reused connections; want at most %d", failed, most)
	}
	if n := srv.Repeated.Load(); n != 0 {
		t.Errorf("%d requests reached the server twice", n)
	}
	for i, h := range hs {
		if failed > 0 && !h.StoppedReuse {
			t.Errorf("shard %d did not stop reusing connections", i)
		}
	}
	t.Logf("%d of %d failed", failed, len(results))
}

// distinct is n copies of path told apart by a query, so the server can
// tell a request sent twice.
func distinct(path string, n int) []string {
	paths := make([]string, n)
	for i := range paths {
		paths[i] = path + "?i=" + strconv.Itoa(i)
	}
	return paths
}

// checkHangups holds a run against a server that closes what it keeps
// alive to what the shard promises: every request succeeded, and the
// server read each once.
func checkHangups(t *testing.T, srv *shardtest.Server, results []metrics.RequestResult) {
	t.Helper()
	for _, r := range results {
		if !r.Success {
			t.Errorf("request %d failed: %s", r.Index, r.Error)
		}
	}
	if got := srv.Requests.Load(); got != int64(len(results)) {
		t.Errorf("server read %d requests for %d", got, len(results))
	}
	if n := srv.Repeated.Load(); n != 0 {
		t.Errorf("%d requests reached the server twice", n)
	}
}

// A response's Keep-Alive max is the most the connection carries: the
// shard opens a new connection after that many, before the server closes
// the old one, and no request meets a closed connection.
func TestKeepAliveMaxEndsConnection(t *testing.T) {
	srv := shardtest.New(t)
	paths := make([]string, 6)
	for i := range paths {
		paths[i] = "/kamax/2"
	}
	data, hs := runPaths(t, srv, paths, run{slots: 1, limit: 1, streaming: true})
	for _, r := range data.Results {
		if !r.Success {
			t.Fatalf("request %d failed: %s", r.Index, r.Error)
		}
	}
	if got := srv.Accepted.Load(); got != 3 {
		t.Errorf("server accepted %d connections for 6 requests at max=2; want 3", got)
	}
	if hs[0].Resent != 0 || hs[0].DroppedBeforeResponse != 0 {
		t.Errorf("resent %d, dropped %d; want none", hs[0].Resent, hs[0].DroppedBeforeResponse)
	}
}

// Over TLS on the loop, a server that closes every connection after its
// answer is held to the same.
func TestTLSLoopServerClosingKeptAliveConnections(t *testing.T) {
	srv, tlsConfig := shardtest.NewTLS(t)
	paths := distinct("/hangup/2", 32)
	const slots = 4
	data, _ := runPaths(t, srv, paths, run{slots: slots, limit: slots, streaming: true, tls: PrepareTLS(tlsConfig, slots)})
	checkHangups(t, srv, data.Results)
}

// A server that closes connections idle for 200 ms, and requests that come
// at once, or after the server closed the connection: every request
// succeeds, each reaching the server once. (A request that reaches the
// server's socket just as its timeout fires, unread, is reset with it; the
// shard cannot tell that from a request read and then reset, and fails
// it. The hand-turned tests above take the race's other side, the FIN
// first.)
func TestServerClosingIdleConnections(t *testing.T) {
	srv := shardtest.New(t)
	reqs := make([]Request, 16)
	for i := range reqs {
		reqs[i] = Request{Wire: shardtest.Wire("/idle/1")}
	}
	s := startSingle(t, srv, reqs, 1, 10*time.Second)
	for i := range reqs {
		s.release(i)
		for s.rec.Completed()+s.rec.Failed() < int64(i+1) {
			time.Sleep(100 * time.Microsecond)
		}
		if i%2 == 1 {
			// Until the server's timeout closed the connection.
			for srv.IdleClosed.Load() < int64(i/2+1) {
				time.Sleep(time.Millisecond)
			}
		}
	}
	for _, r := range s.finish(false) {
		if !r.Success {
			t.Errorf("request %d failed: %s", r.Index, r.Error)
		}
	}
	if got := srv.Requests.Load(); got != int64(len(reqs)) {
		t.Errorf("server saw %d requests for %d", got, len(reqs))
	}
}

// The close that stops reuse retires the connections still idle to the
// server: they leave the idle stack with their retire timers set, so each
// is closed by retireWait if the server does not close it first, rather
// than holding its socket until the run ends.
func TestReuseStopRetiresIdleConnections(t *testing.T) {
	h := newHandLoop(t, []Request{{Wire: shardtest.Wire("/a"), PromptLen: 3}, {Wire: shardtest.Wire("/a"), PromptLen: 3}})
	h.sh.cfg.Slots = 2
	h.release(0)
	h.release(1)
	h.turn(func() bool { return h.sh.busy == 2 })
	a, ra := h.accept()
	b, rb := h.accept()
	readRequest(t, ra, "/a")
	readRequest(t, rb, "/a")
	a.Write(shardtest.Response(1, ""))
	b.Write(shardtest.Response(1, ""))
	h.turn(func() bool { return h.rec.Completed() == 2 })
	first := h.sh.idles[0]
	if first == nil || first.idleNext == nil {
		t.Fatal("want two idle connections after the two answers")
	}
	idle := []*conn{first, first.idleNext}
	a.Close()
	h.turn(func() bool { return h.sh.reuse[0].closedKept == 1 })
	if h.sh.idles[0] != nil {
		t.Error("a connection is still on the idle stack after reuse stopped")
	}
	left := 0
	for _, c := range idle {
		if c.state == connClosed {
			continue
		}
		left++
		if !c.retired || c.deadlineNs <= 0 {
			t.Errorf("idle connection left after reuse stopped: retired %v, deadline %d; want retired with its timer", c.retired, c.deadlineNs)
		}
	}
	if left != 1 {
		t.Errorf("%d of the two idle connections still open; want the one the server kept", left)
	}
}

// The close that stops reuse on one shard stops it on the others of the
// run: their next request opens its own connection, and their idle ones
// are retired.
func TestReuseStopIsShared(t *testing.T) {
	stops := NewReuseStops(1)
	learner, told := newHandLoop(t, twoRequests()), newHandLoop(t, twoRequests())
	learner.sh.cfg.Reuse, told.sh.cfg.Reuse = stops, stops
	answer := func(h *handLoop) *net.TCPConn {
		h.release(0)
		h.turn(func() bool { return h.sh.busy == 1 })
		a, r := h.accept()
		readRequest(t, r, "/a")
		a.Write(shardtest.Response(1, ""))
		h.turn(func() bool { return h.rec.Completed() == 1 })
		return a
	}
	answer(learner).Close()
	answer(told)
	idle := told.sh.idles[0]
	learner.turn(func() bool { return learner.sh.reuse[0].closedKept == 1 })
	if told.sh.keepsAlive(0) {
		t.Fatal("the other shard still reuses connections after the first stopped")
	}
	told.release(1)
	told.turn(func() bool { return told.sh.busy == 1 })
	_, r := told.accept()
	readRequest(t, r, "/b")
	if idle.state != connIdle || !idle.retired || told.sh.idles[0] != nil {
		t.Errorf("the other shard's idle connection: state %d, retired %v; want retired, off the idle stack", idle.state, idle.retired)
	}
}
