package mock

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/stampede-bench/stampede/httpwire"
)

// The mock exports the span vLLM exports with --otlp-traces-endpoint: one
// SERVER span "llm_request" per finished generation request, in the trace
// of its traceparent header, with vLLM's gen_ai.* attributes (seconds as
// doubles). Its latencies are the truth log's own times, so a client's
// join can be checked against the log exactly:
//
//	gen_ai.latency.time_to_first_token  = T(index 0).sent − R.arrival
//	gen_ai.latency.e2e                  = T(last).sent − R.arrival
//	gen_ai.latency.time_in_queue        = admitted − R.arrival
//	gen_ai.latency.time_in_model_prefill = min(prefill end, T(0).sent) − admitted
//	gen_ai.latency.time_in_model_decode = T(last).sent − T(0).sent
//
// where admitted is when the scheduler took the request off its waiting
// queue and prefill end when the timing model let its first token go.

// OTLP protocols, as OTEL_EXPORTER_OTLP_TRACES_PROTOCOL names them.
const (
	OTLPGRPC = "grpc"
	OTLPHTTP = "http/protobuf"
)

// Export batching: OpenTelemetry's batch span processor sends 512 spans at
// most per export; the mock flushes more often than its 5 s default so a
// test need not wait.
const (
	otlpBatchSpans    = 512
	otlpFlushInterval = 100 * time.Millisecond
	// otlpQueueSpans bounds the spans waiting for export: past it the
	// writer drops spans rather than wait (a slow collector must not slow
	// the tokens), and counts them.
	otlpQueueSpans = 1 << 16
	otlpTimeout    = 10 * time.Second
)

// spanRecord is what the writer hands the exporter about a finished
// request, all times on the mock's monotonic clock.
type spanRecord struct {
	traceID                                         [16]byte
	traced                                          bool
	seq                                             uint64
	requestID                                       string
	arrivalNs, admittedNs, readyNs, firstNs, lastNs int64
	promptTokens, completionTokens                  int
}

// spanExporter batches spanRecords and sends them to the endpoint on its
// own goroutine.
type spanExporter struct {
	records chan spanRecord
	dropped atomic.Int64
	failed  atomic.Int64
	send    func(ctx context.Context, body *collectortrace.ExportTraceServiceRequest) error
	close   func()
	delay   time.Duration
	// wallOffsetNs turns the monotonic clock into Unix time for the
	// span's start and end.
	wallOffsetNs int64
	done         chan struct{}
	stopOnce     sync.Once
}

// newSpanExporter starts an exporter to endpoint over protocol; delay
// holds every export back that long (a slow collector's stand-in). Every
// export carries the headers of $OTEL_EXPORTER_OTLP_TRACES_HEADERS, else
// $OTEL_EXPORTER_OTLP_HEADERS, as OpenTelemetry's exporters (vLLM's among
// them) send them: a receiver's token, say.
func newSpanExporter(endpoint, protocol string, delay time.Duration, clock *monoClock) (*spanExporter, error) {
	e := &spanExporter{records: make(chan spanRecord, otlpQueueSpans), delay: delay, done: make(chan struct{}),
		wallOffsetNs: time.Now().UnixNano() - clock.nowNs()}
	headers, err := otlpEnvHeaders(os.Getenv)
	if err != nil {
		return nil, err
	}
	switch protocol {
	case OTLPHTTP:
		addr, path, err := otlpHTTPTarget(endpoint)
		if err != nil {
			return nil, err
		}
		e.send = func(ctx context.Context, body *collectortrace.ExportTraceServiceRequest) error {
			return postTraces(ctx, addr, path, headers, body)
		}
		e.close = func() {}
	case OTLPGRPC, "":
		target := endpoint
		if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
			target = u.Host
		}
		// A collector that is not up yet (a benchmark client starts its
		// receiver after its ready check) is retried within a second, and
		// an export waits for it rather than failing at once.
		conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
				MinConnectTimeout: time.Second,
			}))
		if err != nil {
			return nil, fmt.Errorf("--otlp-traces-endpoint %s: %w", endpoint, err)
		}
		client := collectortrace.NewTraceServiceClient(conn)
		md := metadata.MD{}
		for _, h := range headers {
			md.Append(h.Key, h.Value)
		}
		e.send = func(ctx context.Context, body *collectortrace.ExportTraceServiceRequest) error {
			_, err := client.Export(metadata.NewOutgoingContext(ctx, md), body, grpc.WaitForReady(true))
			return err
		}
		e.close = func() { _ = conn.Close() }
	default:
		return nil, fmt.Errorf("--otlp-traces-protocol %q: want %s or %s", protocol, OTLPGRPC, OTLPHTTP)
	}
	go e.run()
	return e, nil
}

// otlpEnvHeaders are the export headers OpenTelemetry's environment
// gives: $OTEL_EXPORTER_OTLP_TRACES_HEADERS, else
// $OTEL_EXPORTER_OTLP_HEADERS, a comma-separated list of name=value with
// the values percent-encoded (the W3C baggage form), names lowercased as
// gRPC metadata has them.
func otlpEnvHeaders(getenv func(string) string) ([]httpwire.Header, error) {
	name := "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	list := getenv(name)
	if strings.TrimSpace(list) == "" {
		name = "OTEL_EXPORTER_OTLP_HEADERS"
		list = getenv(name)
	}
	var out []httpwire.Header
	for _, item := range strings.Split(list, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		key, value, ok := strings.Cut(item, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		value, err := url.PathUnescape(strings.TrimSpace(value))
		if err == nil && ok {
			err = httpwire.ValidateHeader(key, value)
		} else if err == nil {
			err = fmt.Errorf("%q has no '='", item)
		}
		if err != nil {
			return nil, fmt.Errorf("$%s: %v: want name=value pairs separated by commas, such as authorization=Bearer%%20TOKEN", name, err)
		}
		out = append(out, httpwire.Header{Key: key, Value: value})
	}
	return out, nil
}

// otlpHTTPTarget is the dial address and path of an OTLP/HTTP endpoint
// URL; a URL without a path posts to /v1/traces.
func otlpHTTPTarget(endpoint string) (addr, path string, err error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return "", "", fmt.Errorf("--otlp-traces-endpoint %q: want an http:// URL such as http://127.0.0.1:4318/v1/traces", endpoint)
	}
	addr, path = u.Host, u.EscapedPath()
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	if path == "" || path == "/" {
		path = "/v1/traces"
	}
	return addr, path, nil
}

// add queues r for export; the writer calls it and never waits.
func (e *spanExporter) add(r spanRecord) {
	if e == nil {
		return
	}
	select {
	case e.records <- r:
	default:
		e.dropped.Add(1)
	}
}

// stop flushes what is queued and stops the exporter.
func (e *spanExporter) stop() {
	if e == nil {
		return
	}
	e.stopOnce.Do(func() { close(e.records) })
	<-e.done
	e.close()
}

func (e *spanExporter) run() {
	defer close(e.done)
	tick := time.NewTicker(otlpFlushInterval)
	defer tick.Stop()
	batch := make([]spanRecord, 0, otlpBatchSpans)
	for {
		select {
		case r, ok := <-e.records:
			if !ok {
				e.flush(batch)
				return
			}
			if batch = append(batch, r); len(batch) == otlpBatchSpans {
				e.flush(batch)
				batch = batch[:0]
			}
		case <-tick.C:
			e.flush(batch)
			batch = batch[:0]
		}
	}
}

func (e *spanExporter) flush(batch []spanRecord) {
	if len(batch) == 0 {
		return
	}
	if e.delay > 0 {
		time.Sleep(e.delay)
	}
	spans := make([]*tracepb.Span, len(batch))
	for i := range batch {
		spans[i] = e.span(&batch[i])
	}
	body := &collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{strAttr("service.name", "mockllm")}},
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: "vllm.llm_engine"},
			Spans: spans,
		}},
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), otlpTimeout)
	defer cancel()
	if err := e.send(ctx, body); err != nil {
		e.failed.Add(int64(len(batch)))
	}
}

// span is r as vLLM's llm_request span.
func (e *spanExporter) span(r *spanRecord) *tracepb.Span {
	traceID := r.traceID
	if !r.traced {
		// A request without trace context starts a trace of its own, as
		// vLLM's tracer would; only its gen_ai.request.id can join it.
		traceID = [16]byte{0xfe}
		putUint64(traceID[8:], r.seq)
	}
	var spanID [8]byte
	putUint64(spanID[:], r.seq|1<<63)
	prefillEnd := min(max(r.readyNs, r.admittedNs), r.firstNs)
	sec := func(ns int64) float64 { return float64(ns) / 1e9 }
	attrs := []*commonpb.KeyValue{
		strAttr("gen_ai.response.model", "mock"),
		dblAttr("gen_ai.latency.time_in_queue", sec(r.admittedNs-r.arrivalNs)),
		dblAttr("gen_ai.latency.time_to_first_token", sec(r.firstNs-r.arrivalNs)),
		dblAttr("gen_ai.latency.e2e", sec(r.lastNs-r.arrivalNs)),
		dblAttr("gen_ai.latency.time_in_model_prefill", sec(prefillEnd-r.admittedNs)),
		dblAttr("gen_ai.latency.time_in_model_decode", sec(r.lastNs-r.firstNs)),
		dblAttr("gen_ai.latency.time_in_model_inference", sec(r.lastNs-r.admittedNs)),
		intAttr("gen_ai.usage.prompt_tokens", int64(r.promptTokens)),
		intAttr("gen_ai.usage.completion_tokens", int64(r.completionTokens)),
	}
	if r.requestID != "" {
		attrs = append(attrs, strAttr("gen_ai.request.id", r.requestID))
	}
	return &tracepb.Span{
		TraceId: traceID[:], SpanId: spanID[:], Name: "llm_request", Kind: tracepb.Span_SPAN_KIND_SERVER,
		StartTimeUnixNano: uint64(r.arrivalNs + e.wallOffsetNs), EndTimeUnixNano: uint64(r.lastNs + e.wallOffsetNs),
		Attributes: attrs,
	}
}

func putUint64(b []byte, v uint64) {
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

func strAttr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func dblAttr(k string, v float64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}}
}

func intAttr(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

// postTraces posts one OTLP/HTTP protobuf export to addr on a connection
// of its own, with headers, framed by httpwire as every request the mock's
// side makes, and wants a 2xx answer.
func postTraces(ctx context.Context, addr, path string, headers []httpwire.Header, body *collectortrace.ExportTraceServiceRequest) error {
	payload, err := proto.Marshal(body)
	if err != nil {
		return err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	req := httpwire.Request{Method: "POST", Host: addr, Path: path, ContentType: "application/x-protobuf", Headers: headers, Body: payload, Close: true}
	if _, err := conn.Write(httpwire.AppendRequest(nil, &req)); err != nil {
		return err
	}
	head := make([]byte, len("HTTP/1.1 200"))
	if _, err := io.ReadFull(conn, head); err != nil {
		return fmt.Errorf("OTLP/HTTP answer: %w", err)
	}
	if !bytes.HasPrefix(head, []byte("HTTP/1.")) {
		return fmt.Errorf("OTLP/HTTP answer %q: not HTTP", head)
	}
	code, err := strconv.Atoi(strings.TrimSpace(string(head[9:])))
	if err != nil || code/100 != 2 {
		return fmt.Errorf("OTLP/HTTP answer %q: want a 2xx status", head)
	}
	_, _ = io.Copy(io.Discard, conn)
	return nil
}
