package shard

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stampede-bench/stampede/internal/tls13"
	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/sse"
	"github.com/valyala/fastjson"
)

// Client is one blocking keep-alive connection, plain TCP or TLS, that
// runs requests one at a time on its caller's goroutine: the exchange
// layer of the TLS transport's workers and of the side probes (engine).
// The bytes go through the same Response parsers as on the shard loops,
// and every read carries the kernel's receive stamp (recvmsg on the raw
// socket, under crypto/tls for TLS). A request is never sent twice.
type Client struct {
	cfg   *Config
	tls   *tls.Config // nil: plain TCP
	addr  string
	stats *ClientStats

	c     conn
	raw   *stampedConn // nil: no connection
	tc    *tls.Conn    // over raw, for TLS
	buf   []byte
	json  fastjson.Parser
	clock stampClock
	keys  keyLog       // the connection's secrets
	rr    recordReader // reads the server's records once rr.open.Key is set

	// dialCtx is cancelled once an interrupt's cutoff passes: a connect in
	// progress gives up.
	dialCtx    context.Context
	cancelDial context.CancelFunc

	mu          sync.Mutex // guards live's deadline against Interrupt
	live        net.Conn   // the connection whose deadline bounds the exchange
	interrupted bool
	cutoff      time.Time // after Interrupt: the latest any deadline may be
	cutTimer    *time.Timer
}

// ClientStats are counters shared by the Clients of one transport.
type ClientStats struct {
	reads, stamped, connections atomic.Int64
	hsCount, hsResumed          atomic.Int64
	hsDone                      atomic.Int64 // handshakes that succeeded
	hsTimeouts                  atomic.Int64 // handshakes the connect timeout ended
	hsCPUNs, hsTimeNs           atomic.Int64
	longestDelayNs              atomic.Int64 // kernel arrival → reader, the longest
	ownRecords                  atomic.Int64 // TLS connections read by recordReader
	// dials counts connects over all the clients, to go round-robin
	// over Config.SourceAddrs.
	dials atomic.Int64
}

// clientReadSize is a Client's read buffer when it does not read TLS
// records itself: a token event is a few hundred bytes, and a larger
// answer comes in pieces.
const clientReadSize = 4 << 10

// NewClient returns a Client for cfg's server (cfg.Addr, timeouts, stream
// format, clock, kernel stamps, response limits; Queue and Slots are not
// used). tlsConfig nil speaks plain TCP; otherwise it should come
// from PrepareTLS. stats, if not nil, collects the counters.
func NewClient(cfg *Config, tlsConfig *tls.Config, stats *ClientStats) *Client {
	if stats == nil {
		stats = &ClientStats{}
	}
	cl := &Client{cfg: cfg, tls: tlsConfig, addr: cfg.Addr.String(), stats: stats, clock: newStampClock(cfg.Clock)}
	cl.c.Init(sse.NewDecoder(cfg.Kind), cfg.Streaming)
	cl.c.SetLimits(cfg.MaxResponseBytes, cfg.Budget)
	cl.dialCtx, cl.cancelDial = context.WithCancel(context.Background())
	return cl
}

// Do runs req, request number i released at arrivalNs, to its end and
// records it in rec; a negative arrivalNs is the start itself (no queue
// time). mu, if not nil, serialises rec's ending methods with other
// Clients'. hs receives the handshake of a new TLS connection.
func (cl *Client) Do(rec *metrics.Recorder, mu *sync.Mutex, i int, req *Request, arrivalNs int64, hs *HandshakeTimes) {
	clock := cl.cfg.Clock
	startNs := clock.Now()
	if arrivalNs < 0 {
		arrivalNs = startNs
	}
	rec.Begin(&cl.c.stream, i, req.PromptLen, arrivalNs, startNs)
	cl.c.beginRequest(req)
	cl.clock.refresh(startNs)
	deadline := clock.Base().Add(time.Duration(startNs) + cl.cfg.RequestTimeout)
	failText, ok := cl.exchange(req, deadline, hs)
	if mu != nil {
		mu.Lock()
	}
	if ok {
		cl.c.End(rec, &cl.json, req.NumInputSequences)
	} else {
		rec.Fail(&cl.c.stream, failText)
	}
	if mu != nil {
		mu.Unlock()
	}
	cl.c.giveBack()
	if !ok || !cl.c.keepAlive {
		cl.Close()
	}
}

// Interrupt makes the exchange in flight, if any, end by deadline, and
// every later one fail "cancelled" once it has passed; the zero deadline
// is now. An earlier cutoff stands. Any goroutine.
func (cl *Client) Interrupt(deadline time.Time) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if deadline.IsZero() {
		deadline = time.Unix(1, 0)
	}
	if cl.interrupted && !deadline.Before(cl.cutoff) {
		return
	}
	cl.interrupted, cl.cutoff = true, deadline
	if cl.live != nil {
		cl.live.SetDeadline(deadline)
	}
	if cl.cutTimer != nil {
		cl.cutTimer.Stop()
	}
	cl.cutTimer = time.AfterFunc(time.Until(deadline), cl.cancelDial)
}

func (cl *Client) wasInterrupted() bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.interrupted
}

// setLive makes c the connection Interrupt bounds, with deadline d (no
// later than an interrupt's cutoff); nil forgets it.
func (cl *Client) setLive(c net.Conn, d time.Time) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.live = c
	if c == nil {
		return
	}
	if cl.interrupted && cl.cutoff.Before(d) {
		d = cl.cutoff
	}
	c.SetDeadline(d)
}

// Close closes the connection, if any.
func (cl *Client) Close() {
	if cl.raw == nil {
		return
	}
	cl.setLive(nil, time.Time{})
	if cl.tc != nil {
		cl.tc.Close()
	} else {
		cl.raw.Close()
	}
	cl.tc, cl.raw = nil, nil
}

// exchange sends req and reads its response. It returns ok, or the
// failure text. An idle kept-alive connection the server has closed (or
// written on) meanwhile is replaced before the request goes out; a request
// is never sent twice, so one a reused connection loses just as it arrives
// fails, as it does in Python's client.
func (cl *Client) exchange(req *Request, deadline time.Time, hs *HandshakeTimes) (string, bool) {
	if cl.raw != nil && !cl.idleOpen() {
		cl.Close()
	}
	reused := cl.raw != nil
	if !reused {
		if text, ok := cl.dial(deadline, hs); !ok {
			return text, false
		}
	}
	if cl.tc != nil {
		cl.setLive(cl.tc, deadline)
	} else {
		cl.setLive(cl.raw, deadline)
	}
	text, ok, early := cl.roundTrip(req)
	if !ok && early && reused && !cl.wasInterrupted() {
		text += " on a reused keep-alive connection (not sent again)"
	}
	return text, ok
}

// idleOpen reports whether the idle kept-alive connection can carry a
// request: the server has neither closed it nor sent anything on it (both
// would already be waiting in the socket).
func (cl *Client) idleOpen() bool {
	open := false
	cl.raw.raw.Control(func(fd uintptr) {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = err == syscall.EAGAIN
	})
	return open
}

// roundTrip writes the request and feeds the response to the parsers.
// early says the connection failed before any response byte.
func (cl *Client) roundTrip(req *Request) (text string, ok, early bool) {
	c := &cl.c
	var err error
	if cl.tc != nil {
		_, err = cl.tc.Write(req.Wire)
	} else {
		_, err = cl.raw.Write(req.Wire)
	}
	if err != nil {
		return cl.errorText(err), false, true
	}
	// No transmit stamps on a blocking connection: the clock after the write.
	c.stream.Sent(cl.cfg.Clock.Now())
	gotBytes := false
	for {
		var data []byte
		var err error
		switch {
		case cl.rr.open.Key != nil:
			data, err = cl.rr.next(cl.raw, cl.tc)
		default:
			if cl.buf == nil {
				cl.buf = make([]byte, clientReadSize)
			}
			var n int
			if cl.tc != nil {
				n, err = cl.tc.Read(cl.buf)
			} else {
				n, err = cl.raw.readAny(cl.buf)
			}
			data = cl.buf[:n]
		}
		n := len(data)
		ts := cl.cfg.Clock.Now()
		if stamp := cl.raw.stampNs; stamp != 0 {
			now := ts
			ts = cl.clock.runTime(stamp, ts)
			longest := &cl.stats.longestDelayNs
			for d, m := now-ts, longest.Load(); d > m; m = longest.Load() {
				if longest.CompareAndSwap(m, d) {
					break
				}
			}
		}
		ts = max(ts, c.stream.StartNs())
		if n > 0 {
			if !gotBytes {
				c.stream.FirstByte(ts)
			}
			gotBytes = true
			if _, failure, ok, decided := c.Consume(data, ts); decided {
				return failure, ok, false
			}
		}
		if err == io.EOF {
			if !gotBytes {
				return c.FailureText(ErrClosedByPeer), false, true
			}
			failure, ok := c.Closed(ts)
			return failure, ok, false
		}
		if err != nil {
			return cl.errorText(err), false, !gotBytes && IsReset(err)
		}
	}
}

func (cl *Client) errorText(err error) string {
	switch {
	case cl.wasInterrupted():
		return "cancelled"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "request timed out after " + cl.cfg.RequestTimeout.String()
	}
	return cl.c.FailureText(err)
}

// dial connects, enables receive timestamps and, for TLS, completes the
// handshake, noting its times in hs.
func (cl *Client) dial(deadline time.Time, hs *HandshakeTimes) (string, bool) {
	if cl.wasInterrupted() && !time.Now().Before(cl.cutoffTime()) {
		return "cancelled", false
	}
	clock := cl.cfg.Clock
	// The connect timeout covers the connect and the TLS handshake
	// together, as on the loops (see Shard.startTLS).
	connectBy := time.Now().Add(cl.cfg.ConnectTimeout)
	d := net.Dialer{Timeout: cl.cfg.ConnectTimeout, Deadline: deadline}
	if srcs := cl.cfg.SourceAddrs; len(srcs) > 0 {
		n := cl.stats.dials.Add(1) - 1
		d.LocalAddr = &net.TCPAddr{IP: srcs[int(n%int64(len(srcs)))].AsSlice()}
	}
	nc, err := d.DialContext(cl.dialCtx, "tcp", cl.addr)
	if err != nil {
		var errno syscall.Errno
		switch {
		case cl.dialCtx.Err() != nil:
			return "cancelled", false
		case errors.As(err, &errno):
			return "connect " + cl.addr + ": " + errno.Error(), false
		case errors.Is(err, os.ErrDeadlineExceeded), isTimeout(err):
			return "connect " + cl.addr + ": timed out after " + cl.cfg.ConnectTimeout.String(), false
		}
		return "connect " + cl.addr + ": " + err.Error(), false
	}
	cl.stats.connections.Add(1)
	cl.c.stream.Connected(clock.Now())
	raw, err := newStampedConn(nc.(*net.TCPConn), cl.cfg.KernelTimestamps, &cl.stats.reads, &cl.stats.stamped)
	if err != nil {
		nc.Close()
		return "connect " + cl.addr + ": " + err.Error(), false
	}
	cl.rr.reset()
	if cl.tls == nil {
		cl.raw = raw
		return "", true
	}
	cfg := cl.tls.Clone()
	cl.keys = keyLog{next: cl.tls.KeyLogWriter}
	cfg.KeyLogWriter = &cl.keys
	tc := tls.Client(raw, cfg)
	cl.setLive(tc, minTime(deadline, connectBy))
	st := cl.stats
	start := clock.Now()
	cpu, err := handshake(tc)
	end := clock.Now()
	*hs = HandshakeTimes{StartNs: start, EndNs: end, CPU: cpu}
	st.hsCount.Add(1)
	st.hsCPUNs.Add(int64(cpu))
	st.hsTimeNs.Add(end - start)
	if err != nil {
		cl.setLive(nil, time.Time{})
		tc.Close()
		switch {
		case cl.wasInterrupted():
			return "cancelled", false
		case errors.Is(err, os.ErrDeadlineExceeded) && connectBy.Before(deadline):
			st.hsTimeouts.Add(1)
			return "connect " + cl.addr + ": " + errHandshakeTimeout(cl.cfg.ConnectTimeout).Error(), false
		}
		return "TLS handshake with " + cl.addr + ": " + err.Error(), false
	}
	if tc.ConnectionState().DidResume {
		hs.Resumed = true
		st.hsResumed.Add(1)
	}
	cl.c.stream.Handshaken(clock.Now())
	cl.raw, cl.tc = raw, tc
	st.hsDone.Add(1)
	if cs := tc.ConnectionState(); cs.Version == tls.VersionTLS13 && cl.keys.server != nil {
		// Otherwise crypto/tls reads (TLS 1.2).
		if key, _ := tls13.NewKey(cs.CipherSuite, cl.keys.server); key != nil {
			cl.rr.open.Reset(key)
			st.ownRecords.Add(1)
		}
	}
	return "", true
}

func (cl *Client) cutoffTime() time.Time {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.cutoff
}

// handshake runs tc's handshake on a goroutine of its own, locked to its
// thread so that the thread's CPU clock is the handshake's CPU. The
// handshake's deep stack (certificate parsing, signature checks) then goes
// with that goroutine instead of staying with the worker for the run:
// 10,000 workers would keep tens of KiB each.
// handshakeSlots bounds the handshakes in progress in the process. Each
// holds a locked OS thread and a deep stack, and they are CPU-bound on the
// client's side: 2,000 connections opened at once held ~1,000 threads and
// 54 MB of stacks, to no gain in how soon they were all done. 64 keeps
// the cores busy while some wait for the server's flight.
var handshakeSlots = make(chan struct{}, 64)

func handshake(tc *tls.Conn) (time.Duration, error) {
	type result struct {
		cpu time.Duration
		err error
	}
	done := make(chan result, 1)
	handshakeSlots <- struct{}{}
	defer func() { <-handshakeSlots }()
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cpu0 := threadCPU()
		err := tc.Handshake()
		done <- result{threadCPU() - cpu0, err}
	}()
	r := <-done
	return r.cpu, r.err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Stats returns the counters of the Client's transport (reads, stamped
// reads, connections, TLS handshakes) as a Health.
func (cl *Client) Stats() Health {
	st := cl.stats
	return Health{
		CPU: -1, Reads: st.reads.Load(), StampedReads: st.stamped.Load(), Connections: st.connections.Load(),
		TLSHandshakes: st.hsCount.Load(), TLSResumed: st.hsResumed.Load(), TLSHandshakeTimeouts: st.hsTimeouts.Load(),
	}
}

// minTime is the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
