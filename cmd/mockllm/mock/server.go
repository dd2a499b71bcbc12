package mock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"
	"github.com/stampede-bench/stampede/httpwire"
	"github.com/valyala/fastjson"
	"golang.org/x/sys/unix"
)

// Server is a running mock server.
type Server struct {
	cfg   Config
	clock monoClock
	// spans exports a span per finished request (otlp.go); nil without
	// Config.OTLPTracesEndpoint.
	spans   *spanExporter
	created int64  // unix seconds at start, for /v1/models
	model   []byte // the model name as a JSON string

	eng    gnet.Engine
	addr   string
	w      *writer
	flood  *flooder     // nil unless a hostile fault is configured
	prefix *prefixCache // nil unless Config.PrefixCache is set
	runErr chan error
	boot   chan gnet.Engine
	tls    *tls.Config // nil for plain HTTP
	// tap is nil unless the truth log has arrival stamps; it is set once
	// the port is known, while the loops may accept already.
	tap atomic.Pointer[arrivalTap]

	loopsMu sync.Mutex
	loops   map[gnet.EventLoop]*loopState

	stats     counters
	load      loadMetrics
	genSeq    atomic.Uint64 // generation requests, for every=N faults
	schedSeq  atomic.Uint64 // scheduled requests, for the truth log
	closeOnce sync.Once
	closeErr  error
}

// loopState is the scratch space of one event loop.
type loopState struct {
	parser fastjson.Parser
	req    httpRequest
	gen    genParams
	ids    []int32
	out    []byte
}

type counters struct {
	conns        atomic.Int64
	requests     atomic.Uint64
	scheduled    atomic.Uint64
	finished     atomic.Uint64
	running      atomic.Int64
	waiting      atomic.Int64
	tokens       atomic.Uint64
	promptTokens atomic.Uint64
	faults       atomic.Uint64
	errors       atomic.Uint64
	stepOverruns atomic.Uint64
}

// Stats is a snapshot of the server's counters.
type Stats struct {
	// Connections is the number of open client connections.
	Connections int64
	// Requests counts every HTTP request parsed (any endpoint).
	Requests uint64
	// Scheduled counts requests put on the generation schedule
	// (completions, chat, embeddings, pooling, rerank); Finished those that
	// left it.
	Scheduled, Finished uint64
	// Running and Waiting are the streams generating and queued now.
	Running, Waiting int64
	// Tokens counts generated tokens sent; PromptTokens the prompt tokens
	// of scheduled requests.
	Tokens, PromptTokens uint64
	// Faults counts injected faults; Errors error responses (4xx, 5xx).
	Faults, Errors uint64
	// StepOverruns counts decode steps that started a whole period late.
	StepOverruns uint64
}

// Stats returns the current counters; safe from any goroutine.
func (s *Server) Stats() Stats {
	return Stats{
		Connections:  s.stats.conns.Load(),
		Requests:     s.stats.requests.Load(),
		Scheduled:    s.stats.scheduled.Load(),
		Finished:     s.stats.finished.Load(),
		Running:      s.stats.running.Load(),
		Waiting:      s.stats.waiting.Load(),
		Tokens:       s.stats.tokens.Load(),
		PromptTokens: s.stats.promptTokens.Load(),
		Faults:       s.stats.faults.Load(),
		Errors:       s.stats.errors.Load(),
		StepOverruns: s.stats.stepOverruns.Load(),
	}
}

// Timing returns the timing summary measured so far.
func (s *Server) Timing() TimingSummary { return s.w.timing.summary() }

// Start starts a mock server and returns once it is listening.
func Start(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:    cfg,
		clock:  newMonoClock(),
		runErr: make(chan error, 1),
		boot:   make(chan gnet.Engine, 1),
		loops:  make(map[gnet.EventLoop]*loopState),
	}
	s.load.init()
	s.prefix = newPrefixCache(cfg.PrefixCache, cfg.PrefixCacheTokens)
	s.created = time.Now().Unix()
	if cfg.TLS != nil {
		s.tls = serverTLS(cfg.TLS)
	}
	var err error
	if s.model, err = appendJSONString(nil, cfg.Model); err != nil {
		return nil, err
	}
	for _, f := range cfg.Faults {
		if f.Kind.hostile() && s.flood == nil {
			if s.flood, err = newFlooder(s); err != nil {
				return nil, err
			}
		}
	}
	if cfg.OTLPTracesEndpoint != "" {
		if s.spans, err = newSpanExporter(cfg.OTLPTracesEndpoint, cfg.OTLPTracesProtocol, cfg.OTLPExportDelay, &s.clock); err != nil {
			return nil, err
		}
	}
	if s.w, err = newWriter(s); err != nil {
		s.spans.stop()
		if s.flood != nil {
			s.flood.stop()
		}
		return nil, err
	}
	if err = s.w.start(); err != nil {
		s.spans.stop()
		if s.flood != nil {
			s.flood.stop()
		}
		_ = s.w.stop()
		return nil, err
	}

	listen := "tcp://" + net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	go func() {
		s.runErr <- gnet.Run((*loopEvents)(s), listen,
			gnet.WithLogger(silentLogger{}),
			gnet.WithMulticore(cfg.EventLoops > 1),
			gnet.WithNumEventLoop(cfg.EventLoops),
			gnet.WithReuseAddr(true),
			gnet.WithReusePort(cfg.ReusePort),
			gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		)
	}()
	select {
	case s.eng = <-s.boot:
	case err := <-s.runErr:
		if s.flood != nil {
			s.flood.stop()
		}
		_ = s.w.stop()
		if err == nil {
			err = errors.New("event loop exited before it started")
		}
		return nil, fmt.Errorf("listen on %s: %w", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)), err)
	}
	if s.addr, err = s.boundAddr(); err != nil {
		_ = s.Close()
		return nil, err
	}
	if cfg.TruthLog != "" && s.tls == nil && !cfg.NoArrivalTap {
		// Without CAP_NET_RAW the truth log has no arrival stamps.
		_, port, _ := net.SplitHostPort(s.addr)
		p, _ := strconv.Atoi(port)
		if tap, err := openArrivalTap(p); err == nil {
			s.tap.Store(tap)
		}
	}
	return s, nil
}

// boundAddr asks the kernel which port the listener got.
func (s *Server) boundAddr() (string, error) {
	fd, err := s.eng.Dup()
	if err != nil {
		return "", fmt.Errorf("listener address: %w", err)
	}
	defer unix.Close(fd)
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return "", fmt.Errorf("listener address: %w", err)
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), strconv.Itoa(a.Port)), nil
	case *unix.SockaddrInet6:
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), strconv.Itoa(a.Port)), nil
	}
	return "", fmt.Errorf("listener address: unexpected socket family %T", sa)
}

// Addr returns the listening address as host:port.
func (s *Server) Addr() string { return s.addr }

// Close stops accepting, closes every connection, stops the token writer,
// flushes the truth log and writes the timing summary to Config.Summary.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		errStop := s.eng.Stop(ctx)
		errRun := <-s.runErr
		if s.flood != nil {
			s.w.closes = s.flood.stop()
		}
		if tap := s.tap.Load(); tap != nil {
			s.w.arrivals = tap.stop()
		}
		errWriter := s.w.stop()
		s.spans.stop()
		var errSummary error
		if s.cfg.Summary != nil {
			_, errSummary = s.Timing().WriteTo(s.cfg.Summary)
		}
		s.closeErr = errors.Join(errStop, errRun, errWriter, errSummary)
	})
	return s.closeErr
}

// loopEvents is the Server as gnet's event handler; a separate type keeps
// the callbacks out of Server's API.
type loopEvents Server

var _ gnet.EventHandler = (*loopEvents)(nil)

// OnBoot reports the engine to Start.
func (e *loopEvents) OnBoot(eng gnet.Engine) gnet.Action {
	e.boot <- eng
	return gnet.None
}

// OnShutdown does nothing: Close does the tidying.
func (e *loopEvents) OnShutdown(gnet.Engine) {}

// OnTick is unused.
func (e *loopEvents) OnTick() (time.Duration, gnet.Action) { return time.Hour, gnet.None }

// OnOpen attaches a conn to a new connection.
func (e *loopEvents) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	s := (*Server)(e)
	cn := &conn{gc: c, fd: c.Fd(), loop: s.loopState(c.EventLoop()), reqOffset: -1}
	if s.tap.Load() != nil && s.tls == nil {
		cn.peer = peerKey(c.RemoteAddr())
	}
	c.SetContext(cn)
	s.stats.conns.Add(1)
	if s.tls != nil {
		s.startHandshake(cn)
	}
	return nil, gnet.None
}

// OnClose marks the conn dead before gnet closes its descriptor.
func (e *loopEvents) OnClose(c gnet.Conn, _ error) gnet.Action {
	if cn, ok := c.Context().(*conn); ok {
		cn.markDead()
		if cn.tls != nil && cn.tls.hs != nil {
			cn.tls.hs.abort()
		}
		if e.flood != nil {
			e.flood.remove(cn)
		}
	}
	e.stats.conns.Add(-1)
	return gnet.None
}

// OnTraffic takes every byte that arrived and serves the requests they
// complete.
func (e *loopEvents) OnTraffic(c gnet.Conn) gnet.Action {
	s := (*Server)(e)
	now := s.clock.nowNs()
	cn := c.Context().(*conn)
	data, _ := c.Next(-1)
	cn.rawIn += int64(len(data))
	if cn.tls != nil {
		var err error
		if data, err = s.receive(cn, data); err != nil {
			cn.close()
			return gnet.None
		}
	}
	if len(cn.in) == 0 {
		cn.inSinceNs = now
	}
	cn.in = append(cn.in, data...)
	if len(cn.in) == 0 || !cn.acceptInput() {
		return gnet.None
	}
	s.serve(cn, cn.loop)
	return gnet.None
}

func (s *Server) loopState(el gnet.EventLoop) *loopState {
	s.loopsMu.Lock()
	defer s.loopsMu.Unlock()
	ls := s.loops[el]
	if ls == nil {
		ls = &loopState{}
		s.loops[el] = ls
	}
	return ls
}

// serve parses and answers requests from cn.in until it runs out of whole
// requests or hands one to the writer.
func (s *Server) serve(cn *conn, ls *loopState) {
	for len(cn.in) > 0 {
		n, err := cn.reqs.Parse(cn.in)
		if err != nil {
			// The request's framing can no longer be trusted: answer
			// and close.
			var perr *httpwire.ProtocolError
			errors.As(err, &perr)
			s.stats.errors.Add(1)
			ls.out = appendErrorResponse(ls.out[:0], perr.Status, errorType(perr.Status), perr.Error(), true)
			cn.send(ls.out, &s.clock)
			cn.close()
			cn.in = cn.in[:0]
			cn.reqs.Reset()
			return
		}
		if n == 0 {
			// curl sends a large body only after "100 Continue" (or a
			// second's wait).
			if cn.reqs.Request().ExpectContinue && !cn.continued {
				cn.continued = true
				cn.send(continueResponse, &s.clock)
			}
			return
		}
		cn.continued = false
		ls.req.set(cn.reqs.Request())
		s.stats.requests.Add(1)
		if cn.tls == nil {
			cn.reqOffset = cn.rawIn - int64(len(cn.in))
		}
		scheduled := s.route(cn, ls, &ls.req, cn.inSinceNs)
		rest := copy(cn.in, cn.in[n:])
		cn.in = cn.in[:rest]
		cn.inSinceNs = s.clock.nowNs()
		if cap(cn.in) > 1<<20 && rest == 0 {
			cn.in = nil
		}
		// Bytes after a scheduled request wait for its response to end,
		// unless it has ended already.
		if scheduled && (len(cn.in) == 0 || !cn.acceptInput()) {
			return
		}
	}
}

var continueResponse = []byte("HTTP/1.1 100 Continue\r\n\r\n")

// silentLogger discards gnet's log output, which would otherwise go to
// stdout and mix with the one line scripts wait for.
type silentLogger struct{}

var _ logging.Logger = silentLogger{}

func (silentLogger) Debugf(string, ...any) {}
func (silentLogger) Infof(string, ...any)  {}
func (silentLogger) Warnf(string, ...any)  {}
func (silentLogger) Errorf(string, ...any) {}
func (silentLogger) Fatalf(string, ...any) {}
