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

// ParseTraceParent reads the trace id of a W3C traceparent value as a
// server receives it: "VV-<32 hex>-<16 hex>-<2 hex>", a version other than
// ff, lower-case hex, a trace id and parent id not all zero. A future
// version may append fields after the flags ("-..."), which are ignored.
// ok is false for anything else, as the W3C rules say a receiver must
// then start a new trace.
func ParseTraceParent(v []byte) (id [16]byte, ok bool) {
	if len(v) < TraceParentLen || v[2] != '-' || v[35] != '-' || v[52] != '-' ||
		(len(v) > TraceParentLen && v[55] != '-') {
		return id, false
	}
	var version [1]byte
	var parent [8]byte
	var flags [1]byte
	if !lowerHex(version[:], v[0:2]) || version[0] == 0xff || !lowerHex(id[:], v[3:35]) ||
		!lowerHex(parent[:], v[36:52]) || !lowerHex(flags[:], v[53:55]) {
		return id, false
	}
	if version[0] == 0 && len(v) != TraceParentLen {
		return id, false
	}
	if id == ([16]byte{}) || parent == ([8]byte{}) {
		return id, false
	}
	return id, true
}

// lowerHex decodes src, lower-case hex only, into dst (len(src) = 2
// len(dst)).
func lowerHex(dst, src []byte) bool {
	for i := range dst {
		hi, ok1 := hexNibble(src[2*i])
		lo, ok2 := hexNibble(src[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func hexNibble(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
