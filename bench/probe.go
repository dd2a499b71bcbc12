package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/shard"
	"github.com/stampede-bench/stampede/sse"
	"github.com/valyala/fastjson"
)

// Side probes (--probe-request-rate r, spec §c "Probes"). While the main
// run goes on, one loop sends a tiny copy of the test request, waits for
// its answer, sleeps 1/r seconds, and starts over, until the main requests
// have all ended; the loop's last request and sleep still count in the
// run's duration, as Python awaits the loop before taking it. The probes'
// E2EL shows how a lone short request fares while the server is loaded.
//
// The probe loop has its own keep-alive connection: it is not held back by
// --max-concurrency, and it never touches the shards' connections. Python
// also keeps probes out of the concurrency semaphore, but its probes share
// the aiohttp pool, whose size is --max-concurrency; with a cap a Python
// probe can wait for a main request to free a connection, which stampede's
// does not.

// probeReadBytes is the read buffer of the probe connection. A probe's
// answer is one token (a few hundred bytes); 32 KiB takes a pooling body or
// a chatty server's head in one read.
const probeReadBytes = 32 << 10

// probeLoop runs the side probes of one benchmark. A nil *probeLoop (no
// --probe-request-rate) does nothing.
type probeLoop struct {
	target         target
	wire           []byte
	usage          shard.PoolingUsage
	kind           sse.Kind
	streaming      bool
	interval       time.Duration
	connectTimeout time.Duration
	requestTimeout time.Duration
	cancelGrace    time.Duration
	origin         time.Time // the probes' run time 0
	stopCh, doneCh chan struct{}
	stopOnce       sync.Once
	endedAt        time.Time // when the loop returned; valid after doneCh
	results        []metrics.RequestResult
}

// newProbeLoop encodes the probe request: the test input (request #0
// without an id) with prompt "Hi", prompt_len 1, output_len 1, and no
// media or chat messages, exactly as Python's probe_loop replaces them. It
// returns nil when --probe-request-rate is not positive.
func (r *run) newProbeLoop() (*probeLoop, error) {
	c := r.cfg
	rate := c.ProbeRequestRate
	if !(rate > 0) {
		return nil, nil
	}
	if backendOf(c.Backend).api.kind == rerankKind {
		return nil, usageErrorf("--probe-request-rate is not supported with --backend %s: "+
			"the probe prompt \"Hi\" is not a query with documents", c.Backend)
	}
	probe := r.requests[0]
	probe.RequestID = ""
	probe.Prompt, probe.PromptIDs, probe.PromptList = "Hi", nil, nil
	probe.PromptLen, probe.ExpectedOutputLen = 1, 1
	probe.MultiModal, probe.ChatMessages, probe.Audio = nil, nil, nil
	params := BodyParams{
		Model: r.modelID, ModelName: r.modelName, Logprobs: c.Logprobs,
		IgnoreEOS: c.IgnoreEOS, ExtraBody: c.RequestExtraBody,
	}
	wire, err := r.encode(&probe, params)
	if err != nil {
		return nil, fmt.Errorf("probe request: %w", err)
	}
	usage, err := PoolingUsage(c.Backend, &probe, params)
	if err != nil {
		return nil, fmt.Errorf("probe request: %w", err)
	}
	// The same stream format and timeouts as the main requests.
	ec := r.engineConfig(nil)
	return &probeLoop{
		target:    r.target,
		wire:      wire,
		usage:     usage,
		kind:      ec.Kind,
		streaming: ec.Streaming,
		// An infinite rate gives Python's sleep(0): probes back to back.
		interval:       time.Duration(float64(time.Second) / rate),
		connectTimeout: orDefault(ec.ConnectTimeout, engine.DefaultConnectTimeout),
		requestTimeout: orDefault(ec.RequestTimeout, engine.DefaultRequestTimeout),
		cancelGrace:    orDefault(ec.CancelGrace, engine.DefaultCancelGrace),
	}, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// start begins sending probes on a goroutine. Cancelling ctx stops the loop
// at once: a probe in flight gets the cancel grace to finish, then fails
// "cancelled", as the engine treats its own requests.
func (l *probeLoop) start(ctx context.Context) {
	if l == nil {
		return
	}
	l.origin = time.Now()
	l.stopCh, l.doneCh = make(chan struct{}), make(chan struct{})
	p := newProber(ctx, l)
	stopInterrupt := context.AfterFunc(ctx, func() { p.interrupt(time.Now().Add(l.cancelGrace)) })
	go func() {
		defer close(l.doneCh)
		defer stopInterrupt()
		l.results = p.loop(l.stopCh)
		l.endedAt = time.Now()
	}()
}

// stop tells the loop that the main requests have ended and waits for it:
// the probe in flight and the sleep after it run to their end first, as in
// Python, where the stop event is only checked before each probe.
func (l *probeLoop) stop() {
	if l == nil {
		return
	}
	l.stopOnce.Do(func() { close(l.stopCh) })
	<-l.doneCh
}

// account folds the stopped loop into the run's result: the duration is
// extended to the loop's end (Python takes it after awaiting the loop), the
// probe times move onto the run clock, and the probe statistics are
// returned (nil when no probe succeeded, as Python prints no block then).
func (l *probeLoop) account(res *engine.Result) *metrics.ProbeStats {
	if l == nil {
		return nil
	}
	endNs := l.endedAt.Sub(res.Start).Nanoseconds() - res.ScheduleStartNs
	res.Data.DurationNs = max(res.Data.DurationNs, endNs)
	shift := l.origin.Sub(res.Start).Nanoseconds()
	for i := range l.results {
		l.results[i].StartNs += shift
		l.results[i].ArrivalNs += shift
	}
	return metrics.ComputeProbes(l.results)
}

// prober sends the probes, one at a time, over one keep-alive connection
// that it redials when the server has closed it. Its times are run times
// on the loop's origin. Only the loop's goroutine uses it, except interrupt.
type prober struct {
	l    *probeLoop
	ctx  context.Context // cancelled on Ctrl-C: connects in progress give up
	rec  *metrics.Recorder
	resp shard.Response
	json fastjson.Parser // pooling answers' bodies
	buf  []byte
	sent int

	conn   net.Conn
	raw    net.Conn // the TCP connection under conn (conn itself without TLS)
	reused bool     // conn carried an earlier probe

	mu          sync.Mutex // guards conn's deadline against interrupt
	cutoff      time.Time  // after a cancellation: the latest any deadline may be
	interrupted bool
}

func newProber(ctx context.Context, l *probeLoop) *prober {
	p := &prober{
		l:   l,
		ctx: ctx,
		rec: metrics.NewRecorder(metrics.Options{}),
		buf: make([]byte, probeReadBytes),
	}
	p.resp.Init(sse.NewDecoder(l.kind), l.streaming)
	return p
}

func (p *prober) now() int64 { return int64(time.Since(p.l.origin)) }

// loop is Python's probe_loop: until stop is closed, send a probe, await
// it, sleep the interval. It returns the probes' results in sending order.
func (p *prober) loop(stop <-chan struct{}) []metrics.RequestResult {
	defer p.closeConn()
	for p.ctx.Err() == nil {
		select {
		case <-stop:
			return p.results()
		default:
		}
		p.send()
		sleep := time.NewTimer(p.l.interval)
		select {
		case <-sleep.C:
		case <-p.ctx.Done():
			sleep.Stop()
		}
	}
	return p.results()
}

func (p *prober) results() []metrics.RequestResult {
	return metrics.Merge(p.sent, p.rec).Results
}

// interrupt makes the probe in flight, if any, end by deadline, and every
// later one at once. Any goroutine.
func (p *prober) interrupt(deadline time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.interrupted, p.cutoff = true, deadline
	if p.conn != nil {
		p.conn.SetDeadline(deadline)
	}
}

// setDeadline bounds the current exchange, no later than an interrupt's
// cutoff.
func (p *prober) setDeadline(d time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.interrupted && p.cutoff.Before(d) {
		d = p.cutoff
	}
	p.conn.SetDeadline(d)
}

func (p *prober) wasInterrupted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.interrupted
}

// send runs one probe to its end and records it as request number p.sent.
func (p *prober) send() {
	r := &p.resp
	startNs := p.now()
	// A probe is sent as soon as the loop reaches it, so it has no queue time.
	p.rec.Begin(r.Stream(), p.sent, 1, startNs, startNs)
	p.sent++
	r.Reset()
	r.SetPoolingUsage(p.l.usage, 1)
	deadline := p.l.origin.Add(time.Duration(startNs) + p.l.requestTimeout)
	text, ok := p.exchange(deadline, startNs)
	if ok {
		r.End(p.rec, &p.json, 1)
	} else {
		p.rec.Fail(r.Stream(), text)
	}
	if !ok || !r.KeepAlive() {
		p.closeConn()
	}
}

// exchange writes the probe and reads its response. A kept-alive
// connection the server has closed meanwhile is replaced before the probe
// goes out; a probe is never sent twice (Python's client does not replay
// a POST), so one the server closes or resets just as it arrives fails.
func (p *prober) exchange(deadline time.Time, startNs int64) (failure string, ok bool) {
	if p.conn != nil && !p.idleOpen() {
		p.closeConn()
	}
	reused := p.reused
	if p.conn == nil {
		if text, ok := p.dial(deadline); !ok {
			return text, false
		}
	}
	p.setDeadline(deadline)
	text, ok, early := p.roundTrip(startNs)
	if ok {
		p.reused = true
	} else if early && reused && !p.wasInterrupted() {
		text += " on a reused keep-alive connection (not sent again)"
	}
	return text, ok
}

// idleOpen reports whether the idle kept-alive connection can carry a
// probe: the server has neither closed it nor sent anything on it (both
// would already be waiting in the socket).
func (p *prober) idleOpen() bool {
	sc, ok := p.raw.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	rc.Control(func(fd uintptr) {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = err == syscall.EAGAIN
	})
	return open
}

// roundTrip writes the probe and feeds the answer to the parsers. early
// says the connection failed before any response byte arrived.
func (p *prober) roundTrip(startNs int64) (failure string, ok, early bool) {
	r := &p.resp
	if _, err := p.conn.Write(p.l.wire); err != nil {
		return p.errorText(err), false, true
	}
	gotBytes := false
	for {
		n, err := p.conn.Read(p.buf)
		// One clock read per read: every event parsed from it shares it.
		ts := max(p.now(), startNs)
		if n > 0 {
			gotBytes = true
			if _, failure, ok, decided := r.Consume(p.buf[:n], ts); decided {
				return failure, ok, false
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			if !gotBytes {
				return r.FailureText(shard.ErrClosedByPeer), false, true
			}
			failure, ok := r.Closed(ts)
			return failure, ok, false
		default:
			return p.errorText(err), false, !gotBytes && shard.IsReset(err)
		}
	}
}

// dial connects to the target (and completes the TLS handshake for https).
func (p *prober) dial(deadline time.Time) (failure string, ok bool) {
	t := p.l.target
	if p.wasInterrupted() {
		return "cancelled", false
	}
	d := net.Dialer{Timeout: p.l.connectTimeout, Deadline: deadline}
	nc, err := d.DialContext(p.ctx, t.network, t.address)
	if err != nil {
		var errno syscall.Errno
		switch {
		case p.ctx.Err() != nil:
			return "cancelled", false
		case errors.As(err, &errno):
			return "connect " + t.address + ": " + errno.Error(), false
		case isNetTimeout(err):
			return "connect " + t.address + ": timed out after " + p.l.connectTimeout.String(), false
		}
		return "connect " + t.address + ": " + err.Error(), false
	}
	raw := nc
	if t.tls != nil {
		tc := tls.Client(nc, t.tls)
		tc.SetDeadline(deadline)
		if err := tc.HandshakeContext(p.ctx); err != nil {
			tc.Close()
			if p.ctx.Err() != nil {
				return "cancelled", false
			}
			return "TLS handshake with " + t.address + ": " + err.Error(), false
		}
		nc = tc
	}
	p.mu.Lock()
	p.conn, p.raw, p.reused = nc, raw, false
	p.mu.Unlock()
	return "", true
}

func (p *prober) closeConn() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		p.conn.Close()
		p.conn, p.raw, p.reused = nil, nil, false
	}
}

// errorText names what ended a probe early.
func (p *prober) errorText(err error) string {
	switch {
	case p.wasInterrupted():
		return "cancelled"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "request timed out after " + p.l.requestTimeout.String()
	}
	return p.resp.FailureText(err)
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
