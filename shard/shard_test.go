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
	"golang.org/x/sys/unix"
)

type run struct {
	shards    int
	slots     int
	limit     int
	streaming bool
	timeout   time.Duration
	// connect is the connect timeout (0: a minute).
	connect time.Duration
	stamps  bool
	// maxResponse and budget are the byte limits (0, nil: none).
	maxResponse int64
	budget      *Budget
	// tls, when set, runs the connections over TLS on the loop.
	tls *tls.Config
	// proofGate is every shard's (see Shard.proofGate).
	proofGate func() bool
}

// runPaths sends one request per path through fresh shards, all released at
// once, and returns the merged results and the shards' health.
func runPaths(t *testing.T, srv *shardtest.Server, paths []string, r run) (metricstest.Merged, []Health) {
	t.Helper()
	if r.shards == 0 {
		r.shards = 1
	}
	if r.slots == 0 {
		r.slots = len(paths)
	}
	if r.timeout == 0 {
		// Far above any answer's time on loopback. Not longer: a request
		// the loop loses track of then ends the test as a timeout failure
		// instead of hanging it (as a reset queued behind a stream's last
		// bytes once did; see TestHangUpBehindLastBytes).
		r.timeout = 10 * time.Second
	}
	if r.connect == 0 {
		r.connect = time.Minute
	}
	reqs := make([]Request, len(paths))
	for i, p := range paths {
		reqs[i] = Request{Wire: shardtest.Wire(p), PromptLen: 3}
	}
	q := NewQueueOf(reqs, r.limit)
	stops := NewReuseStops(1)
	clock := NewClock()
	var shards []*Shard
	var recs []*metrics.Recorder
	for i := range r.shards {
		rec := metrics.NewRecorder(metrics.Options{KeepText: true})
		sh, err := New(Config{
			ID: i, CPU: -1, Addr: srv.Addr, Streaming: r.streaming, Kind: sse.Completions,
			Queue: q, Slots: r.slots,
			ConnectTimeout: r.connect, RequestTimeout: r.timeout,
			KernelTimestamps: r.stamps, Clock: clock, Recorder: rec,
			MaxResponseBytes: r.maxResponse, Budget: r.budget, TLS: r.tls, Reuse: stops,
		})
		if err != nil {
			t.Fatal(err)
		}
		sh.proofGate = r.proofGate
		shards = append(shards, sh)
		recs = append(recs, rec)
	}
	var wg sync.WaitGroup
	for _, sh := range shards {
		wg.Go(sh.Run)
	}
	for i := range reqs {
		q.Release(i, clock.Now())
		for _, sh := range shards {
			if sh.WakeIfSleeping() {
				break
			}
		}
	}
	// Requests that never finish hang here until go test's -timeout,
	// which dumps every goroutine: the shard loops among them.
	<-q.Done()
	for _, sh := range shards {
		sh.Stop()
	}
	wg.Wait()
	var health []Health
	for _, sh := range shards {
		health = append(health, sh.Health())
	}
	return metricstest.Merge(len(reqs), recs...), health
}

func TestStreamsAndKeepAliveReuse(t *testing.T) {
	shardtest.HoldKernelStamps(t) // the test asserts every read was stamped
	srv := shardtest.New(t)
	paths := make([]string, 20)
	for i := range paths {
		paths[i] = "/ok/5"
	}
	data, health := runPaths(t, srv, paths, run{slots: 2, limit: 2, streaming: true, stamps: true})
	for _, res := range data.Results {
		if !res.Success {
			t.Fatalf("request %d failed: %s", res.Index, res.Error)
		}
		if res.ChunkEvents != 5 || res.OutputTokens != 5 || res.PromptLen != 11 {
			t.Errorf("request %d: events %d, output tokens %d, prompt %d; want 5, 5, 11", res.Index, res.ChunkEvents, res.OutputTokens, res.PromptLen)
		}
		if res.GeneratedText != "t0t1t2t3t4" {
			t.Errorf("request %d: text %q", res.Index, res.GeneratedText)
		}
		if res.TTFTNs <= 0 || res.LatencyNs < res.TTFTNs || len(res.ITLNs) != 4 {
			t.Errorf("request %d: ttft %d latency %d itls %v", res.Index, res.TTFTNs, res.LatencyNs, res.ITLNs)
		}
		if res.StartNs < res.ArrivalNs || res.QueueNs != res.StartNs-res.ArrivalNs {
			t.Errorf("request %d: arrival %d start %d queue %d", res.Index, res.ArrivalNs, res.StartNs, res.QueueNs)
		}
	}
	if got := srv.Accepted.Load(); got != 2 {
		t.Errorf("server accepted %d connections for 20 requests over 2 slots; want 2 (keep-alive reuse)", got)
	}
	gaps := 0
	for i := range data.Results {
		gaps += data.Results[i].NumITLs()
	}
	if gaps != 20*4 {
		t.Errorf("results hold %d gaps, want 80", gaps)
	}
	if health[0].StampedReads == 0 || health[0].StampedReads != health[0].Reads {
		t.Errorf("kernel timestamps on %d of %d reads; want all", health[0].StampedReads, health[0].Reads)
	}
}

func TestConnectionCloseIsReplaced(t *testing.T) {
	srv := shardtest.New(t)
	paths := []string{"/close/2", "/close/2", "/close/2", "/ok/2"}
	data, _ := runPaths(t, srv, paths, run{slots: 1, streaming: true})
	for _, res := range data.Results {
		if !res.Success {
			t.Fatalf("request %d failed: %s", res.Index, res.Error)
		}
	}
	if got := srv.Accepted.Load(); got != 4 {
		t.Errorf("server accepted %d connections; want 4 (one per Connection: close)", got)
	}
}

func TestFaultsBecomeFailedRequests(t *testing.T) {
	srv := shardtest.New(t)
	cases := []struct {
		path string
		want string // error text prefix; "" = success
	}{
		{"/ok/3", ""},
		{"/500", "Internal Server Error"},
		{"/reset-head", "connection reset by peer before the response head"},
		{"/reset-mid", "connection reset by peer after 2 token events"},
		{"/malformed", `malformed chunk size`},
		{"/empty", metrics.NoTokenError},
		{"/ok/1", ""},
	}
	paths := make([]string, len(cases))
	for i, c := range cases {
		paths[i] = c.path
	}
	data, _ := runPaths(t, srv, paths, run{streaming: true})
	for i, c := range cases {
		res := data.Results[i]
		if c.want == "" {
			if !res.Success {
				t.Errorf("%s: failed with %q, want success", c.path, res.Error)
			}
			continue
		}
		if res.Success || !strings.Contains(res.Error, c.want) {
			t.Errorf("%s: success=%v error %q; want failure containing %q", c.path, res.Success, res.Error, c.want)
		}
	}
}

// TestHangUpBehindLastBytes: the server's last bytes and its close or
// reset are both in the socket when the loop first looks, so one
// edge-triggered event reports them together. The read that takes the
// bytes comes back short, and no later event will come: the loop must read
// on to the EOF or the error, not wait for the request's deadline. (On a
// loaded machine a reset 20 ms after the last token, as /reset-mid sends
// it, often reaches the socket before the loop reads the token.)
func TestHangUpBehindLastBytes(t *testing.T) {
	srv := shardtest.New(t)
	cases := []struct {
		path string
		want string // error text prefix; "" = success
	}{
		{"/reset-mid", "connection reset by peer after 2 token events"},
		{"/eof/2", ""},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			q := NewQueueOf([]Request{{Wire: shardtest.Wire(tc.path), PromptLen: 3}}, 0)
			clock := NewClock()
			rec := metrics.NewRecorder(metrics.Options{KeepText: true})
			s, err := New(Config{
				CPU: -1, Addr: srv.Addr, Streaming: true, Kind: sse.Completions,
				Queue: q, Slots: 1,
				ConnectTimeout: time.Minute, RequestTimeout: 10 * time.Second, Clock: clock, Recorder: rec,
			})
			if err != nil {
				t.Fatal(err)
			}
			// Start the request by hand, serving events only until it is
			// written, so that nothing reads the answer yet.
			q.Release(0, clock.Now())
			s.clock = newStampClock(clock)
			s.startBudget = 1
			s.takeWork()
			var c *conn
			for _, x := range s.conns {
				if x != nil {
					c = x
				}
			}
			if c == nil {
				t.Fatal("no connection opened")
			}
			for c.state == connConnecting || (c.state == connBusy && c.written < len(c.req.Wire)) {
				events, err := s.poll.wait(-1)
				if err != nil {
					t.Fatal(err)
				}
				for i := range events {
					s.handle(&events[i])
				}
			}
			if c.state != connBusy || c.gotBytes {
				t.Fatalf("connection state %d, response bytes read %v; want busy, none read", c.state, c.gotBytes)
			}
			// Wait, without touching epoll, until the hang-up sits in the
			// socket behind the answer.
			for {
				fds := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLRDHUP}}
				if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
					t.Fatal(err)
				}
				if fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP) != 0 {
					break
				}
			}
			var wg sync.WaitGroup
			wg.Go(s.Run)
			<-q.Done()
			s.Stop()
			wg.Wait()
			res := metricstest.Merge(1, rec).Results[0]
			if tc.want == "" {
				if !res.Success || res.GeneratedText != "t0t1" {
					t.Errorf("success=%v error %q text %q; want success with text \"t0t1\"", res.Success, res.Error, res.GeneratedText)
				}
				return
			}
			if res.Success || !strings.Contains(res.Error, tc.want) {
				t.Errorf("success=%v error %q; want failure containing %q", res.Success, res.Error, tc.want)
			}
		})
	}
}

// TestStalledRequestTimesOut: a request the server never answers fails
// when its timeout runs out. It runs alone, so the timeout cuts nothing
// else short however slow the machine is.
func TestStalledRequestTimesOut(t *testing.T) {
	srv := shardtest.New(t)
	data, _ := runPaths(t, srv, []string{"/stall"}, run{streaming: true, timeout: 100 * time.Millisecond})
	if r := data.Results[0]; r.Success || r.Error != "request timed out after 100ms" {
		t.Errorf("stalled request: success %v error %q; want the timeout", r.Success, r.Error)
	}
}

func TestConnectRefused(t *testing.T) {
	srv := shardtest.New(t)
	srv.StopListening()
	data, _ := runPaths(t, srv, []string{"/ok/1", "/ok/1"}, run{streaming: true})
	for _, res := range data.Results {
		want := "connect " + srv.Addr.String() + ": connection refused"
		if res.Success || res.Error != want {
			t.Errorf("request %d: error %q; want %q", res.Index, res.Error, want)
		}
	}
}

func TestConcurrencyCapHeldAcrossShards(t *testing.T) {
	srv := shardtest.New(t)
	paths := make([]string, 40)
	for i := range paths {
		paths[i] = "/slow/5"
	}
	data, _ := runPaths(t, srv, paths, run{shards: 3, slots: 2, limit: 4, streaming: true})
	for _, res := range data.Results {
		if !res.Success {
			t.Fatalf("request %d failed: %s", res.Index, res.Error)
		}
	}
	if got := srv.MaxActive.Load(); got > 4 {
		t.Errorf("server saw %d requests at once; cap is 4", got)
	}
	if got := srv.MaxActive.Load(); got < 2 {
		t.Errorf("server saw at most %d requests at once; the cap of 4 was never used", got)
	}
}

func TestPoolingResponse(t *testing.T) {
	srv := shardtest.New(t)
	data, _ := runPaths(t, srv, []string{"/pool", "/pool", "/500"}, run{slots: 1})
	for i, res := range data.Results[:2] {
		if !res.Success || res.PromptLen != 7 || res.TTFTNs <= 0 || res.TTFTNs != res.LatencyNs {
			t.Errorf("pooling request %d: %+v", i, res)
		}
	}
	if r := data.Results[2]; r.Success || r.Error != "Internal Server Error" {
		t.Errorf("pooling 500: %+v", r)
	}
}

// single is one running shard over requests, for tests that release
// requests and stop the shard themselves.
type single struct {
	sh    *Shard
	q     *Queue
	rec   *metrics.Recorder
	clock Clock
	wg    sync.WaitGroup
}

func startSingle(t *testing.T, srv *shardtest.Server, reqs []Request, slots int, timeout time.Duration) *single {
	t.Helper()
	s := &single{q: NewQueueOf(reqs, 0), clock: NewClock(), rec: metrics.NewRecorder(metrics.Options{})}
	var err error
	s.sh, err = New(Config{CPU: -1, Addr: srv.Addr, Streaming: true, Queue: s.q, Slots: slots,
		ConnectTimeout: time.Minute, RequestTimeout: timeout, Clock: s.clock, Recorder: s.rec})
	if err != nil {
		t.Fatal(err)
	}
	s.wg.Go(s.sh.Run)
	return s
}

func (s *single) release(i int) {
	s.q.Release(i, s.clock.Now())
	s.sh.WakeIfSleeping()
}

// finish waits for every request (abort: cancels them instead) and
// returns the results.
func (s *single) finish(abort bool) []metrics.RequestResult {
	if abort {
		s.sh.Abort()
	} else {
		<-s.q.Done()
		s.sh.Stop()
	}
	s.wg.Wait()
	return metricstest.Merge(s.q.Len(), s.rec).Results
}

func TestAbortCancelsInFlight(t *testing.T) {
	srv := shardtest.New(t)
	s := startSingle(t, srv, []Request{{Wire: shardtest.Wire("/ok/1")}, {Wire: shardtest.Wire("/stall")}}, 2, time.Hour)
	s.release(0)
	s.release(1)
	for s.rec.Completed() < 1 || srv.Requests.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	results := s.finish(true)
	if !results[0].Success {
		t.Errorf("completed request lost: %+v", results[0])
	}
	if r := results[1]; r.Success || r.Error != "cancelled" {
		t.Errorf("stalled request: success=%v error %q; want cancelled", r.Success, r.Error)
	}
}

func TestIdleConnectionClosedByServer(t *testing.T) {
	srv := shardtest.New(t)
	s := startSingle(t, srv, []Request{{Wire: shardtest.Wire("/drop/2")}, {Wire: shardtest.Wire("/ok/2")}}, 1, time.Hour)
	s.release(0)
	for s.rec.Completed() < 1 {
		time.Sleep(time.Millisecond)
	}
	// Send the second request while the server is closing the first's
	// connection (within its 20 ms), or after. Either the shard saw the
	// close first and the request goes on a new connection, or it went out
	// on the closing one and fails: it is never sent twice.
	time.Sleep(15 * time.Millisecond)
	s.release(1)
	results := s.finish(false)
	if !results[0].Success {
		t.Errorf("request 0: %q", results[0].Error)
	}
	if r := results[1]; !r.Success && !strings.Contains(r.Error, "on a reused keep-alive connection (not sent again)") {
		t.Errorf("request 1: %q; want success or a failure on the reused connection", r.Error)
	}
	if got := srv.Requests.Load(); got > 2 {
		t.Errorf("server saw %d requests for 2 sent", got)
	}
}

// A reused connection reset before any response byte fails its request:
// it is not sent again on a new connection, as Python's client does not
// replay a POST.
func TestReusedConnectionResetIsNotResent(t *testing.T) {
	srv := shardtest.New(t)
	data, _ := runPaths(t, srv, []string{"/ok/1", "/reset-head", "/ok/1"}, run{slots: 1, limit: 1, streaming: true})
	if r := data.Results[0]; !r.Success {
		t.Errorf("request 0: %q", r.Error)
	}
	want := "connection reset by peer before the response head on a reused keep-alive connection (not sent again)"
	if r := data.Results[1]; r.Success || r.Error != want {
		t.Errorf("request 1: success %v, error %q; want %q", r.Success, r.Error, want)
	}
	if r := data.Results[2]; !r.Success {
		t.Errorf("request 2 (after the reset): %q", r.Error)
	}
	if got := srv.Requests.Load(); got != 3 {
		t.Errorf("server saw %d requests; want 3, each once", got)
	}
	if got := srv.Accepted.Load(); got != 2 {
		t.Errorf("server accepted %d connections; want 2 (one reused, one after the reset)", got)
	}
}

func TestReusedTLSConnectionResetIsNotResent(t *testing.T) {
	srv, tlsConfig := shardtest.NewTLS(t)
	paths := []string{"/ok/1", "/reset-head"}
	reqs := make([]Request, len(paths))
	for i, p := range paths {
		reqs[i] = Request{Wire: shardtest.Wire(p)}
	}
	q := NewQueueOf(reqs, 1)
	clock := NewClock()
	rec := metrics.NewRecorder(metrics.Options{})
	tr := startFallback(Config{Addr: srv.Addr, Streaming: true, Kind: sse.Completions, Queue: q,
		ConnectTimeout: 2 * time.Second, RequestTimeout: 10 * time.Second, Clock: clock, Recorder: rec}, tlsConfig, 1, "")
	for i := range reqs {
		q.Release(i, clock.Now())
		tr.Wake()
	}
	<-q.Done()
	tr.Stop()
	tr.Wait()
	results := metricstest.Merge(len(reqs), rec).Results
	if !results[0].Success {
		t.Errorf("request 0: %q", results[0].Error)
	}
	if r := results[1]; r.Success || !strings.Contains(r.Error, "on a reused keep-alive connection (not sent again)") {
		t.Errorf("request 1: success %v, error %q; want a failure on the reused connection", r.Success, r.Error)
	}
	if got := srv.Requests.Load(); got != 2 {
		t.Errorf("server saw %d requests; want 2, each once", got)
	}
}

func TestLargeRequestWrittenAcrossEPOLLOUT(t *testing.T) {
	srv := shardtest.New(t)
	body := []byte(`{"prompt":"` + strings.Repeat("x", 8<<20) + `"}`)
	s := startSingle(t, srv, []Request{{Wire: shardtest.WireBody("/ok/3", body)}, {Wire: shardtest.WireBody("/ok/3", body)}}, 2, time.Hour)
	s.release(0)
	s.release(1)
	for _, r := range s.finish(false) {
		if !r.Success || r.ChunkEvents != 3 {
			t.Errorf("8 MiB request %d: success %v, %d events, error %q", r.Index, r.Success, r.ChunkEvents, r.Error)
		}
	}
}

// A response larger than the read buffer arrives in one write: with
// edge-triggered readiness the loop must drain it within one event (no
// second edge comes), and the connection must then carry the next request.
func TestResponseLargerThanReadBufferIsDrained(t *testing.T) {
	srv := shardtest.New(t)
	const tokens = 4000 // about 300 KB of chunked SSE, several full reads
	data, health := runPaths(t, srv, []string{"/ok/4000", "/ok/2", "/ok/4000"},
		run{slots: 1, limit: 1, streaming: true, stamps: true})
	for i, want := range []int{tokens, 2, tokens} {
		if r := data.Results[i]; !r.Success || r.ChunkEvents != want {
			t.Errorf("request %d: success %v, events %d, error %q; want %d events", i, r.Success, r.ChunkEvents, r.Error, want)
		}
	}
	if got := srv.Accepted.Load(); got != 1 {
		t.Errorf("server accepted %d connections; want 1 (keep-alive reuse after large responses)", got)
	}
	if health[0].Reads < 2*int64(tokens*70/readBufferSize) {
		t.Errorf("%d reads; the responses should have taken several full buffers", health[0].Reads)
	}
}

// The loop pauses between busy turns only while reads carry kernel stamps:
// without them its own clock stamps each read, and a pause would show in
// every token time.
func TestPausesOnlyWithKernelStamps(t *testing.T) {
	shardtest.HoldKernelStamps(t) // the stamped run must have stamps from its first read
	for _, stamps := range []bool{false, true} {
		srv := shardtest.New(t)
		data, health := runPaths(t, srv, repeatPath("/ok/5", 10), run{slots: 2, limit: 2, streaming: true, stamps: stamps})
		for _, res := range data.Results {
			if !res.Success || res.ChunkEvents != 5 {
				t.Fatalf("stamps %v, request %d: success %v, events %d, error %q", stamps, res.Index, res.Success, res.ChunkEvents, res.Error)
			}
		}
		h := health[0]
		switch {
		case !stamps && (h.Naps != 0 || h.StampedReads != 0):
			t.Errorf("kernel stamps off: %d pauses, %d stamped reads; want none", h.Naps, h.StampedReads)
		case stamps && h.Naps == 0:
			t.Errorf("kernel stamps on: no pause in %d turns with events", h.Waits)
		}
		if h.Waits == 0 || h.Events < h.Waits {
			t.Errorf("stamps %v: %d waits returned %d events", stamps, h.Waits, h.Events)
		}
	}
}

func repeatPath(path string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = path
	}
	return out
}

// A server writing without pause must not keep the shard from its other
// connections or its deadlines: the floods fail at their deadline, the
// streams beside them complete.
func TestFloodDoesNotStarveOthers(t *testing.T) {
	srv := shardtest.New(t)
	paths := []string{"/flood", "/flood-tokens", "/slow/50", "/ok/5", "/slow/300", "/ok/4000"}
	data, health := runPaths(t, srv, paths, run{streaming: true, timeout: 2 * time.Second})
	for i, p := range paths {
		r := data.Results[i]
		switch p {
		case "/flood", "/flood-tokens":
			if r.Success || r.Error != "request timed out after 2s" {
				t.Errorf("%s: success %v, error %q; want the deadline", p, r.Success, r.Error)
			}
		default:
			if !r.Success {
				t.Errorf("%s: %q", p, r.Error)
			}
		}
	}
	// The ring bounds a turn's reads by its buffers instead (see
	// uring_linux.go); the loop's own reads defer.
	if health[0].RingReads == 0 && health[0].Deferred == 0 {
		t.Errorf("no read was deferred to a later turn while three servers flooded")
	}
}

// Abort ends the loop however fast a server writes.
func TestAbortDuringFlood(t *testing.T) {
	srv := shardtest.New(t)
	s := startSingle(t, srv, []Request{{Wire: shardtest.Wire("/flood")}, {Wire: shardtest.Wire("/flood-tokens")}}, 2, time.Hour)
	s.release(0)
	s.release(1)
	for srv.Requests.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	for _, r := range s.finish(true) {
		if r.Success || r.Error != "cancelled" {
			t.Errorf("request %d: success %v, error %q; want cancelled", r.Index, r.Success, r.Error)
		}
	}
}

func TestMaxResponseBytes(t *testing.T) {
	srv := shardtest.New(t)
	paths := []string{"/flood", "/ok/5", "/ok/4000", "/flood-tokens"}
	data, _ := runPaths(t, srv, paths, run{streaming: true, timeout: time.Minute, maxResponse: 64 << 10})
	for i, p := range paths {
		r := data.Results[i]
		switch p {
		case "/ok/5":
			if !r.Success {
				t.Errorf("%s: %q", p, r.Error)
			}
		default:
			if r.Success || !strings.HasPrefix(r.Error, "response exceeded --max-response-bytes (64.0 KiB) ") {
				t.Errorf("%s: success %v, error %q; want the byte limit", p, r.Success, r.Error)
			}
		}
	}
}

// The memory budget fails the requests that hold too many unparsed bytes
// and no other; every byte is given back when they end.
func TestBudgetFailsEndlessLines(t *testing.T) {
	srv := shardtest.New(t)
	budget := NewBudget(1 << 20)
	paths := []string{"/endless", "/ok/5", "/endless", "/endless", "/ok/4000", "/endless", "/ok/1"}
	data, _ := runPaths(t, srv, paths, run{shards: 2, streaming: true, timeout: time.Minute, budget: budget})
	for i, p := range paths {
		r := data.Results[i]
		if p != "/endless" {
			if !r.Success {
				t.Errorf("%s: %q", p, r.Error)
			}
			continue
		}
		if r.Success || !strings.HasPrefix(r.Error, "response exceeded the memory budget for unparsed bytes (--max-buffered-bytes 1.0 MiB): it held ") {
			t.Errorf("%s: success %v, error %q; want the memory budget", p, r.Success, r.Error)
		}
	}
	if got := budget.Used(); got != 0 {
		t.Errorf("budget holds %d bytes after the run; want 0", got)
	}
}
