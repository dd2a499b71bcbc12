package spans

import (
	"math"
)

// The attributes vLLM's tracing (vllm/tracing.py, SpanAttributes) puts on
// its llm_request span. The latencies are seconds, as doubles; the token
// counts integers.
const (
	attrRequestID        = "gen_ai.request.id"
	attrQueue            = "gen_ai.latency.time_in_queue"
	attrTTFT             = "gen_ai.latency.time_to_first_token"
	attrE2E              = "gen_ai.latency.e2e"
	attrPrefill          = "gen_ai.latency.time_in_model_prefill"
	attrDecode           = "gen_ai.latency.time_in_model_decode"
	attrInference        = "gen_ai.latency.time_in_model_inference"
	attrPromptTokens     = "gen_ai.usage.prompt_tokens"
	attrCompletionTokens = "gen_ai.usage.completion_tokens"
)

// Absent marks a duration or count the span did not carry.
const Absent = -1

// Span is what the join needs of one server span: its trace and span ids,
// the server's request id, its start and end, and the server's own
// durations in nanoseconds (Absent when the span had no such attribute),
// all measured on the server's clock; and when its export reached the
// receiver, on the client's.
type Span struct {
	TraceID   [16]byte
	SpanID    [8]byte
	RequestID string
	// StartUnixNs and EndUnixNs are the span's start and end on the
	// server's wall clock; 0 when the span had none (or one past 2^63).
	StartUnixNs, EndUnixNs int64
	// ReceivedNs is when the receiver began decoding the span's export, in
	// nanoseconds since the receiver started (Collected.Started), on the
	// client's monotonic clock.
	ReceivedNs int64
	QueueNs    int64
	TTFTNs     int64
	E2ENs      int64
	PrefillNs  int64
	DecodeNs   int64
	// InferenceNs is prefill and decode together, as vLLM reports it.
	InferenceNs      int64
	PromptTokens     int64
	CompletionTokens int64
}

// sameSpan reports whether a and b are one span received twice (an
// exporter that retried an export the receiver had taken): equal in
// everything but when they arrived.
func sameSpan(a, b *Span) bool {
	x, y := *a, *b
	x.ReceivedNs, y.ReceivedNs = 0, 0
	return x == y
}

// maxSeconds bounds a latency a span may claim (a day); past it, or
// negative, or not a number, the value is treated as absent rather than
// overflowing a nanosecond count.
const maxSeconds = 86400

// secondsNs is a latency attribute in nanoseconds, rounded: a double of
// d/1e9 seconds with d below 2^53 rounds back to d exactly, so a server
// that measured whole nanoseconds is read back as it measured.
func secondsNs(v *anyValue) int64 {
	var sec float64
	switch v.kind {
	case valueDouble:
		sec = v.double
	case valueInt:
		sec = float64(v.integer)
	default:
		return Absent
	}
	if !(sec >= 0 && sec <= maxSeconds) {
		return Absent
	}
	return int64(math.Round(sec * 1e9))
}

// count is a token-count attribute; Absent unless it is a non-negative
// integer (or a double holding one).
func count(v *anyValue) int64 {
	switch v.kind {
	case valueInt:
		if v.integer >= 0 {
			return v.integer
		}
	case valueDouble:
		if v.double >= 0 && v.double < 1<<53 {
			return int64(v.double)
		}
	}
	return Absent
}
