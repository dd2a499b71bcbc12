package shard

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stampede-bench/stampede/internal/tls13"
	"github.com/stampede-bench/stampede/sse"
	"github.com/valyala/fastjson"
	"golang.org/x/sys/unix"
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

	// handshakes[i] is the handshake of the connection request i opened;
	// zero when it reused one.
	handshakes         []HandshakeTimes
	hsCount, hsResumed atomic.Int64
	hsDone             atomic.Int64 // handshakes that succeeded
	hsCPUNs, hsTimeNs  atomic.Int64
	longestDelayNs     atomic.Int64 // kernel arrival → worker, the longest
	startCPU           time.Duration
	ownRecords         atomic.Int64 // connections read by recordReader
	ktls               string       // whether the kernel offers kTLS
}

// HandshakeTimes is one TLS connection's handshake: when it began and
// ended on the run clock (TCP connected → handshake done), the CPU time
// its goroutine spent in it, and whether it resumed a session.
type HandshakeTimes struct {
	StartNs, EndNs int64
	CPU            time.Duration
	Resumed        bool
}

// StartTLS starts workers goroutines (one per concurrent request) serving
// cfg.Queue over TLS. cfg.Slots is ignored; tlsConfig must name the server
// (ServerName) unless it skips verification.
//
// Unless tlsConfig says otherwise, connections share a session cache, so a
// reconnect resumes with a TLS 1.3 ticket instead of a full handshake, and
// the key exchange is X25519 (then P-256), without the hybrid ML-KEM share
// that would triple each handshake's client CPU.
func StartTLS(cfg Config, tlsConfig *tls.Config, workers int) *TLSTransport {
	tlsConfig = tlsConfig.Clone()
	if tlsConfig.ClientSessionCache == nil {
		tlsConfig.ClientSessionCache = tls.NewLRUClientSessionCache(max(workers, 64))
	}
	if len(tlsConfig.CurvePreferences) == 0 {
		tlsConfig.CurvePreferences = []tls.CurveID{tls.X25519, tls.CurveP256}
	}
	t := &TLSTransport{
		cfg:        cfg,
		tls:        tlsConfig,
		addr:       cfg.Addr.String(),
		kick:       make(chan struct{}, workers),
		stopCh:     make(chan struct{}),
		keeper:     stampKeeper{fd: -1},
		handshakes: make([]HandshakeTimes, len(cfg.Requests)),
		startCPU:   processCPU(),
	}
	if ok, why := KTLSAvailable(); ok {
		t.ktls = "kTLS available but unused"
	} else {
		t.ktls = "no kTLS (" + why + ")"
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

// Health reports the transport as one entry: the process's CPU time since
// StartTLS (the workers are goroutines on no thread of their own), the
// longest a received record waited between its kernel stamp and its
// worker (the goroutine counterpart of a loop turn), reads, connections
// and the handshakes' share.
func (t *TLSTransport) Health() Health {
	return Health{
		CPU: -1, CPUTime: processCPU() - t.startCPU,
		LongestTurn: time.Duration(t.longestDelayNs.Load()),
		Reads:       t.reads.Load(), StampedReads: t.stamped.Load(),
		Connections:   t.connections.Load(),
		TLSHandshakes: t.hsCount.Load(), TLSResumed: t.hsResumed.Load(),
		TLSHandshakeCPU:  time.Duration(t.hsCPUNs.Load()),
		TLSHandshakeTime: time.Duration(t.hsTimeNs.Load()),
		TLSPath:          t.path(),
	}
}

// path names the TLS path the run's connections took.
func (t *TLSTransport) path() string {
	own, all := t.ownRecords.Load(), t.hsDone.Load()
	switch {
	case all == 0:
		return ""
	case own == all:
		return TLSPathUserspace + "; " + t.ktls
	case own == 0:
		return TLSPathCryptoTLS + "; " + t.ktls
	}
	return TLSPathUserspace + " on " + strconv.FormatInt(own, 10) + " of " + strconv.FormatInt(all, 10) +
		" connections, " + TLSPathCryptoTLS + " on the rest; " + t.ktls
}

// Handshake returns the TLS handshake of the connection request i opened,
// or the zero value if it reused a connection or never got one. Call it
// after Wait.
func (t *TLSTransport) Handshake(i int) HandshakeTimes { return t.handshakes[i] }

func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// threadCPU is the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
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
	keys  keyLog       // the connection's secrets
	rr    recordReader // reads the server's records once rr.key is set
}

// tlsReadSize is a worker's plaintext buffer when crypto/tls reads: a token
// event's record is a few hundred bytes, and crypto/tls hands a larger
// record over in pieces.
const tlsReadSize = 4 << 10

func (t *TLSTransport) work() {
	w := &tlsWorker{t: t, clock: newStampClock(t.cfg.Clock)}
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

	failText, ok := w.exchange(req, deadline, &t.handshakes[i])
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
func (w *tlsWorker) exchange(req *Request, deadline time.Time, hs *HandshakeTimes) (string, bool) {
	reused := w.tc != nil
	if !reused {
		if text, ok := w.dial(deadline, hs); !ok {
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
		var data []byte
		var err error
		if w.rr.key != nil {
			data, err = w.rr.next(w.raw, w.tc)
		} else {
			if w.buf == nil {
				w.buf = make([]byte, tlsReadSize)
			}
			var n int
			n, err = w.tc.Read(w.buf)
			data = w.buf[:n]
		}
		n := len(data)
		ts := w.t.cfg.Clock.Now()
		if stamp := w.raw.stampNs; stamp != 0 {
			now := ts
			ts = w.clock.runTime(stamp, ts)
			for d, m := now-ts, w.t.longestDelayNs.Load(); d > m; m = w.t.longestDelayNs.Load() {
				if w.t.longestDelayNs.CompareAndSwap(m, d) {
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

// dial connects, enables receive timestamps and completes the handshake,
// noting its times in hs.
func (w *tlsWorker) dial(deadline time.Time, hs *HandshakeTimes) (string, bool) {
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
	cfg := t.tls.Clone()
	w.keys = keyLog{next: t.tls.KeyLogWriter}
	cfg.KeyLogWriter = &w.keys
	tc := tls.Client(raw, cfg)
	tc.SetDeadline(deadline)
	start := t.cfg.Clock.Now()
	cpu, err := handshake(tc)
	end := t.cfg.Clock.Now()
	*hs = HandshakeTimes{StartNs: start, EndNs: end, CPU: cpu}
	t.hsCount.Add(1)
	t.hsCPUNs.Add(int64(cpu))
	t.hsTimeNs.Add(end - start)
	if err == nil && tc.ConnectionState().DidResume {
		hs.Resumed = true
		t.hsResumed.Add(1)
	}
	if err != nil {
		tc.Close()
		if t.aborting.Load() {
			return "cancelled", false
		}
		return "TLS handshake with " + t.addr + ": " + err.Error(), false
	}
	w.c.stream.Handshaken(t.cfg.Clock.Now())
	w.raw, w.tc = raw, tc
	t.hsDone.Add(1)
	w.rr.reset()
	if cs := tc.ConnectionState(); cs.Version == tls.VersionTLS13 && w.keys.server != nil {
		// Otherwise crypto/tls reads (TLS 1.2, ChaCha20).
		if w.rr.key, _ = tls13.NewKey(cs.CipherSuite, w.keys.server); w.rr.key != nil {
			t.ownRecords.Add(1)
		}
	}
	t.live.Store(tc, struct{}{})
	if t.aborting.Load() {
		tc.SetDeadline(time.Unix(1, 0))
	}
	return "", true
}

// handshake runs tc's handshake on a goroutine of its own, locked to its
// thread so that the thread's CPU clock is the handshake's CPU. The
// handshake's deep stack (certificate parsing, signature checks) then goes
// with that goroutine instead of staying with the worker for the run:
// 10,000 workers would keep tens of KiB each.
func handshake(tc *tls.Conn) (time.Duration, error) {
	type result struct {
		cpu time.Duration
		err error
	}
	done := make(chan result, 1)
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

func (w *tlsWorker) closeConn() {
	if w.tc == nil {
		return
	}
	w.t.live.Delete(w.tc)
	w.tc.Close()
	w.tc, w.raw = nil, nil
}

// stampedConn is a TCP connection whose reads go through recvmsg and keep
// the kernel's receive stamp of the latest read. The reads crypto/tls makes
// end at most at the end of a TLS record, so after the handshake it holds
// no byte of the records recordReader reads next.
type stampedConn struct {
	*net.TCPConn
	raw     syscall.RawConn
	rx      *receiver
	stampNs int64 // CLOCK_REALTIME of the latest read, 0 if none
	reads   *atomic.Int64
	stamped *atomic.Int64

	// inject, while injecting, is what Read returns instead of the
	// socket's bytes (a record recordReader hands to crypto/tls), then
	// errPaused.
	inject    []byte
	injecting bool

	hdr  [5]byte // the record header being read
	have int     // bytes of hdr read
	left int     // bytes of the current record's body not yet read

	// recv's arguments and results, so that raw.Read takes a method
	// value made once instead of a closure per read.
	recvFn  func(uintptr) bool
	p       []byte
	n       int
	stamp   int64
	recvErr error
}

func newStampedConn(c *net.TCPConn, kernelStamps bool, reads, stamped *atomic.Int64) (*stampedConn, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	if kernelStamps {
		raw.Control(func(fd uintptr) { enableRxTimestamps(int(fd)) })
	}
	s := &stampedConn{TCPConn: c, raw: raw, rx: newReceiver(1), reads: reads, stamped: stamped}
	s.recvFn = s.recv
	return s, nil
}

func (s *stampedConn) recv(fd uintptr) bool {
	data, rt, err := s.rx.recvInto(int(fd), s.p)
	if err == errWouldBlock {
		return false
	}
	s.n, s.stamp, s.recvErr = len(data), rt, err
	return true
}

// Read implements net.Conn for crypto/tls, honouring the connection's
// deadlines; a read ends at most at the end of a TLS record.
func (s *stampedConn) Read(p []byte) (int, error) {
	if s.injecting {
		if len(s.inject) == 0 {
			return 0, errPaused
		}
		n := copy(p, s.inject)
		s.inject = s.inject[n:]
		return n, nil
	}
	want := s.left
	if want == 0 {
		want = len(s.hdr) - s.have
	}
	if len(p) > want {
		p = p[:want]
	}
	n, err := s.readAny(p)
	if n > 0 {
		if s.left > 0 {
			s.left -= n
		} else if s.have += copy(s.hdr[s.have:], p[:n]); s.have == len(s.hdr) {
			s.left, s.have = int(binary.BigEndian.Uint16(s.hdr[3:])), 0
		}
	}
	return n, err
}

// readAny reads what the socket holds, up to len(p), and keeps the read's
// kernel stamp in stampNs.
func (s *stampedConn) readAny(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.p, s.n, s.stamp, s.recvErr = p, 0, 0, nil
	err := s.raw.Read(s.recvFn)
	s.p = nil
	if err == nil {
		err = s.recvErr
	}
	if err != nil {
		return 0, err
	}
	n := s.n
	if n == 0 {
		return 0, io.EOF
	}
	s.reads.Add(1)
	if s.stamp != 0 {
		s.stamped.Add(1)
	}
	s.stampNs = s.stamp
	return n, nil
}
