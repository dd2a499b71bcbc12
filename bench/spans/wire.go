package spans

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// The receiver reads an ExportTraceServiceRequest straight from its
// protobuf bytes rather than building the OpenTelemetry project's message
// types: a message of 16 MiB can hold 8 million empty spans, and building
// them (a struct, a pointer and slices each) cost gigabytes for kilobytes
// of gzip. Walking the bytes allocates nothing; only the spans the join
// keeps are copied out. The field numbers are opentelemetry-proto's
// (trace_service.proto, trace.proto, common.proto), the semantics
// protobuf's: a field with an unexpected wire type is an unknown field and
// skipped, the last of a repeated singular field wins, and the
// occurrences of a singular message field merge.
const (
	// ExportTraceServiceRequest
	fieldResourceSpans protowire.Number = 1
	// ResourceSpans
	fieldScopeSpans protowire.Number = 2
	// ScopeSpans
	fieldSpans protowire.Number = 2
	// Span
	fieldTraceID    protowire.Number = 1
	fieldSpanID     protowire.Number = 2
	fieldStartTime  protowire.Number = 7
	fieldEndTime    protowire.Number = 8
	fieldAttributes protowire.Number = 9
	// KeyValue
	fieldKey   protowire.Number = 1
	fieldValue protowire.Number = 2
)

// AnyValue's oneof, by field number.
const (
	valueNone    = 0
	valueString  = 1
	valueBool    = 2
	valueInt     = 3
	valueDouble  = 4
	valueArray   = 5
	valueKVList  = 6
	valueBytes   = 7
	valueStrings = 8 // string_value_strindex, a profile dictionary's
)

// valueWireType is the wire type of each of AnyValue's oneof fields.
var valueWireType = [...]protowire.Type{
	valueString: protowire.BytesType, valueBool: protowire.VarintType, valueInt: protowire.VarintType,
	valueDouble: protowire.Fixed64Type, valueArray: protowire.BytesType, valueKVList: protowire.BytesType,
	valueBytes: protowire.BytesType, valueStrings: protowire.VarintType,
}

// WireError is an export body that is not a well-formed protobuf message.
type WireError struct {
	// In names the message the fault is in ("ScopeSpans", "Span").
	In  string
	Err error
}

func (e *WireError) Error() string { return fmt.Sprintf("malformed protobuf in %s: %v", e.In, e.Err) }

// field is one field of a protobuf message as it lies in the bytes: its
// number, wire type, and value (a length-delimited field's payload, else
// the value's own encoding).
type field struct {
	num protowire.Number
	typ protowire.Type
	val []byte
}

// nextField takes the first field off b.
func nextField(b []byte, in string) (field, []byte, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return field{}, nil, &WireError{in, protowire.ParseError(n)}
	}
	b = b[n:]
	if typ == protowire.BytesType {
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return field{}, nil, &WireError{in, protowire.ParseError(m)}
		}
		return field{num, typ, v}, b[m:], nil
	}
	m := protowire.ConsumeFieldValue(num, typ, b)
	if m < 0 {
		return field{}, nil, &WireError{in, protowire.ParseError(m)}
	}
	return field{num, typ, b[:m]}, b[m:], nil
}

// eachMessage calls fn with every message of field num in b, a message of
// type in, in order; other fields are checked for framing and skipped.
func eachMessage(b []byte, in string, num protowire.Number, fn func([]byte) error) error {
	for len(b) > 0 {
		f, rest, err := nextField(b, in)
		if err != nil {
			return err
		}
		b = rest
		if f.num == num && f.typ == protowire.BytesType {
			if err := fn(f.val); err != nil {
				return err
			}
		}
	}
	return nil
}

// errTooManySpans ends countSpans past its limit.
type errTooManySpans struct{ limit int }

func (e errTooManySpans) Error() string {
	return fmt.Sprintf("an export of more than %d spans", e.limit)
}

// countSpans counts the spans of an ExportTraceServiceRequest without
// reading them, and stops with errTooManySpans once there are more than
// limit: the refusal comes before a single span is decoded.
func countSpans(export []byte, limit int) (int, error) {
	n := 0
	err := eachMessage(export, "ExportTraceServiceRequest", fieldResourceSpans, func(rs []byte) error {
		return eachMessage(rs, "ResourceSpans", fieldScopeSpans, func(ss []byte) error {
			return eachMessage(ss, "ScopeSpans", fieldSpans, func([]byte) error {
				if n++; n > limit {
					return errTooManySpans{limit}
				}
				return nil
			})
		})
	})
	return n, err
}

// eachSpan calls fn with the bytes of every span of an
// ExportTraceServiceRequest, in order.
func eachSpan(export []byte, fn func(span []byte) error) error {
	return eachMessage(export, "ExportTraceServiceRequest", fieldResourceSpans, func(rs []byte) error {
		return eachMessage(rs, "ResourceSpans", fieldScopeSpans, func(ss []byte) error {
			return eachMessage(ss, "ScopeSpans", fieldSpans, fn)
		})
	})
}

// anyValue is what an attribute's AnyValue holds, as far as the join
// reads it: which of the oneof is set, and a string, integer or double.
type anyValue struct {
	kind    int
	str     []byte
	integer int64
	double  float64
}

// wireSpan is a span decoded in place: requestID points into the export's
// bytes until the span is kept.
type wireSpan struct {
	Span
	requestID []byte
}

// decodeSpan reads b, one Span message, into s, and reports whether it is
// a request's span: one that carries a latency vLLM reports (a router's
// or framework's other spans in the same batch are not, and are counted
// apart).
func decodeSpan(b []byte, s *wireSpan) (latency bool, err error) {
	*s = wireSpan{Span: Span{QueueNs: Absent, TTFTNs: Absent, E2ENs: Absent, PrefillNs: Absent, DecodeNs: Absent,
		InferenceNs: Absent, PromptTokens: Absent, CompletionTokens: Absent}}
	var traceID, spanID []byte
	var start, end uint64
	for len(b) > 0 {
		f, rest, err := nextField(b, "Span")
		if err != nil {
			return false, err
		}
		b = rest
		switch {
		case f.num == fieldTraceID && f.typ == protowire.BytesType:
			traceID = f.val
		case f.num == fieldSpanID && f.typ == protowire.BytesType:
			spanID = f.val
		case f.num == fieldStartTime && f.typ == protowire.Fixed64Type:
			start, _ = protowire.ConsumeFixed64(f.val)
		case f.num == fieldEndTime && f.typ == protowire.Fixed64Type:
			end, _ = protowire.ConsumeFixed64(f.val)
		case f.num == fieldAttributes && f.typ == protowire.BytesType:
			key, v, err := decodeKeyValue(f.val)
			if err != nil {
				return false, err
			}
			if s.attribute(key, &v) {
				latency = true
			}
		}
	}
	copy(s.TraceID[:], traceID)
	copy(s.SpanID[:], spanID)
	if start <= math.MaxInt64 && end <= math.MaxInt64 {
		s.StartUnixNs, s.EndUnixNs = int64(start), int64(end)
	}
	return latency, nil
}

// attribute sets what key's value says of s, and reports whether key is
// one of vLLM's latencies.
func (s *wireSpan) attribute(key []byte, v *anyValue) (latency bool) {
	switch string(key) {
	case attrRequestID:
		s.requestID = nil
		if v.kind == valueString {
			s.requestID = v.str
		}
	case attrQueue:
		s.QueueNs, latency = secondsNs(v), true
	case attrTTFT:
		s.TTFTNs, latency = secondsNs(v), true
	case attrE2E:
		s.E2ENs, latency = secondsNs(v), true
	case attrPrefill:
		s.PrefillNs, latency = secondsNs(v), true
	case attrDecode:
		s.DecodeNs, latency = secondsNs(v), true
	case attrInference:
		s.InferenceNs, latency = secondsNs(v), true
	case attrPromptTokens:
		s.PromptTokens = count(v)
	case attrCompletionTokens:
		s.CompletionTokens = count(v)
	}
	return latency
}

// decodeKeyValue reads a KeyValue: its key, and its value with every
// occurrence of the value field merged, as protobuf merges a singular
// message field given twice (the oneof member set last wins).
func decodeKeyValue(b []byte) (key []byte, v anyValue, err error) {
	for len(b) > 0 {
		f, rest, err := nextField(b, "KeyValue")
		if err != nil {
			return nil, v, err
		}
		b = rest
		switch {
		case f.num == fieldKey && f.typ == protowire.BytesType:
			key = f.val
		case f.num == fieldValue && f.typ == protowire.BytesType:
			if err := mergeAnyValue(f.val, &v); err != nil {
				return nil, v, err
			}
		}
	}
	return key, v, nil
}

// mergeAnyValue reads one AnyValue message into v.
func mergeAnyValue(b []byte, v *anyValue) error {
	for len(b) > 0 {
		f, rest, err := nextField(b, "AnyValue")
		if err != nil {
			return err
		}
		b = rest
		kind := int(f.num)
		if kind < valueString || kind >= len(valueWireType) || valueWireType[kind] != f.typ {
			continue
		}
		v.kind = kind
		switch kind {
		case valueString:
			v.str = f.val
		case valueInt:
			x, _ := protowire.ConsumeVarint(f.val)
			v.integer = int64(x)
		case valueDouble:
			x, _ := protowire.ConsumeFixed64(f.val)
			v.double = math.Float64frombits(x)
		}
	}
	return nil
}
