package spans

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// limits are what one sender may make the receiver hold, and for how
// long. A kept span is ~150 bytes, so the bound on kept spans costs a few
// megabytes even at 10,000 streams; an export is a batch, which
// OpenTelemetry's SDKs cap at 512 spans (a few hundred kilobytes).
type limits struct {
	// maxBodyBytes caps one export, decompressed, on either protocol.
	maxBodyBytes int
	// maxExportSpans caps the spans of one export, counted in its bytes
	// before any is decoded: the SDKs send at most 512 at once
	// (OTEL_BSP_MAX_EXPORT_BATCH_SIZE), a collector's batch processor
	// 8,192 by default, while 16 MiB holds 8 million empty spans.
	maxExportSpans int
	// maxExports is how many exports are read and decoded at once; the
	// others wait up to slotWait for a turn, then are answered "try
	// again" (HTTP 503, gRPC Unavailable), which exporters retry. An
	// exporter sends one export at a time, so four serve four servers.
	maxExports int
	slotWait   time.Duration
	// maxConns caps the open connections (each one is a file descriptor
	// of the run's process, which its streams need): an exporter keeps one
	// or two.
	maxConns int
	// headerTimeout drops a sender that opens a connection and sends no
	// request head; readTimeout bounds reading a whole request, head and
	// body, at twice what an exporter waits for an export before giving
	// it up (OTEL_EXPORTER_OTLP_TIMEOUT, 10 s by default); writeTimeout
	// bounds a request's turn from its head to the end of the answer;
	// idleTimeout closes a connection that carries no request for longer
	// than an exporter waits between two (its batches go every 5 s).
	headerTimeout, readTimeout, writeTimeout, idleTimeout time.Duration
	// maxStreams caps the exports in flight on one HTTP/2 connection
	// (gRPC's included: it runs on net/http's HTTP/2 server here).
	maxStreams int
}

var defaultLimits = limits{
	maxBodyBytes:   16 << 20,
	maxExportSpans: 1 << 16,
	maxExports:     4,
	slotWait:       5 * time.Second,
	maxConns:       64,
	headerTimeout:  10 * time.Second,
	readTimeout:    20 * time.Second,
	writeTimeout:   30 * time.Second,
	idleTimeout:    30 * time.Second,
	maxStreams:     8,
}

// Options are a receiver's settings.
type Options struct {
	// MaxSpans is how many request spans it keeps at most.
	MaxSpans int
	// Auth, when set, is the header every export must carry.
	Auth *Auth
	// limits replaces defaultLimits, serving is told of each request in
	// hand (tests).
	limits  *limits
	serving chan struct{}
}

// Counts are what the receiver saw, for the sidecar's account of a join
// that fell short.
type Counts struct {
	// Exports are the export requests decoded. The refused ones are
	// counted by why: Malformed (not OTLP protobuf, a wrong path or
	// content type), Unauthenticated (without Options.Auth's header),
	// TooLarge (a body or a count of spans past the limits), Busy (no
	// turn within the wait) and TimedOut (a body not read in time).
	Exports         int64
	Malformed       int64
	Unauthenticated int64
	TooLarge        int64
	Busy            int64
	TimedOut        int64
	// Spans are the request spans received; Other the spans that carried
	// no latency of a request (a router's own, say); Dropped the request
	// spans past the bound, not kept.
	Spans   int64
	Other   int64
	Dropped int64
	// BusyNs is the time spent decoding and keeping spans, on the
	// receiver's low-priority thread: its CPU cost, off the shards.
	BusyNs int64
	// HeldBytes is what the kept spans hold: their structs and request
	// ids.
	HeldBytes int64
	// Conns is the listener's account of connections.
	Conns ConnCounts
}

// Refused is every export refused, whatever the reason.
func (c *Counts) Refused() int64 {
	return c.Malformed + c.Unauthenticated + c.TooLarge + c.Busy + c.TimedOut
}

// Receiver accepts OTLP trace exports on one address: OTLP/HTTP protobuf
// (POST /v1/traces, gzip or not) over HTTP/1.1 or HTTP/2, and OTLP/gRPC
// (TraceService/Export) over HTTP/2 without TLS, as exporters pointed at
// :4317 or :4318 speak them. It keeps at most Options.MaxSpans request
// spans.
//
// Its bounds: at most maxConns connections, maxExports exports read at
// once (each at most maxBodyBytes, counted in spans before it is decoded),
// and one thread, at the lowest priority, that inflates and decodes them
// (decode.go): the shards' threads, locked to their CPUs, take the CPU
// from it whenever they wake. net/http's and gRPC's goroutines only move
// bytes.
type Receiver struct {
	ln      *connLimit
	srv     *http.Server
	grpc    *grpc.Server
	max     int
	auth    *Auth
	lim     limits
	started time.Time
	// unprotected: it listens beyond loopback and wants no token.
	unprotected bool

	// slots holds a token per export being read or decoded; jobs hands
	// one to the decoding thread, which stops once quit is closed and
	// closes workerDone.
	slots      chan struct{}
	jobs       chan *job
	quit       chan struct{}
	workerDone chan struct{}
	closeOnce  sync.Once

	mu     sync.Mutex
	spans  []Span
	counts Counts
	// arrived is signalled (non-blocking) after each export, so Finish
	// can stop waiting once enough spans are in.
	arrived chan struct{}
	// serving, when set (tests), is told of each request in hand.
	serving chan struct{}
}

// Listen starts a receiver on addr ("127.0.0.1:4317", ":4317").
func Listen(addr string, o Options) (*Receiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--otlp-receiver %s: %w", addr, err)
	}
	return serve(ln, o), nil
}

// serve starts a receiver on ln.
func serve(ln net.Listener, o Options) *Receiver {
	lim := defaultLimits
	if o.limits != nil {
		lim = *o.limits
	}
	r := &Receiver{max: o.MaxSpans, auth: o.Auth, lim: lim, started: time.Now(),
		slots: make(chan struct{}, lim.maxExports), jobs: make(chan *job), quit: make(chan struct{}),
		workerDone: make(chan struct{}), arrived: make(chan struct{}, 1), serving: o.serving}
	r.ln = newConnLimit(ln, lim.maxConns, lim.headerTimeout)
	tcp, _ := ln.Addr().(*net.TCPAddr)
	r.unprotected = o.Auth == nil && (tcp == nil || !tcp.IP.IsLoopback())
	r.grpc = grpc.NewServer(grpc.MaxRecvMsgSize(lim.maxBodyBytes), grpc.ForceServerCodecV2(exportCodec{}))
	r.grpc.RegisterService(&exportService, r)
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	r.srv = &http.Server{
		Handler:           http.HandlerFunc(r.serveHTTP),
		Protocols:         &protocols,
		ReadHeaderTimeout: lim.headerTimeout,
		ReadTimeout:       lim.readTimeout,
		WriteTimeout:      lim.writeTimeout,
		IdleTimeout:       lim.idleTimeout,
		MaxHeaderBytes:    64 << 10,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: lim.maxStreams, WriteByteTimeout: lim.writeTimeout},
		ConnState:         r.ln.connState,
		ConnContext:       func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
		// Failed accepts and broken connections are counted (conns.go),
		// not printed in the middle of the run's output.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go r.work()
	go func() { _ = r.srv.Serve(r.ln) }()
	return r
}

// Addr is the address the receiver listens on (its port when addr asked
// for port 0).
func (r *Receiver) Addr() string { return r.ln.Addr().String() }

// Started is when the receiver started: Span.ReceivedNs counts from it.
func (r *Receiver) Started() time.Time { return r.started }

// connKey keys a request's connection in its context.
type connKey struct{}

// serveHTTP sends gRPC to the gRPC server and answers OTLP/HTTP itself;
// while it runs, its connection has a request in hand (connLimit).
func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if c, ok := req.Context().Value(connKey{}).(net.Conn); ok {
		defer r.ln.serving(c)()
	}
	if r.serving != nil {
		r.serving <- struct{}{}
	}
	if req.ProtoMajor == 2 && strings.HasPrefix(req.Header.Get("Content-Type"), "application/grpc") {
		r.serveGRPC(w, req)
		return
	}
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		r.refuse(&r.counts.Malformed)
		http.Error(w, "OTLP receiver: POST /v1/traces (OTLP/HTTP protobuf) or OTLP/gRPC", http.StatusNotFound)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.refuse(&r.counts.Malformed)
		http.Error(w, fmt.Sprintf("OTLP receiver: Content-Type %q: want application/x-protobuf", ct), http.StatusUnsupportedMediaType)
		return
	}
	if !r.auth.allows(req.Header.Values(r.authHeader())) {
		r.refuse(&r.counts.Unauthenticated)
		http.Error(w, lacksToken, http.StatusUnauthorized)
		return
	}
	gzipped := false
	switch enc := req.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		gzipped = true
	default:
		r.refuse(&r.counts.Malformed)
		http.Error(w, fmt.Sprintf("OTLP receiver: Content-Encoding %q: want gzip or none", enc), http.StatusUnsupportedMediaType)
		return
	}
	if !r.takeSlot(req.Context()) {
		r.refuse(&r.counts.Busy)
		w.Header().Set("Retry-After", "1")
		http.Error(w, busy, http.StatusServiceUnavailable)
		return
	}
	defer r.releaseSlot()
	body, err := readBody(w, req, r.lim.maxBodyBytes)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		r.refuse(&r.counts.TooLarge)
		http.Error(w, fmt.Sprintf("OTLP receiver: body over %d bytes", r.lim.maxBodyBytes), http.StatusRequestEntityTooLarge)
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		r.refuse(&r.counts.TimedOut)
		http.Error(w, "OTLP receiver: the body did not arrive in time", http.StatusRequestTimeout)
		return
	case err != nil:
		r.refuse(&r.counts.Malformed)
		http.Error(w, "OTLP receiver: reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	j := &job{plain: body}
	if gzipped {
		j.plain, j.gzipped = nil, body
	}
	v := r.decode(j)
	switch v.refusal {
	case refusedTooLarge:
		http.Error(w, "OTLP receiver: "+v.err.Error(), http.StatusRequestEntityTooLarge)
		return
	case refusedMalformed:
		http.Error(w, "OTLP receiver: body is not an ExportTraceServiceRequest: "+v.err.Error(), http.StatusBadRequest)
		return
	case refusedClosing:
		http.Error(w, "OTLP receiver: stopping", http.StatusServiceUnavailable)
		return
	}
	out, _ := proto.Marshal(v.response())
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// The answers to an export refused before its body is read.
const (
	lacksToken = "OTLP receiver: this export lacks the receiver's token (stampede --otlp-receiver-token; the exporter sends it from OTEL_EXPORTER_OTLP_HEADERS)"
	busy       = "OTLP receiver: busy with other exports; try again"
)

// authHeader is the header Options.Auth names ("" without one).
func (r *Receiver) authHeader() string {
	if r.auth == nil {
		return ""
	}
	return r.auth.Header
}

// readBody is req's body as it came (gzip or not), refused past limit
// with *http.MaxBytesError.
func readBody(w http.ResponseWriter, req *http.Request, limit int) ([]byte, error) {
	if req.ContentLength > int64(limit) {
		return nil, &http.MaxBytesError{Limit: int64(limit)}
	}
	size := 512
	if req.ContentLength > 0 {
		size = int(req.ContentLength) + 1 // the 1 sees EOF without growing
	}
	src := http.MaxBytesReader(w, req.Body, int64(limit))
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(cap(buf), limit+1-len(buf)))
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// takeSlot waits for a turn to read and decode an export: up to slotWait,
// while ctx lasts and the receiver runs.
func (r *Receiver) takeSlot(ctx context.Context) bool {
	select {
	case r.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(r.lim.slotWait)
	defer t.Stop()
	select {
	case r.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	case <-r.quit:
	}
	return false
}

func (r *Receiver) releaseSlot() { <-r.slots }

func (r *Receiver) refuse(counter *int64) {
	r.mu.Lock()
	*counter++
	r.mu.Unlock()
}

// Collected is what a receiver held when it stopped.
type Collected struct {
	Spans  []Span
	Counts Counts
	// Waited is how long Finish waited for late spans.
	Waited time.Duration
	// Started is when the receiver started (Span.ReceivedNs's origin).
	Started time.Time
	// TokenRequired: exports had to carry Options.Auth's header.
	// Unprotected: the receiver listened beyond loopback without one.
	TokenRequired, Unprotected bool
	// limits are the receiver's, for the sidecar's account.
	limits limits
}

// Finish waits for the spans exported after the run: until enough says
// the spans kept so far are enough, the bound of kept spans is reached,
// grace has passed, or ctx ends; then it stops the receiver and returns
// what it kept. enough is called on Finish's goroutine with every span
// kept so far, a slice that only ever grows between calls.
func (r *Receiver) Finish(ctx context.Context, grace time.Duration, enough func(kept []Span) bool) Collected {
	start := time.Now()
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
wait:
	for {
		r.mu.Lock()
		// Spans [0, n) are never written again: the decoding thread only
		// appends.
		kept := r.spans[:len(r.spans):len(r.spans)]
		full := r.counts.Dropped > 0 || len(kept) >= r.max
		r.mu.Unlock()
		if full || enough(kept) {
			break
		}
		select {
		case <-r.arrived:
		case <-deadline.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	waited := time.Since(start)
	r.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts.HeldBytes = int64(cap(r.spans)) * int64(unsafe.Sizeof(Span{}))
	for i := range r.spans {
		r.counts.HeldBytes += int64(len(r.spans[i].RequestID))
	}
	r.counts.Conns = r.ln.Counts()
	return Collected{Spans: r.spans, Counts: r.counts, Waited: waited, Started: r.started,
		TokenRequired: r.auth != nil, Unprotected: r.unprotected, limits: r.lim}
}

// Close stops the receiver at once: open exports are cut off, and the
// decoding thread ends once it has finished the export it holds.
func (r *Receiver) Close() {
	r.closeOnce.Do(func() {
		close(r.quit)
		r.grpc.Stop()
		_ = r.srv.Close()
		<-r.workerDone
	})
}

// response is the answer to an export taken: a partial success when
// spans past the bound were not kept.
func (v verdict) response() *collectortrace.ExportTraceServiceResponse {
	if v.dropped == 0 {
		return &collectortrace.ExportTraceServiceResponse{}
	}
	return &collectortrace.ExportTraceServiceResponse{PartialSuccess: &collectortrace.ExportTracePartialSuccess{
		RejectedSpans: int64(v.dropped), ErrorMessage: "the receiver holds no more spans for this run"}}
}
