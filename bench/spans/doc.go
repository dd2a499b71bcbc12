// Package spans is the server's side of each request: an OpenTelemetry
// trace receiver (OTLP/gRPC and OTLP/HTTP protobuf on one port, decoded
// with the OpenTelemetry project's own protobuf types) and the join of the
// spans it receives to the requests that caused them.
//
// With --otlp-receiver every request carries a W3C traceparent whose trace
// id is httpwire.TraceID of its x-request-id. A server that traces (vLLM's
// --otlp-traces-endpoint exports one SERVER span "llm_request" per
// request, its context taken from the incoming traceparent) sends that
// span here, in batches, seconds late; the receiver keeps what it needs of
// each span (span.go) within a bound, and Join matches spans to requests by
// trace id, falling back to the span's gen_ai.request.id.
//
// The receiver runs on net/http's and gRPC's goroutines, never on a shard:
// its CPU is the Go scheduler's, apart from the locked shard threads. The
// two clocks are never assumed to agree: the server's durations are
// subtracted only from the server's, the client's only from the client's,
// and a difference across the two sides (client time to first byte minus
// server time to first token) is named as such (join.go).
package spans
