package shard

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stampede-bench/stampede/internal/tls13"
	"golang.org/x/sys/unix"
)

// tlsFallback sends requests to https:// targets the loops cannot carry. crypto/tls wants a
// blocking net.Conn, so this transport runs a goroutine per connection
// instead of an event loop, each with its own Client; the bytes still go
// through the same httpwire and sse parsers into the same Recorder, and
// reads still carry the kernel's receive timestamp (recvmsg on the raw
// socket under crypto/tls). It takes work from the same Queue as the
// shards.
type tlsFallback struct {
	cfg     Config
	clients []*Client
	stats   ClientStats

	mu sync.Mutex // serialises the Recorder's ending methods

	kick     chan struct{}
	stopCh   chan struct{}
	stopOnce sync.Once
	aborting atomic.Bool
	wg       sync.WaitGroup

	keeper stampKeeper

	// handshakes[i] is the handshake of the connection request i opened;
	// zero when it reused one.
	handshakes []HandshakeTimes
	startCPU   time.Duration
	ktls       string // whether the kernel offers kTLS
	fallback   string // why the run is not on the shard loops
}

// HandshakeTimes is one TLS connection's handshake: when it began and
// ended on the run clock (TCP connected → handshake done), the CPU time
// its goroutine spent in it, and whether it resumed a session.
type HandshakeTimes struct {
	StartNs, EndNs int64
	CPU            time.Duration
	Resumed        bool
}

// startFallback starts workers goroutines (one per concurrent request)
// serving cfg.Queue over TLS; why is the reason the run is not on the
// loops, for Health's TLSPath. cfg.Slots is ignored; tlsConfig must name
// the server (ServerName) unless it skips verification.
//
// Unless tlsConfig says otherwise, connections share a session cache, so a
// reconnect resumes with a TLS 1.3 ticket instead of a full handshake, and
// the key exchange is X25519 (then P-256), without the hybrid ML-KEM share
// that would triple each handshake's client CPU.
func startFallback(cfg Config, tlsConfig *tls.Config, workers int, why string) *tlsFallback {
	tlsConfig = PrepareTLS(tlsConfig, workers)
	t := &tlsFallback{
		cfg:        cfg,
		kick:       make(chan struct{}, workers),
		stopCh:     make(chan struct{}),
		keeper:     stampKeeper{fd: -1},
		handshakes: make([]HandshakeTimes, cfg.Queue.Len()),
		startCPU:   processCPU(),
		fallback:   why,
	}
	t.ktls = ktlsNote()
	if cfg.KernelTimestamps {
		t.keeper, _ = openStampKeeper(stampSwitchWait)
	}
	t.clients = make([]*Client, workers)
	for i := range t.clients {
		t.clients[i] = NewClient(&t.cfg, tlsConfig, &t.stats)
	}
	for _, cl := range t.clients {
		t.wg.Go(func() { t.work(cl) })
	}
	return t
}

// PrepareTLS returns a copy of c with the defaults every TLS path applies:
// a session cache for at least conns connections, and unless c sets its
// own key exchanges, X25519 then P-256 (see defaultCurves). The user's
// $STAMPEDE_TLS_CURVES is applied before, once, at the run's edge
// (WithCurvesFromEnv).
func PrepareTLS(c *tls.Config, conns int) *tls.Config {
	c = c.Clone()
	if c.ClientSessionCache == nil {
		c.ClientSessionCache = tls.NewLRUClientSessionCache(max(conns, 64))
	}
	if len(c.CurvePreferences) == 0 {
		c.CurvePreferences = defaultCurves
	}
	return c
}

// WithCurvesFromEnv returns c with the key exchanges CurvesEnv names, when
// it names any and c chooses none itself, else c; an unknown name is
// CurvesFromEnv's error. A run reads the variable once, here, for every
// TLS connection it makes (the shard loops, the fallback, side probes).
func WithCurvesFromEnv(c *tls.Config) (*tls.Config, error) {
	named, err := CurvesFromEnv()
	if err != nil || named == nil || len(c.CurvePreferences) > 0 {
		return c, err
	}
	c = c.Clone()
	c.CurvePreferences = named
	return c, nil
}

// defaultCurves are the key exchanges a TLS connection offers by default:
// X25519 (the key share crypto/tls sends) and P-256, without the hybrid
// ML-KEM share that Go's own default sends first, which would triple each
// handshake's client CPU. A run on the shard loops offers P-256 alone when
// its probing handshake shows the server takes it (see p256Only).
var defaultCurves = []tls.CurveID{tls.X25519, tls.CurveP256}

// p256Only is the key exchange of a run on the shard loops whose server
// accepts P-256 (which RFC 8446 makes every TLS 1.3 server support), when
// nothing else is configured. A client computes two scalar
// multiplications per handshake, resumed or not (TLS 1.3 resumption is
// PSK with (EC)DHE in crypto/tls): with X25519 they were a quarter of a
// TLS run's whole client CPU at 1,000 streams × 50 tokens, and P-256's
// (a fixed-base multiplication from a precomputed table and one variable)
// cost about two thirds of X25519's here (go test -bench of crypto/ecdh:
// 105 µs against 150 µs a handshake). It changes what the server computes
// too, so STAMPEDE_TLS_CURVES=X25519,CurveP256 restores the general
// default.
var p256Only = []tls.CurveID{tls.CurveP256}

// CurvesEnv names the key exchanges TLS connections offer, in crypto/tls's
// names (CurveID.String: X25519, CurveP256, CurveP384, CurveP521,
// X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024; P-256 for
// CurveP256 too), comma-separated.
const CurvesEnv = "STAMPEDE_TLS_CURVES"

// knownCurves are the key exchanges CurvesEnv may name.
var knownCurves = []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384, tls.CurveP521,
	tls.X25519MLKEM768, tls.SecP256r1MLKEM768, tls.SecP384r1MLKEM1024}

// curveNamed reports whether name names c: its crypto/tls name, or for the
// NIST curves also the name without "Curve", with or without a dash
// (P-256, P256), in any case.
func curveNamed(c tls.CurveID, name string) bool {
	if strings.EqualFold(c.String(), name) {
		return true
	}
	short, ok := strings.CutPrefix(c.String(), "Curve")
	return ok && strings.EqualFold(short, strings.ReplaceAll(name, "-", ""))
}

// CurvesFromEnv returns the key exchanges CurvesEnv names (nil when it is
// unset or empty), or an error naming the value it does not know and the
// ones it accepts (see curveNamed).
func CurvesFromEnv() ([]tls.CurveID, error) {
	v := strings.TrimSpace(os.Getenv(CurvesEnv))
	if v == "" {
		return nil, nil
	}
	var out []tls.CurveID
	for name := range strings.SplitSeq(v, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(knownCurves, func(c tls.CurveID) bool { return curveNamed(c, name) })
		if i < 0 {
			names := make([]string, len(knownCurves))
			for j, c := range knownCurves {
				names[j] = c.String()
			}
			return nil, fmt.Errorf("%s: unknown key exchange %q; accepted, comma-separated: %s", CurvesEnv, name, strings.Join(names, ", "))
		}
		out = append(out, knownCurves[i])
	}
	return out, nil
}

// Wake tells an idle worker that a request was released. Any goroutine.
func (t *tlsFallback) Wake() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// Stop lets the workers return once idle.
func (t *tlsFallback) Stop() { t.stopOnce.Do(func() { close(t.stopCh) }) }

// Abort fails the requests in flight as "cancelled" and stops the workers.
func (t *tlsFallback) Abort() {
	t.aborting.Store(true)
	t.Stop()
	for _, cl := range t.clients {
		cl.Interrupt(time.Time{})
	}
}

// Wait returns when every worker has returned.
func (t *tlsFallback) Wait() {
	t.wg.Wait()
	t.keeper.close()
}

func (t *tlsFallback) work(cl *Client) {
	defer cl.Close()
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
		req := t.cfg.Queue.request(i)
		cl.Do(t.cfg.Recorder, &t.mu, i, req, arrivalNs, &t.handshakes[i])
		t.cfg.Queue.finish(req)
	}
}

// Health reports the transport as one entry: the process's CPU time since
// startFallback (the workers are goroutines on no thread of their own), the
// longest a received record waited between its kernel stamp and its
// worker (the goroutine counterpart of a loop turn), reads, connections
// and the handshakes' share.
func (t *tlsFallback) Health() Health {
	st := &t.stats
	return Health{
		CPU: -1, CPUTime: processCPU() - t.startCPU,
		LongestTurn: time.Duration(st.longestDelayNs.Load()),
		Reads:       st.reads.Load(), StampedReads: st.stamped.Load(),
		Connections:   st.connections.Load(),
		TLSHandshakes: st.hsCount.Load(), TLSResumed: st.hsResumed.Load(),
		TLSHandshakeTimeouts: st.hsTimeouts.Load(),
		TLSHandshakeCPU:      time.Duration(st.hsCPUNs.Load()),
		TLSHandshakeTime:     time.Duration(st.hsTimeNs.Load()),
		TLSPath:              t.path(),
	}
}

// path names the TLS path the run's connections took.
func (t *tlsFallback) path() string {
	p := t.pathOnly()
	if p != "" && t.fallback != "" {
		p = "goroutine per connection (" + t.fallback + "), " + p
	}
	return p
}

func (t *tlsFallback) pathOnly() string {
	own, all := t.stats.ownRecords.Load(), t.stats.hsDone.Load()
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
func (t *tlsFallback) Handshake(i int) HandshakeTimes { return t.handshakes[i] }

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

	// Gate bounds crypto/tls's reads to a record and feeds it the
	// records recordReader hands over.
	tls13.Gate
	// pre: bytes read off the socket before it came here (a connection
	// that left a shard loop), returned first.
	pre []byte

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
	if n, err, ok := s.Injected(p); ok {
		return n, err
	}
	p = s.Limit(p)
	n, err := s.readAny(p)
	s.Took(p[:n])
	return n, err
}

// readAny reads what the socket holds, up to len(p), and keeps the read's
// kernel stamp in stampNs.
func (s *stampedConn) readAny(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(s.pre) > 0 {
		n := copy(p, s.pre)
		s.pre = s.pre[n:]
		return n, nil
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
