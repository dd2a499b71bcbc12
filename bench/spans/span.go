package spans

import (
	"math"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
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

// Span is what the join needs of one server span: its trace id, the
// server's request id, and the server's own durations in nanoseconds
// (Absent when the span had no such attribute), all measured on the
// server's clock.
type Span struct {
	TraceID   [16]byte
	RequestID string
	QueueNs   int64
	TTFTNs    int64
	E2ENs     int64
	PrefillNs int64
	DecodeNs  int64
	// InferenceNs is prefill and decode together, as vLLM reports it.
	InferenceNs      int64
	PromptTokens     int64
	CompletionTokens int64
}

// fromProto is s's Span, and whether s is a request's span at all: one
// that carries a latency vLLM reports (a router's or framework's other
// spans in the same batch are not, and are counted apart).
func fromProto(s *tracepb.Span) (Span, bool) {
	out := Span{QueueNs: Absent, TTFTNs: Absent, E2ENs: Absent, PrefillNs: Absent, DecodeNs: Absent,
		InferenceNs: Absent, PromptTokens: Absent, CompletionTokens: Absent}
	copy(out.TraceID[:], s.GetTraceId())
	latency := false
	for _, kv := range s.GetAttributes() {
		v := kv.GetValue()
		switch kv.GetKey() {
		case attrRequestID:
			out.RequestID = v.GetStringValue()
		case attrQueue:
			out.QueueNs, latency = secondsNs(v), true
		case attrTTFT:
			out.TTFTNs, latency = secondsNs(v), true
		case attrE2E:
			out.E2ENs, latency = secondsNs(v), true
		case attrPrefill:
			out.PrefillNs, latency = secondsNs(v), true
		case attrDecode:
			out.DecodeNs, latency = secondsNs(v), true
		case attrInference:
			out.InferenceNs, latency = secondsNs(v), true
		case attrPromptTokens:
			out.PromptTokens = count(v)
		case attrCompletionTokens:
			out.CompletionTokens = count(v)
		}
	}
	return out, latency
}

// maxSeconds bounds a latency a span may claim (a day); past it, or
// negative, or not a number, the value is treated as absent rather than
// overflowing a nanosecond count.
const maxSeconds = 86400

// secondsNs is a latency attribute in nanoseconds, rounded: a double of
// d/1e9 seconds with d below 2^53 rounds back to d exactly, so a server
// that measured whole nanoseconds is read back as it measured.
func secondsNs(v *commonpb.AnyValue) int64 {
	var sec float64
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_DoubleValue:
		sec = x.DoubleValue
	case *commonpb.AnyValue_IntValue:
		sec = float64(x.IntValue)
	default:
		return Absent
	}
	if !(sec >= 0 && sec <= maxSeconds) {
		return Absent
	}
	return int64(math.Round(sec * 1e9))
}

func count(v *commonpb.AnyValue) int64 {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_IntValue:
		if x.IntValue >= 0 {
			return x.IntValue
		}
	case *commonpb.AnyValue_DoubleValue:
		if x.DoubleValue >= 0 && x.DoubleValue < 1<<53 {
			return int64(x.DoubleValue)
		}
	}
	return Absent
}
