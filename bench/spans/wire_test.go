package spans

import (
	"math"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The reference: what the OpenTelemetry project's generated types make of
// a span, read as the receiver reads it.

func refSeconds(v *commonpb.AnyValue) int64 {
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

func refCount(v *commonpb.AnyValue) int64 {
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

func refSpan(s *tracepb.Span) (Span, bool) {
	out := Span{QueueNs: Absent, TTFTNs: Absent, E2ENs: Absent, PrefillNs: Absent, DecodeNs: Absent,
		InferenceNs: Absent, PromptTokens: Absent, CompletionTokens: Absent}
	copy(out.TraceID[:], s.GetTraceId())
	copy(out.SpanID[:], s.GetSpanId())
	if s.StartTimeUnixNano <= math.MaxInt64 && s.EndTimeUnixNano <= math.MaxInt64 {
		out.StartUnixNs, out.EndUnixNs = int64(s.StartTimeUnixNano), int64(s.EndTimeUnixNano)
	}
	latency := false
	for _, kv := range s.GetAttributes() {
		v := kv.GetValue()
		switch kv.GetKey() {
		case attrRequestID:
			out.RequestID = v.GetStringValue()
		case attrQueue:
			out.QueueNs, latency = refSeconds(v), true
		case attrTTFT:
			out.TTFTNs, latency = refSeconds(v), true
		case attrE2E:
			out.E2ENs, latency = refSeconds(v), true
		case attrPrefill:
			out.PrefillNs, latency = refSeconds(v), true
		case attrDecode:
			out.DecodeNs, latency = refSeconds(v), true
		case attrInference:
			out.InferenceNs, latency = refSeconds(v), true
		case attrPromptTokens:
			out.PromptTokens = refCount(v)
		case attrCompletionTokens:
			out.CompletionTokens = refCount(v)
		}
	}
	return out, latency
}

// decodedSpan is one span as the receiver decoded it.
type decodedSpan struct {
	Span
	latency bool
}

func decodeAll(body []byte) ([]decodedSpan, error) {
	var out []decodedSpan
	var s wireSpan
	err := eachSpan(body, func(b []byte) error {
		latency, err := decodeSpan(b, &s)
		sp := s.Span
		sp.RequestID = string(s.requestID)
		out = append(out, decodedSpan{sp, latency})
		return err
	})
	return out, err
}

// FuzzDecodeMatchesProto: whatever body protobuf's own decoder accepts as
// an ExportTraceServiceRequest, the receiver's decoder in place accepts
// too, counts the same spans and reads each as the generated types have
// it (a span, request or other, field for field); a body protobuf
// refuses is refused or read without a crash.
func FuzzDecodeMatchesProto(f *testing.F) {
	for _, s := range wireSeeds() {
		f.Add(s)
	}
	f.Add(bomb(10))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeAll(body)
		var ref collectortrace.ExportTraceServiceRequest
		if proto.Unmarshal(body, &ref) != nil {
			return
		}
		if err != nil {
			t.Fatalf("protobuf decodes the body, the receiver refuses it: %v", err)
		}
		var want []decodedSpan
		for _, rs := range ref.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					sp, latency := refSpan(s)
					want = append(want, decodedSpan{sp, latency})
				}
			}
		}
		if n, err := countSpans(body, math.MaxInt); err != nil || n != len(want) {
			t.Fatalf("counted %d spans (%v), protobuf has %d", n, err, len(want))
		}
		if len(got) != len(want) {
			t.Fatalf("decoded %d spans, protobuf has %d", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("span %d:\n got %+v\nwant %+v", i, got[i], want[i])
			}
		}
	})
}

// TestDecodeAllocatesNothing: walking and decoding an export's spans in
// place allocates nothing; only the spans kept are copied out.
func TestDecodeAllocatesNothing(t *testing.T) {
	body := exportOf([16]byte{1}, [16]byte{2}, [16]byte{3})
	var s wireSpan
	n := testing.AllocsPerRun(50, func() {
		if _, err := countSpans(body, 100); err != nil {
			t.Fatal(err)
		}
		_ = eachSpan(body, func(b []byte) error { _, err := decodeSpan(b, &s); return err })
	})
	if n != 0 {
		t.Errorf("%.1f allocations per export, want 0", n)
	}
}
