package spans

import (
	"context"
	"errors"
	"fmt"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
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

// exportGRPC takes one export: refused without the token or a turn
// before its message is read, then decoded on the decoding thread.
func (r *Receiver) exportGRPC(ctx context.Context, dec func(any) error) (any, error) {
	if r.auth != nil {
		md, _ := metadata.FromIncomingContext(ctx)
		if !r.auth.allows(md.Get(r.auth.Header)) {
			r.refuse(&r.counts.Unauthenticated)
			return nil, status.Error(codes.Unauthenticated, "OTLP receiver: this export lacks the receiver's token (stampede --otlp-receiver-token; the exporter sends it from OTEL_EXPORTER_OTLP_HEADERS)")
		}
	}
	if !r.takeSlot(ctx) {
		r.refuse(&r.counts.Busy)
		return nil, status.Error(codes.Unavailable, "OTLP receiver: busy with other exports; try again")
	}
	defer r.releaseSlot()
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
