package httpwire

import (
	"crypto/sha256"
	"encoding/hex"
)

// TraceID is the W3C trace id stampede gives the request whose
// x-request-id is requestID: the first 16 bytes of its SHA-256. A server
// that traces (vLLM's --otlp-traces-endpoint) continues the incoming
// context, so its span for the request carries this id and the client can
// find the request again from the span alone. Never all zero in practice
// (the W3C form forbids it); a hash that were would still only fail to
// join.
func TraceID(requestID string) [16]byte {
	sum := sha256.Sum256([]byte(requestID))
	var id [16]byte
	copy(id[:], sum[:16])
	return id
}

// TraceParentLen is the length of a version-00 traceparent value:
// "00-" 32 hex "-" 16 hex "-01".
const TraceParentLen = 55

// TraceParent is the W3C traceparent value for requestID: version 00, the
// trace id TraceID, a parent span id from the next 8 bytes of the same
// hash, and the sampled flag (01), so the server records the span rather
// than deferring to its own sampler. Requests are encoded once, before the
// clock starts, so this costs nothing on the hot path.
func TraceParent(requestID string) string {
	sum := sha256.Sum256([]byte(requestID))
	b := make([]byte, 0, TraceParentLen)
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, sum[:16])
	b = append(b, '-')
	b = hex.AppendEncode(b, sum[16:24])
	b = append(b, "-01"...)
	return string(b)
}
