package shard

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stampede-bench/stampede/sse"
	"github.com/valyala/fastjson"
)

// TLSTransport sends requests to https:// targets. crypto/tls wants a
// blocking net.Conn, so this transport runs a goroutine per connection
// instead of an event loop; the bytes still go through the same httpwire
// and sse parsers into the same Recorder, and reads still carry the
// kernel's receive timestamp (recvmsg on the raw socket under crypto/tls).
// It takes work from the same Queue as the shards.
type TLSTransport struct {
	cfg  Config
	tls  *tls.Config
	addr string

	mu   sync.Mutex // serialises the Recorder's ending methods
	live sync.Map   // *tls.Conn → struct{}: open connections, for Abort

	kick     chan struct{}
	stopCh   chan struct{}
	stopOnce sync.Once
	aborting atomic.Bool
	wg       sync.WaitGroup

	reads, stamped, connections atomic.Int64
	keeper                      stampKeeper
}

// StartTLS starts workers goroutines (one per concurrent request) serving
// cfg.Queue over TLS. cfg.Slots is ignored; tlsConfig must name the server
// (ServerName) unless it skips verification.
func StartTLS(cfg Config, tlsConfig *tls.Config, workers int) *TLSTransport {
	t := &TLSTransport{
		cfg:    cfg,
		tls:    tlsConfig,
		addr:   cfg.Addr.String(),
		kick:   make(chan struct{}, workers),
		stopCh: make(chan struct{}),
		keeper: stampKeeper{fd: -1},
	}
	if cfg.KernelTimestamps {
		t.keeper, _ = openStampKeeper(stampSwitchWait)
	}
	for range workers {
		t.wg.Go(t.work)
	}
	return t
}

// Wake tells an idle worker that a request was released. Any goroutine.
func (t *TLSTransport) Wake() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// Stop lets the workers return once idle.
func (t *TLSTransport) Stop() { t.stopOnce.Do(func() { close(t.stopCh) }) }

// Abort fails the requests in flight as "cancelled" and stops the workers.
func (t *TLSTransport) Abort() {
	t.aborting.Store(true)
	t.Stop()
	t.live.Range(func(k, _ any) bool {
		k.(*tls.Conn).SetDeadline(time.Unix(1, 0))
		return true
	})
}

// Wait returns when every worker has returned.
func (t *TLSTransport) Wait() {
	t.wg.Wait()
	t.keeper.close()
}

// Health reports the transport's reads and connections as one entry.
func (t *TLSTransport) Health() Health {
	return Health{
		CPU: -1, Reads: t.reads.Load(), StampedReads: t.stamped.Load(),
		Connections: t.connections.Load(),
	}
}

// tlsWorker is one goroutine's connection and parse state.
type tlsWorker struct {
	t     *TLSTransport
	c     conn
	raw   *stampedConn
	tc    *tls.Conn
	buf   []byte
	json  fastjson.Parser
	clock stampClock
}

func (t *TLSTransport) work() {
	w := &tlsWorker{t: t, buf: make([]byte, 32<<10), clock: newStampClock(t.cfg.Clock)}
	w.c.Init(sse.NewDecoder(t.cfg.Kind), t.cfg.Streaming)
	w.c.SetLimits(t.cfg.MaxResponseBytes, t.cfg.Budget)
	defer w.closeConn()
	for !t.aborting.Load() {
		i, arrivalNs, ok := t.cfg.Queue.take()
		if !ok {
			select {
			case <-t.kick:
				continue
			case <-t.stopCh:
				return
			}
		}
		w.serve(i, arrivalNs)
	}
}

// serve runs request i to its end and records it.
func (w *tlsWorker) serve(i int, arrivalNs int64) {
	t := w.t
	req := &t.cfg.Requests[i]
	startNs := t.cfg.Clock.Now()
	t.cfg.Recorder.Begin(&w.c.stream, i, req.PromptLen, arrivalNs, startNs)
	w.c.beginRequest(req)
	w.clock.refresh(startNs)
	deadline := t.cfg.Clock.Base().Add(time.Duration(startNs) + t.cfg.RequestTimeout)

	failText, ok := w.exchange(req, deadline)
	t.mu.Lock()
	if ok {
		w.c.End(t.cfg.Recorder, &w.json, req.NumInputSequences)
	} else {
		t.cfg.Recorder.Fail(&w.c.stream, failText)
	}
	t.mu.Unlock()
	w.c.giveBack()
	t.cfg.Queue.finish()
	if !ok || !w.c.keepAlive {
		w.closeConn()
	}
}

// exchange sends req and reads its response. It returns ok, or the
// failure text. A request is never sent twice: a reused connection that
// the server closed just before the request went out fails it, as it does
// in Python's client.
func (w *tlsWorker) exchange(req *Request, deadline time.Time) (string, bool) {
	reused := w.tc != nil
	if !reused {
		if text, ok := w.dial(deadline); !ok {
			return text, false
		}
	}
	w.tc.SetDeadline(deadline)
	if w.t.aborting.Load() {
		// Abort may have set its past deadline before ours replaced it.
		w.tc.SetDeadline(time.Unix(1, 0))
	}
	text, ok, early := w.roundTrip(req)
	if !ok && early && reused {
		text += " on a reused keep-alive connection (not sent again)"
	}
	return text, ok
}

// roundTrip writes the request and feeds the response to the parsers.
// early says the connection failed before any response byte.
func (w *tlsWorker) roundTrip(req *Request) (text string, ok, early bool) {
	c := &w.c
	if _, err := w.tc.Write(req.Wire); err != nil {
		return w.errorText(err), false, !w.t.aborting.Load()
	}
	// No transmit stamps through crypto/tls: the clock after the write.
	c.stream.Sent(w.t.cfg.Clock.Now())
	gotBytes := false
	for {
		n, err := w.tc.Read(w.buf)
		ts := w.t.cfg.Clock.Now()
		if stamp := w.raw.stampNs.Load(); stamp != 0 {
			ts = w.clock.runTime(stamp, ts)
		}
		ts = max(ts, c.stream.StartNs())
		if n > 0 {
			if !gotBytes {
				c.stream.FirstByte(ts)
			}
			gotBytes = true
			if _, failure, ok, decided := c.Consume(w.buf[:n], ts); decided {
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
			return w.errorText(err), false, !gotBytes && IsReset(err)
		}
	}
}

func (w *tlsWorker) errorText(err error) string {
	switch {
	case w.t.aborting.Load():
		return "cancelled"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "request timed out after " + w.t.cfg.RequestTimeout.String()
	}
	return w.c.FailureText(err)
}

// dial connects, enables receive timestamps and completes the handshake.
func (w *tlsWorker) dial(deadline time.Time) (string, bool) {
	t := w.t
	d := net.Dialer{Timeout: t.cfg.ConnectTimeout, Deadline: deadline}
	nc, err := d.Dial("tcp", t.addr)
	if err != nil {
		var errno syscall.Errno
		switch {
		case errors.As(err, &errno):
			return "connect " + t.addr + ": " + errno.Error(), false
		case errors.Is(err, os.ErrDeadlineExceeded), isTimeout(err):
			return "connect " + t.addr + ": timed out after " + t.cfg.ConnectTimeout.String(), false
		}
		return "connect " + t.addr + ": " + err.Error(), false
	}
	t.connections.Add(1)
	w.c.stream.Connected(t.cfg.Clock.Now())
	raw, err := newStampedConn(nc.(*net.TCPConn), t.cfg.KernelTimestamps, &t.reads, &t.stamped)
	if err != nil {
		nc.Close()
		return "connect " + t.addr + ": " + err.Error(), false
	}
	tc := tls.Client(raw, t.tls)
	tc.SetDeadline(deadline)
	if err := tc.Handshake(); err != nil {
		tc.Close()
		if t.aborting.Load() {
			return "cancelled", false
		}
		return "TLS handshake with " + t.addr + ": " + err.Error(), false
	}
	w.c.stream.Handshaken(t.cfg.Clock.Now())
	w.raw, w.tc = raw, tc
	t.live.Store(tc, struct{}{})
	if t.aborting.Load() {
		tc.SetDeadline(time.Unix(1, 0))
	}
	return "", true
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (w *tlsWorker) closeConn() {
	if w.tc == nil {
		return
	}
	w.t.live.Delete(w.tc)
	w.tc.Close()
	w.tc, w.raw = nil, nil
}

// stampedConn is a TCP connection whose reads go through recvmsg, keeping
// the kernel's receive timestamp of the latest read for the TLS layer
// above it.
type stampedConn struct {
	*net.TCPConn
	raw     syscall.RawConn
	rx      *receiver
	stampNs atomic.Int64 // CLOCK_REALTIME of the latest read, 0 if none
	reads   *atomic.Int64
	stamped *atomic.Int64
}

func newStampedConn(c *net.TCPConn, kernelStamps bool, reads, stamped *atomic.Int64) (*stampedConn, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	if kernelStamps {
		raw.Control(func(fd uintptr) { enableRxTimestamps(int(fd)) })
	}
	return &stampedConn{TCPConn: c, raw: raw, rx: newReceiver(1), reads: reads, stamped: stamped}, nil
}

// Read implements net.Conn, honouring the connection's deadlines.
func (s *stampedConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var stamp int64
	var rerr error
	err := s.raw.Read(func(fd uintptr) bool {
		data, rt, err := s.rx.recvInto(int(fd), p)
		if err == errWouldBlock {
			return false
		}
		n, stamp, rerr = len(data), rt, err
		return true
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	s.reads.Add(1)
	if stamp != 0 {
		s.stamped.Add(1)
	}
	s.stampNs.Store(stamp)
	return n, nil
}
