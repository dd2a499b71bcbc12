package spans

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/metrics"
)

func dbl(k string, v float64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}}
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// export is one export of spans for the given trace ids, each with a
// queue of 1 ms, prefill 2 ms and TTFT 4 ms, and the given request ids.
func export(traces [][16]byte, ids []string) []byte {
	var spans []*tracepb.Span
	for i, tr := range traces {
		spans = append(spans, &tracepb.Span{TraceId: tr[:], SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8}, Name: "llm_request",
			Attributes: []*commonpb.KeyValue{dbl(attrQueue, 0.001), dbl(attrPrefill, 0.002), dbl(attrTTFT, 0.004),
				dbl(attrE2E, 0.010), str(attrRequestID, ids[i])}})
	}
	// A span of something else in the same batch.
	spans = append(spans, &tracepb.Span{TraceId: make([]byte, 16), Name: "http.request"})
	b, _ := proto.Marshal(&collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}})
	return b
}

func post(t *testing.T, r *Receiver, body []byte, contentType string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	w := httptest.NewRecorder()
	r.serveHTTP(w, req)
	return w.Code
}

func newReceiver(t *testing.T, max int) *Receiver {
	t.Helper()
	r, err := Listen("127.0.0.1:0", max)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func results(n int) ([]metrics.RequestResult, []string) {
	rs := make([]metrics.RequestResult, n)
	ids := make([]string, n)
	for i := range rs {
		ids[i] = "r-" + string(rune('a'+i))
		rs[i] = metrics.RequestResult{Index: i, Success: true, TTFTNs: 10_000_000,
			Breakdown: metrics.Breakdown{Known: true, SendNs: 1_000_000}}
	}
	return rs, ids
}

// TestJoinByTraceIDRequestIDAndNothing: a span joins by its trace id, else
// by vLLM's gen_ai.request.id ("cmpl-<id>-0"); a span matching neither
// is counted unmatched, a second span of a request a duplicate, and the
// phases follow the span's attributes on the server's side only.
func TestJoinByTraceIDRequestIDAndNothing(t *testing.T) {
	r := newReceiver(t, 100)
	rs, ids := results(4)
	body := export([][16]byte{httpwire.TraceID(ids[0]), {9}, {8}, httpwire.TraceID(ids[0]), {7}},
		[]string{ids[0], "cmpl-" + ids[1] + "-0", "no-such", "dup", "chatcmpl-" + ids[2]})
	if code := post(t, r, body, "application/x-protobuf"); code != http.StatusOK {
		t.Fatalf("export answered %d", code)
	}
	got := r.Finish(context.Background(), 5, time.Second)
	if got.Counts.Spans != 5 || got.Counts.Other != 1 || got.Counts.Exports != 1 {
		t.Fatalf("counts %+v: want 5 request spans and 1 other in 1 export", got.Counts)
	}
	s := Join(rs, ids, got, "x", []float64{50, 99}, true)
	if s.Requests != 4 || s.Joined != 3 || s.Unjoined != 1 || s.ByRequestID != 2 || s.UnmatchedSpans != 1 || s.DuplicateSpans != 1 {
		t.Fatalf("join %+v", s)
	}
	if s.Summary != "3 of 4 requests joined" || !strings.Contains(s.Why, "matched no request") {
		t.Errorf("summary %q why %q", s.Summary, s.Why)
	}
	p := s.PerRequest[0]
	if p.ServerQueueNs != 1_000_000 || p.PrefillNs != 2_000_000 || p.FirstTokenOutNs != 1_000_000 ||
		p.NetworkAndFrontEnd != 10_000_000-1_000_000-4_000_000 {
		t.Errorf("phases %+v", p)
	}
}

// TestReceiverRefusesAndBounds: bodies that are not OTLP protobuf, other
// content types and paths are refused and counted; spans past the bound
// are dropped and counted, not kept.
func TestReceiverRefusesAndBounds(t *testing.T) {
	r := newReceiver(t, 2)
	if code := post(t, r, []byte("\xff\xff\xff garbage"), "application/x-protobuf"); code != http.StatusBadRequest {
		t.Errorf("garbage body answered %d, want 400", code)
	}
	if code := post(t, r, []byte("{}"), "application/json"); code != http.StatusUnsupportedMediaType {
		t.Errorf("JSON answered %d, want 415", code)
	}
	post(t, r, export([][16]byte{{1}, {2}, {3}}, []string{"a", "b", "c"}), "application/x-protobuf")
	got := r.Finish(context.Background(), 3, time.Second)
	if got.Counts.Malformed != 2 || len(got.Spans) != 2 || got.Counts.Dropped != 1 {
		t.Errorf("counts %+v, %d spans kept; want 2 refused, 2 kept, 1 dropped", got.Counts, len(got.Spans))
	}
}

// TestReceiverSurvivesAGarbageSender: raw bytes on the receiver's port
// neither crash it nor keep it from taking the next export.
func TestReceiverSurvivesAGarbageSender(t *testing.T) {
	r := newReceiver(t, 10)
	for _, junk := range []string{"\x00\x01\x02 not http\r\n\r\n", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xff\xff\xff\xff", strings.Repeat("A", 1<<16)} {
		c, err := net.Dial("tcp", r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(junk))
		_ = c.Close()
	}
	body := export([][16]byte{{1}}, []string{"a"})
	resp, err := http.Post("http://"+r.Addr()+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export after the garbage answered %d", resp.StatusCode)
	}
	if got := r.Finish(context.Background(), 1, time.Second); len(got.Spans) != 1 {
		t.Errorf("%d spans kept, want 1", len(got.Spans))
	}
}

// FuzzReceiverBody: any body on the OTLP/HTTP path is answered, never a
// crash, and keeps no more spans than the bound.
func FuzzReceiverBody(f *testing.F) {
	f.Add(export([][16]byte{{1}, {2}}, []string{"a", "b"}))
	f.Add([]byte{})
	f.Add([]byte("\x0a\x05\x12\x03\x12\x01\x0a"))
	f.Add([]byte("\x0a\xff\xff\xff\xff\x0f"))
	r, err := Listen("127.0.0.1:0", 4)
	if err != nil {
		f.Fatal(err)
	}
	defer r.Close()
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-protobuf")
		w := httptest.NewRecorder()
		r.serveHTTP(w, req)
		if w.Code != http.StatusOK && w.Code != http.StatusBadRequest {
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
