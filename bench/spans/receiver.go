package spans

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unsafe"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Limits of what one sender may make the receiver hold. A span the join
// keeps is ~150 bytes, so the default bound of spans costs a few
// megabytes even at 10,000 streams; an export body is a batch, which
// OpenTelemetry's SDKs cap at 512 spans (a few hundred kilobytes).
const (
	// maxBodyBytes caps one export, decompressed, on either protocol.
	maxBodyBytes = 16 << 20
	// headerTimeout drops a sender that opens a connection and says
	// nothing.
	headerTimeout = 10 * time.Second
)

// Counts are what the receiver saw, for the sidecar's account of a join
// that fell short.
type Counts struct {
	// Exports are the export requests decoded; Malformed those refused
	// (not protobuf, too large, a wrong path or content type).
	Exports   int64 `json:"exports"`
	Malformed int64 `json:"malformed"`
	// Spans are the request spans received; Other the spans that carried
	// no latency of a request (a router's own, say); Dropped the request
	// spans past the bound, not kept.
	Spans   int64 `json:"spans"`
	Other   int64 `json:"other_spans"`
	Dropped int64 `json:"dropped"`
	// BusyNs is the time spent decoding and keeping spans, summed over
	// the receiver's goroutines: its CPU cost, off the shards.
	BusyNs int64 `json:"busy_ns"`
	// HeldBytes is what the kept spans hold: their structs and request
	// ids (the decoded exports are garbage once kept).
	HeldBytes int64 `json:"held_bytes"`
}

// Receiver accepts OTLP trace exports on one address: OTLP/HTTP protobuf
// (POST /v1/traces, gzip or not) over HTTP/1.1 or HTTP/2, and OTLP/gRPC
// (TraceService/Export) over HTTP/2 without TLS, as exporters pointed at
// :4317 or :4318 speak them. It keeps at most max request spans.
type Receiver struct {
	ln   net.Listener
	srv  *http.Server
	grpc *grpc.Server
	max  int

	mu     sync.Mutex
	spans  []Span
	counts Counts
	// arrived is signalled (non-blocking) after each export, so Finish
	// can stop waiting once enough spans are in.
	arrived chan struct{}
}

// Listen starts a receiver on addr ("127.0.0.1:4317", ":4317") keeping at
// most maxSpans request spans.
func Listen(addr string, maxSpans int) (*Receiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--otlp-receiver %s: %w", addr, err)
	}
	r := &Receiver{ln: ln, max: maxSpans, arrived: make(chan struct{}, 1)}
	r.grpc = grpc.NewServer(grpc.MaxRecvMsgSize(maxBodyBytes))
	collectortrace.RegisterTraceServiceServer(r.grpc, traceService{r: r})
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	r.srv = &http.Server{
		Handler:           http.HandlerFunc(r.serveHTTP),
		Protocols:         &protocols,
		ReadHeaderTimeout: headerTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          nil,
	}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Addr is the address the receiver listens on (its port when addr asked
// for port 0).
func (r *Receiver) Addr() string { return r.ln.Addr().String() }

// serveHTTP sends gRPC to the gRPC server and answers OTLP/HTTP itself.
func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if req.ProtoMajor == 2 && strings.HasPrefix(req.Header.Get("Content-Type"), "application/grpc") {
		r.grpc.ServeHTTP(w, req)
		return
	}
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		r.refused()
		http.Error(w, "OTLP receiver: POST /v1/traces (OTLP/HTTP protobuf) or OTLP/gRPC", http.StatusNotFound)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.refused()
		http.Error(w, fmt.Sprintf("OTLP receiver: Content-Type %q: want application/x-protobuf", ct), http.StatusUnsupportedMediaType)
		return
	}
	body, err := readBody(req)
	if err != nil {
		r.refused()
		http.Error(w, "OTLP receiver: "+err.Error(), http.StatusBadRequest)
		return
	}
	var export collectortrace.ExportTraceServiceRequest
	start := time.Now()
	if err := proto.Unmarshal(body, &export); err != nil {
		r.refused()
		http.Error(w, "OTLP receiver: body is not an ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	r.keep(&export, start)
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// readBody is req's body, gunzipped when it says so, refused past
// maxBodyBytes.
func readBody(req *http.Request) ([]byte, error) {
	var src io.Reader = http.MaxBytesReader(nil, req.Body, maxBodyBytes)
	switch enc := req.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		src = zr
	default:
		return nil, fmt.Errorf("Content-Encoding %q: want gzip or none", enc)
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(src, maxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the body: %w", err)
	}
	if n > maxBodyBytes {
		return nil, fmt.Errorf("body over %d bytes", maxBodyBytes)
	}
	return buf.Bytes(), nil
}

// traceService is the gRPC face of the receiver.
type traceService struct {
	collectortrace.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	s.r.keep(req, time.Now())
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *Receiver) refused() {
	r.mu.Lock()
	r.counts.Malformed++
	r.mu.Unlock()
}

// keep stores the request spans of one export, up to the bound; start is
// when its decoding began, for the busy time.
func (r *Receiver) keep(export *collectortrace.ExportTraceServiceRequest, start time.Time) {
	var batch []Span
	other := int64(0)
	for _, rs := range export.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				if sp, ok := fromProto(s); ok {
					batch = append(batch, sp)
				} else {
					other++
				}
			}
		}
	}
	r.mu.Lock()
	room := max(r.max-len(r.spans), 0)
	kept := min(room, len(batch))
	r.spans = append(r.spans, batch[:kept]...)
	r.counts.Exports++
	r.counts.Spans += int64(len(batch))
	r.counts.Other += other
	r.counts.Dropped += int64(len(batch) - kept)
	r.counts.BusyNs += int64(time.Since(start))
	r.mu.Unlock()
	select {
	case r.arrived <- struct{}{}:
	default:
	}
}

// Collected is what a receiver held when it stopped.
type Collected struct {
	Spans  []Span
	Counts Counts
	// Waited is how long Finish waited for late spans.
	Waited time.Duration
}

// Finish waits for the spans exported after the run: until want request
// spans are in, grace has passed, or ctx ends; then it stops the receiver
// and returns what it kept.
func (r *Receiver) Finish(ctx context.Context, want int, grace time.Duration) Collected {
	start := time.Now()
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
wait:
	for {
		r.mu.Lock()
		n := len(r.spans) + int(r.counts.Dropped)
		r.mu.Unlock()
		if n >= want {
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
	return Collected{Spans: r.spans, Counts: r.counts, Waited: waited}
}

// Close stops the receiver at once: open exports are cut off.
func (r *Receiver) Close() {
	r.grpc.Stop()
	if err := r.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return
	}
}
