package spans

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// The gRPC face of the receiver: TraceService/Export, registered by hand
// so that the message reaches the decoding thread as gRPC received it,
// bytes in gRPC's buffers, never built into the generated types
// (exportCodec). It runs on net/http's HTTP/2 server (Receiver.serveHTTP
// calls grpc.Server.ServeHTTP), so the connection and stream limits are
// net/http's (Receiver.srv: MaxConcurrentStreams, the read, write and idle
// deadlines), and grpc-go's own transport options do not apply.

// grpcExporter is what exportService calls.
type grpcExporter interface {
	exportGRPC(ctx context.Context, dec func(any) error) (any, error)
}

var exportService = grpc.ServiceDesc{
	ServiceName: collectortrace.TraceService_ServiceDesc.ServiceName,
	HandlerType: (*grpcExporter)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Export",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			return srv.(grpcExporter).exportGRPC(ctx, dec)
		},
	}},
	Metadata: collectortrace.TraceService_ServiceDesc.Metadata,
}

// exportMessage is an export's message as gRPC received it; its holder
// frees it.
type exportMessage struct{ data mem.BufferSlice }

// exportCodec leaves an export's message in its buffers (taking a
// reference, since gRPC frees its own once Unmarshal returns) and
// marshals the answers as protobuf.
type exportCodec struct{}

func (exportCodec) Name() string { return "proto" }

func (exportCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("OTLP receiver: cannot marshal %T", v)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (exportCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*exportMessage)
	if !ok {
		return fmt.Errorf("OTLP receiver: cannot unmarshal into %T", v)
	}
	data.Ref()
	m.data = data
	return nil
}

// serveGRPC hands a gRPC request to the gRPC server once it carries the
// token and has a turn. grpc-go reads a message whole before the service
// sees it, so both are settled here, from the request's headers, before
// a byte of the message is read; the turn is held until it is decoded.
// A refusal is a Trailers-Only answer: the status in the headers.
func (r *Receiver) serveGRPC(w http.ResponseWriter, req *http.Request) {
	if !r.auth.allows(req.Header.Values(r.authHeader())) {
		r.refuse(&r.counts.Unauthenticated)
		grpcRefuse(w, codes.Unauthenticated, lacksToken)
		return
	}
	if !r.takeSlot(req.Context()) {
		r.refuse(&r.counts.Busy)
		grpcRefuse(w, codes.Unavailable, busy)
		return
	}
	defer r.releaseSlot()
	r.grpc.ServeHTTP(w, req)
}

// grpcRefuse answers a gRPC request with code and msg and no message.
func grpcRefuse(w http.ResponseWriter, code codes.Code, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/grpc")
	h.Set("Grpc-Status", strconv.Itoa(int(code)))
	h.Set("Grpc-Message", grpcMessage(msg))
	w.WriteHeader(http.StatusOK)
}

// grpcMessage is msg percent-encoded as grpc-message wants it: every byte
// outside printable ASCII, and '%', as %XX.
func grpcMessage(msg string) string {
	var b strings.Builder
	for i := 0; i < len(msg); i++ {
		if c := msg[i]; c >= ' ' && c <= '~' && c != '%' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// exportGRPC takes one export, which has its turn (serveGRPC), and
// decodes it on the decoding thread.
func (r *Receiver) exportGRPC(ctx context.Context, dec func(any) error) (any, error) {
	var m exportMessage
	if err := dec(&m); err != nil {
		switch {
		case status.Code(err) == codes.ResourceExhausted:
			r.refuse(&r.counts.TooLarge)
		case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
			r.refuse(&r.counts.TimedOut)
		default:
			r.refuse(&r.counts.Malformed)
		}
		return nil, err
	}
	defer m.data.Free()
	v := r.decode(&job{message: m.data})
	switch v.refusal {
	case refusedTooLarge:
		return nil, status.Error(codes.ResourceExhausted, "OTLP receiver: "+v.err.Error())
	case refusedMalformed:
		return nil, status.Error(codes.InvalidArgument, "OTLP receiver: not an ExportTraceServiceRequest: "+v.err.Error())
	case refusedClosing:
		return nil, status.Error(codes.Unavailable, "OTLP receiver: stopping")
	}
	return v.response(), nil
}
