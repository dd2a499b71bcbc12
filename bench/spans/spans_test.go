package spans

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/metrics"
)

func dbl(k string, v float64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}}
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// pbSpan is a request's span of trace tr: queue 1 ms, prefill 2 ms, TTFT
// 4 ms, e2e 20 ms, from start (Unix ns) to 20 ms later, named id.
func pbSpan(tr [16]byte, id string, start int64) *tracepb.Span {
	return &tracepb.Span{TraceId: tr[:], SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8}, Name: "llm_request",
		StartTimeUnixNano: uint64(start), EndTimeUnixNano: uint64(start + 20e6),
		Attributes: []*commonpb.KeyValue{dbl(attrQueue, 0.001), dbl(attrPrefill, 0.002), dbl(attrTTFT, 0.004),
			dbl(attrE2E, 0.020), str(attrRequestID, id)}}
}

// export is one export of spans, with a span of something else beside.
func export(spans ...*tracepb.Span) []byte {
	spans = append(spans, &tracepb.Span{TraceId: make([]byte, 16), Name: "http.request"})
	b, _ := proto.Marshal(&collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}})
	return b
}

// exportOf is an export of one request span per trace id.
func exportOf(traces ...[16]byte) []byte {
	var s []*tracepb.Span
	for i, tr := range traces {
		s = append(s, pbSpan(tr, string(rune('a'+i)), time.Now().UnixNano()))
	}
	return export(s...)
}

func post(t *testing.T, r *Receiver, body []byte, header ...string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-protobuf")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	r.serveHTTP(w, req)
	return w.Code
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

func newReceiver(t testing.TB, o Options) *Receiver {
	t.Helper()
	r, err := Listen("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// atLeast is a Finish predicate: n spans kept.
func atLeast(n int) func([]Span) bool {
	return func(kept []Span) bool { return len(kept) >= n }
}

// The join tests' run: time 0 is base, the receiver started a second
// before it. Request i starts at i ms on a kept-alive connection, sends
// for 1 ms, and has its first token 10 ms and its last 30 ms after its
// start; its server span (fitting) arrives 100 ms after it started.
var base = time.Unix(1_800_000_000, 0)

const receiverLeadNs = int64(time.Second)

func results(n int) Run {
	run := Run{Results: make([]metrics.RequestResult, n), RequestIDs: make([]string, n), Start: base}
	for i := range n {
		run.RequestIDs[i] = "r-" + string(rune('a'+i))
		run.Results[i] = metrics.RequestResult{Index: i, Success: true, StartNs: int64(i) * 1e6, TTFTNs: 10e6, LatencyNs: 30e6,
			Breakdown: metrics.Breakdown{Known: true, SendNs: 1e6}}
	}
	return run
}

// fitting is a span for request i of run that fits its times, with the
// server's clock thetaNs ahead of the client's: it arrives 2 ms after
// the start of the send, its first token leaves 4 ms later, its last 20
// ms after it arrived.
func fitting(run Run, i int, thetaNs int64) Span {
	start := base.UnixNano() + run.Results[i].StartNs + 2e6 + thetaNs
	return Span{
		TraceID: httpwire.TraceID(run.RequestIDs[i]), SpanID: [8]byte{byte(i)}, StartUnixNs: start, EndUnixNs: start + 20e6,
		ReceivedNs: receiverLeadNs + run.Results[i].StartNs + 100e6,
		QueueNs:    1e6, PrefillNs: 2e6, TTFTNs: 4e6, E2ENs: 20e6, DecodeNs: 16e6, InferenceNs: 18e6,
		PromptTokens: Absent, CompletionTokens: Absent,
	}
}

func collected(spans ...Span) Collected {
	return Collected{Spans: spans, Started: base.Add(-time.Duration(receiverLeadNs)), limits: defaultLimits,
		Counts: Counts{Exports: 1, Spans: int64(len(spans))}}
}

func join(run Run, c Collected) *report.ServerSpans {
	return Join(NewMatcher(run, c.Started), c, "x", []float64{50, 99}, true)
}

// TestJoinByTraceIDRequestIDAndNothing: a span joins by its trace id, else
// by vLLM's gen_ai.request.id ("cmpl-<id>-0"); a span matching neither
// is counted unmatched, a copy of a span received again a duplicate, and
// the phases follow the span's attributes on the server's side only.
func TestJoinByTraceIDRequestIDAndNothing(t *testing.T) {
	run := results(4)
	byID := fitting(run, 1, 0)
	byID.TraceID, byID.RequestID = [16]byte{9}, "cmpl-"+run.RequestIDs[1]+"-0"
	chat := fitting(run, 2, 0)
	chat.TraceID, chat.RequestID = [16]byte{7}, "chatcmpl-"+run.RequestIDs[2]
	retried := fitting(run, 0, 0)
	retried.ReceivedNs += 5e9
	nothing := fitting(run, 3, 0)
	nothing.TraceID, nothing.RequestID = [16]byte{8}, "no-such"
	s := join(run, collected(fitting(run, 0, 0), byID, nothing, retried, chat))
	if s.Requests != 4 || s.Joined != 3 || s.Unjoined != 1 || s.ByRequestID != 2 || s.UnmatchedSpans != 1 || s.DuplicateSpans != 1 ||
		s.RejectedSpans != 0 || s.ConflictingRequests != 0 || s.Warning != "" {
		t.Fatalf("join %+v", s)
	}
	if s.Summary != "3 of 4 requests joined" || !strings.Contains(s.Why, "matched no request") {
		t.Errorf("summary %q why %q", s.Summary, s.Why)
	}
	p := s.PerRequest[0]
	if p.ServerQueueNs != 1e6 || p.PrefillNs != 2e6 || p.FirstTokenOutNs != 1e6 || p.NetworkAndFrontEnd != 10e6-1e6-4e6 {
		t.Errorf("phases %+v", p)
	}
	if o := s.ClockOffset; o == nil || o.FromRequests != 3 || o.ServerMinusClientMs > 2 || o.ServerMinusClientMs < -10 {
		t.Errorf("clock offset %+v: want one placed by the 3 requests with a span, within their windows", o)
	}
}

// TestJoinRejectsSpansThatDoNotFit: a span whose figures cannot be the
// server's for its request, given what the client saw of it, is set aside
// with its reason, and the request joins the span that fits when one
// came; the sidecar warns.
func TestJoinRejectsSpansThatDoNotFit(t *testing.T) {
	run := results(3)
	for _, c := range []struct {
		name   string
		forge  func(*Span)
		reason string
	}{
		{"a TTFT longer than the client's", func(s *Span) { s.TTFTNs, s.E2ENs = 9_500e6, 10_000e6 }, "server TTFT longer"},
		{"an e2e longer than the client's", func(s *Span) { s.E2ENs = 200e6 }, "longer than the client's time from sending to the last token"},
		{"a span longer than the client's window", func(s *Span) { s.EndUnixNs += 50e6 }, "longer than the client's time from sending to the last token"},
		{"a queue longer than its TTFT", func(s *Span) { s.QueueNs = 9e6 }, "phases do not fit"},
		{"no times", func(s *Span) { s.StartUnixNs, s.EndUnixNs = 0, 0 }, "without a start and end time"},
		{"an end before its start", func(s *Span) { s.EndUnixNs = s.StartUnixNs - 1 }, "without a start and end time"},
		{"exported before the request was sent", func(s *Span) { s.ReceivedNs = receiverLeadNs - 1e9 }, "exported before the server could have finished"},
		{"an interval outside the window", func(s *Span) { s.StartUnixNs, s.EndUnixNs = s.StartUnixNs+400e6, s.EndUnixNs+400e6 }, "outside the client's window"},
	} {
		t.Run(c.name, func(t *testing.T) {
			forged := fitting(run, 0, 0)
			forged.SpanID = [8]byte{0xf}
			c.forge(&forged)
			s := join(run, collected(forged, fitting(run, 0, 0), fitting(run, 1, 0), fitting(run, 2, 0)))
			if s.Joined != 3 || s.RejectedSpans != 1 || s.ConflictingRequests != 0 || len(s.Rejections) != 1 {
				t.Fatalf("joined %d, rejected %d, conflicting %d, %+v: want the forgery rejected and the real span joined", s.Joined, s.RejectedSpans, s.ConflictingRequests, s.Rejections)
			}
			if r := s.Rejections[0]; !strings.Contains(r.Reason, c.reason) || !strings.Contains(r.Example, run.RequestIDs[0]) {
				t.Errorf("rejection %+v: want the reason %q and the request's id", r, c.reason)
			}
			if s.PerRequest[0].ServerTTFTNs != 4e6 {
				t.Errorf("request 0 joined a span with server TTFT %d, want the real one's 4 ms", s.PerRequest[0].ServerTTFTNs)
			}
			if !strings.Contains(s.Warning, "1 spans did not fit") || !strings.Contains(s.Warning, "--otlp-receiver-token") {
				t.Errorf("warning %q", s.Warning)
			}
		})
	}
}

// TestJoinConflictingSpans: two different spans that each fit one request
// make it conflicting, joined to neither; a copy of one span is not a
// second span.
func TestJoinConflictingSpans(t *testing.T) {
	run := results(3)
	other := fitting(run, 1, 0)
	other.SpanID, other.TTFTNs = [8]byte{0xe}, 3e6
	s := join(run, collected(fitting(run, 0, 0), fitting(run, 0, 0), fitting(run, 1, 0), other, fitting(run, 2, 0)))
	if s.Joined != 2 || s.ConflictingRequests != 1 || s.ConflictingSpans != 2 || s.DuplicateSpans != 1 || s.Unjoined != 1 {
		t.Fatalf("join %+v: want request 1 conflicting, request 0's copy a duplicate", s)
	}
	if !strings.Contains(s.Warning, "1 requests had two or more different spans") || !strings.Contains(s.Why, "joined to none") {
		t.Errorf("warning %q why %q", s.Warning, s.Why)
	}
}

// TestJoinWithServerClockAhead: the clocks need not agree: with the
// server's 5 s ahead every span fits at that offset, which the join
// reports, and a span off it by more than the tolerance is rejected.
func TestJoinWithServerClockAhead(t *testing.T) {
	run := results(10)
	var spans []Span
	for i := range 10 {
		spans = append(spans, fitting(run, i, 5e9))
	}
	spans[9].StartUnixNs += 300e6
	spans[9].EndUnixNs += 300e6
	s := join(run, collected(spans...))
	if s.Joined != 9 || s.RejectedSpans != 1 || !strings.Contains(s.Rejections[0].Reason, "clock offset") {
		t.Fatalf("joined %d, rejected %d %+v: want 9 joined at the offset and the tenth rejected", s.Joined, s.RejectedSpans, s.Rejections)
	}
	if o := s.ClockOffset; o == nil || o.ServerMinusClientMs < 4990 || o.ServerMinusClientMs > 5010 || o.FromRequests != 10 {
		t.Errorf("clock offset %+v, want 5,000 ms ahead ± the windows' slack", o)
	}
}

// TestMatcherEnough: Finish's predicate counts a request once a span that
// fits it came, not before: a forgery does not end the wait.
func TestMatcherEnough(t *testing.T) {
	run := results(2)
	m := NewMatcher(run, base.Add(-time.Duration(receiverLeadNs)))
	forged := fitting(run, 0, 0)
	forged.TTFTNs = 9e9
	kept := []Span{forged, fitting(run, 1, 0)}
	if m.Enough(kept) {
		t.Fatal("enough with a forged span for request 0")
	}
	if !m.Enough(append(kept, fitting(run, 0, 0))) {
		t.Error("not enough with a fitting span for each request")
	}
}

// TestReceiverRefusesAndBounds: bodies that are not OTLP protobuf, other
// content types and paths are refused and counted; spans past the bound
// are dropped and counted, not kept.
func TestReceiverRefusesAndBounds(t *testing.T) {
	r := newReceiver(t, Options{MaxSpans: 2})
	if code := post(t, r, []byte("\xff\xff\xff garbage")); code != http.StatusBadRequest {
		t.Errorf("garbage body answered %d, want 400", code)
	}
	if code := post(t, r, []byte("{}"), "Content-Type", "application/json"); code != http.StatusUnsupportedMediaType {
		t.Errorf("JSON answered %d, want 415", code)
	}
	if code := post(t, r, gzipped(exportOf([16]byte{1}, [16]byte{2}, [16]byte{3})), "Content-Encoding", "gzip"); code != http.StatusOK {
		t.Errorf("a gzip export answered %d", code)
	}
	got := r.Finish(context.Background(), time.Second, atLeast(3))
	if got.Counts.Malformed != 2 || len(got.Spans) != 2 || got.Counts.Dropped != 1 || got.Counts.Other != 1 || got.Counts.Spans != 3 {
		t.Errorf("counts %+v, %d spans kept; want 2 refused, 2 kept, 1 dropped, 1 other", got.Counts, len(got.Spans))
	}
	if s := got.Spans[0]; s.TraceID != [16]byte{1} || s.RequestID != "a" || s.TTFTNs != 4e6 || s.E2ENs != 20e6 || s.EndUnixNs-s.StartUnixNs != 20e6 || s.ReceivedNs <= 0 {
		t.Errorf("kept span %+v", s)
	}
}

// TestReceiverSurvivesAGarbageSender: raw bytes on the receiver's port
// neither crash it nor keep it from taking the next export.
func TestReceiverSurvivesAGarbageSender(t *testing.T) {
	r := newReceiver(t, Options{MaxSpans: 10})
	for _, junk := range []string{"\x00\x01\x02 not http\r\n\r\n", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xff\xff\xff\xff", strings.Repeat("A", 1<<16)} {
		c := dial(t, r)
		_, _ = c.Write([]byte(junk))
		_ = c.Close()
	}
	resp, err := http.Post("http://"+r.Addr()+"/v1/traces", "application/x-protobuf", bytes.NewReader(exportOf([16]byte{1})))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export after the garbage answered %d", resp.StatusCode)
	}
	if got := r.Finish(context.Background(), time.Second, atLeast(1)); len(got.Spans) != 1 {
		t.Errorf("%d spans kept, want 1", len(got.Spans))
	}
}

// wireSeeds are export bodies that exercise protobuf's corners: a value
// given twice (merged), a field of an unexpected wire type (unknown), a
// key after its value, unknown fields, a group, a span without times.
func wireSeeds() [][]byte {
	seeds := [][]byte{exportOf([16]byte{1}, [16]byte{2}), {}, []byte("\x0a\x05\x12\x03\x12\x01\x0a"), []byte("\x0a\xff\xff\xff\xff\x0f")}
	kv := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tagBytes := func(num protowire.Number, b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	double := protowire.AppendFixed64(protowire.AppendTag(nil, valueDouble, protowire.Fixed64Type), 0x3f847ae147ae147b) // 0.01
	intValue := protowire.AppendVarint(protowire.AppendTag(nil, valueInt, protowire.VarintType), 3)
	wrongWire := protowire.AppendVarint(protowire.AppendTag(nil, valueDouble, protowire.VarintType), 5)
	stringValue := tagBytes(valueString, []byte("r-x"))
	group := protowire.AppendTag(protowire.AppendVarint(protowire.AppendTag(protowire.AppendTag(nil, 40, protowire.StartGroupType), 1, protowire.VarintType), 1), 40, protowire.EndGroupType)
	attrs := [][]byte{
		kv(tagBytes(fieldKey, []byte(attrTTFT)), tagBytes(fieldValue, double), tagBytes(fieldValue, nil)),
		kv(tagBytes(fieldValue, double), tagBytes(fieldKey, []byte(attrE2E))),
		kv(tagBytes(fieldKey, []byte(attrQueue)), tagBytes(fieldValue, double), tagBytes(fieldValue, stringValue)),
		kv(tagBytes(fieldKey, []byte(attrPrefill)), tagBytes(fieldValue, kv(double, wrongWire))),
		kv(tagBytes(fieldKey, []byte(attrPromptTokens)), tagBytes(fieldValue, intValue)),
		kv(tagBytes(fieldKey, []byte(attrRequestID)), tagBytes(fieldValue, stringValue), group),
	}
	var span []byte
	span = append(span, tagBytes(fieldTraceID, bytes.Repeat([]byte{7}, 16))...)
	span = protowire.AppendVarint(protowire.AppendTag(span, fieldSpanID, protowire.VarintType), 9) // wrong wire type: unknown
	span = protowire.AppendFixed64(protowire.AppendTag(span, fieldStartTime, protowire.Fixed64Type), 1e18)
	span = protowire.AppendFixed64(protowire.AppendTag(span, fieldEndTime, protowire.Fixed64Type), 1<<63+5)
	for _, a := range attrs {
		span = append(span, tagBytes(fieldAttributes, a)...)
	}
	span = append(span, tagBytes(99, []byte("unknown"))...)
	scope := kv(tagBytes(1, []byte{0x0a, 0x01, 'x'}), tagBytes(fieldSpans, span), tagBytes(fieldSpans, nil))
	seeds = append(seeds, tagBytes(fieldResourceSpans, tagBytes(fieldScopeSpans, scope)))
	return seeds
}

// FuzzReceiverBody: any body on the OTLP/HTTP path is answered, never a
// crash, and keeps no more spans than the bound.
func FuzzReceiverBody(f *testing.F) {
	for _, s := range wireSeeds() {
		f.Add(s)
	}
	r, err := Listen("127.0.0.1:0", Options{MaxSpans: 4})
	if err != nil {
		f.Fatal(err)
	}
	defer r.Close()
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-protobuf")
		w := httptest.NewRecorder()
		r.serveHTTP(w, req)
		if w.Code != http.StatusOK && w.Code != http.StatusBadRequest && w.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("answered %d", w.Code)
		}
		r.mu.Lock()
		n := len(r.spans)
		r.mu.Unlock()
		if n > 4 {
			t.Fatalf("%d spans kept past the bound of 4", n)
		}
	})
}
