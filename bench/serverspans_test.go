package bench

import (
	"bytes"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/httpwire"
)

const spanRequests = 20

// runWithSpans runs spanRequests requests with --otlp-receiver against a
// mock exporting to it over protocol ("" exports nothing) and returns
// stderr, the sidecar's server_spans and the truth log.
func runWithSpans(t *testing.T, protocol string, cfg mock.Config, args ...string) (string, *report.ServerSpans, []mock.TruthRequest) {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(benchtest.FreePort(t))
	cfg.ITL, cfg.TTFT = 2*time.Millisecond, 5*time.Millisecond
	switch protocol {
	case mock.OTLPHTTP:
		cfg.OTLPTracesEndpoint, cfg.OTLPTracesProtocol = "http://"+addr+"/v1/traces", mock.OTLPHTTP
	case mock.OTLPGRPC:
		cfg.OTLPTracesEndpoint, cfg.OTLPTracesProtocol = addr, mock.OTLPGRPC
	}
	// The ready check's test request would finish before the receiver
	// listens; the measured run alone is traced.
	_, stderr, sc, _, truth := runPerToken(t, cfg, "spans", append([]string{"--otlp-receiver", addr,
		"--num-prompts", strconv.Itoa(spanRequests), "--random-input-len", "8", "--random-output-len", "6",
		"--ready-check-timeout-sec", "0", "--request-id-prefix", "sp-"}, args...)...)
	if sc.ServerSpans == nil {
		t.Fatalf("the sidecar has no server_spans; stderr:\n%s", stderr)
	}
	return stderr, sc.ServerSpans, truth
}

// TestServerSpansJoinTheMockTruth: the mock exports one span per request
// with its truth log's times; every request joins by trace id, and the
// joined server TTFT and e2e equal the truth log's exactly, request by
// request, over both OTLP protocols. The phases add up to the client's
// TTFT, and the cross-side share is never negative on one host: the
// client's interval from request sent to first token holds the server's.
func TestServerSpansJoinTheMockTruth(t *testing.T) {
	for _, protocol := range []string{mock.OTLPHTTP, mock.OTLPGRPC} {
		t.Run(strings.ReplaceAll(protocol, "/", "_"), func(t *testing.T) {
			stderr, s, truth := runWithSpans(t, protocol, mock.Config{})
			if s.Joined != spanRequests || s.Unjoined != 0 || s.ByRequestID != 0 || s.Summary != "20 of 20 requests joined" {
				t.Fatalf("joined %d, unjoined %d (%d by request id), summary %q; want all 20 by trace id\n%s", s.Joined, s.Unjoined, s.ByRequestID, s.Summary, stderr)
			}
			if !strings.Contains(stderr, "Server spans (stampede): 20 of 20 requests joined") {
				t.Errorf("stderr has no join line:\n%s", stderr)
			}
			// The receiver's cost is the health line's, not a line of its own.
			if !regexp.MustCompile(`(?m)^stampede: \d+ shards, .*, span receiver [0-9.]+ (ns|µs|ms)/span, [0-9.]+ (B|kB|MB)`).MatchString(stderr) ||
				strings.Contains(stderr, "receiver busy") {
				t.Errorf("the health line lacks the span receiver's cost, or another line has it:\n%s", stderr)
			}
			if strings.Contains(stderr, "beyond loopback") || s.Receiver.Unprotected {
				t.Errorf("a receiver on 127.0.0.1 is said to listen beyond loopback:\n%s", stderr)
			}
			checkTruth(t, s, truth)
			for _, r := range s.PerRequest {
				if r.ServerQueueNs+r.PrefillNs+r.FirstTokenOutNs != r.ServerTTFTNs || r.FirstTokenOutNs < 0 {
					t.Errorf("request %d: server phases %+v do not add up to its TTFT", r.Index, r)
				}
				if sum := r.ConnectNs + r.SendNs + r.NetworkAndFrontEnd + r.ServerTTFTNs; sum != r.TTFTNs {
					t.Errorf("request %d: phases sum to %d, TTFT %d", r.Index, sum, r.TTFTNs)
				}
				if r.NetworkAndFrontEnd < 0 || r.NetworkAndFrontEnd > r.TTFTNs {
					t.Errorf("request %d: network and front end %d ns, want within [0, TTFT %d]", r.Index, r.NetworkAndFrontEnd, r.TTFTNs)
				}
			}
			if s.RejectedSpans != 0 || s.ConflictingRequests != 0 || s.Warning != "" || s.ClockOffset == nil {
				t.Errorf("the mock's own spans: %d rejected, %d conflicting, warning %q, offset %+v", s.RejectedSpans, s.ConflictingRequests, s.Warning, s.ClockOffset)
			}
			if len(s.TTFTCorrelation) != 7 || s.Slowest.Requests != 1 || len(s.Slowest.Phases) != 6 {
				t.Errorf("correlation %v, slowest %+v: want 7 phases and the one slowest request's 6", s.TTFTCorrelation, s.Slowest)
			}
		})
	}
}

// TestServerSpansAbsentExporter: with no exporter the run's results are
// its own, and the sidecar says none joined and why.
func TestServerSpansAbsentExporter(t *testing.T) {
	defer func(g time.Duration) { spanGrace = g }(spanGrace)
	spanGrace = 200 * time.Millisecond
	stderr, s, _ := runWithSpans(t, "", mock.Config{})
	if s.Joined != 0 || s.Unjoined != spanRequests || s.Summary != "0 of 20 requests joined" || !strings.Contains(s.Why, "no export") {
		t.Errorf("server_spans %+v; want 0 of 20 joined, saying no export came", s)
	}
	if !strings.Contains(stderr, "20 requests unjoined: the receiver got no export") {
		t.Errorf("stderr does not say why:\n%s", stderr)
	}
}

// TestServerSpansSlowExporter: an exporter slower than the wait after the
// run joins nothing, and the run still ends with its results.
func TestServerSpansSlowExporter(t *testing.T) {
	defer func(g time.Duration) { spanGrace = g }(spanGrace)
	spanGrace = 100 * time.Millisecond
	_, s, _ := runWithSpans(t, mock.OTLPHTTP, mock.Config{OTLPExportDelay: 3 * time.Second})
	if s.Requests != spanRequests || s.Joined+s.Unjoined != spanRequests || s.Joined == spanRequests {
		t.Errorf("server_spans %+v; want some of 20 left unjoined", s)
	}
}

// checkTruth checks that every request joined its span from the mock: the
// server TTFT and e2e the truth log gives, to the nanosecond.
func checkTruth(t *testing.T, s *report.ServerSpans, truth []mock.TruthRequest) {
	t.Helper()
	byID := map[string]mock.TruthRequest{}
	for _, r := range truth {
		byID[r.RequestID] = r
	}
	if len(s.PerRequest) != spanRequests {
		t.Fatalf("%d per-request rows, want %d", len(s.PerRequest), spanRequests)
	}
	for _, r := range s.PerRequest {
		tr, ok := byID["sp-"+strconv.Itoa(r.Index)]
		if !ok || len(tr.Tokens) == 0 {
			t.Fatalf("request %d: not in the truth log", r.Index)
		}
		ttft := tr.Tokens[0].SentNs - tr.ArrivalNs
		e2e := tr.Tokens[len(tr.Tokens)-1].SentNs - tr.ArrivalNs
		if r.ServerTTFTNs != ttft || r.ServerE2ENs != e2e {
			t.Errorf("request %d: server ttft %d e2e %d, truth log %d and %d", r.Index, r.ServerTTFTNs, r.ServerE2ENs, ttft, e2e)
		}
	}
}

// forgedExport is what a sender that read the request ids off the wire
// (x-request-id and traceparent travel in clear) can send before the run:
// a span for each of spanRequests requests, claiming a server TTFT of ttft
// and an e2e of e2e, ending now.
func forgedExport(ttft, e2e time.Duration, spanID byte) []byte {
	now := time.Now().UnixNano()
	var spans []*tracepb.Span
	for i := range spanRequests {
		tr := httpwire.TraceID("sp-" + strconv.Itoa(i))
		sec := func(d time.Duration) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: d.Seconds()}}
		}
		spans = append(spans, &tracepb.Span{TraceId: tr[:], SpanId: []byte{spanID, byte(i), 0, 0, 0, 0, 0, 1}, Name: "llm_request",
			StartTimeUnixNano: uint64(now - int64(e2e)), EndTimeUnixNano: uint64(now),
			Attributes: []*commonpb.KeyValue{{Key: "gen_ai.latency.time_to_first_token", Value: sec(ttft)},
				{Key: "gen_ai.latency.e2e", Value: sec(e2e)}, {Key: "gen_ai.latency.time_in_queue", Value: sec(ttft / 2)}}})
	}
	b, _ := proto.Marshal(&collectortrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}})
	return b
}

// forgeOnListen makes the receiver, as soon as it listens, get the
// exports: the forger is first, before a single request is sent. It
// returns the HTTP statuses they were answered.
func forgeOnListen(t *testing.T, exports ...[]byte) *[]int {
	t.Helper()
	codes := new([]int)
	spansListening = func(addr string) {
		for _, body := range exports {
			resp, err := http.Post("http://"+addr+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
			if err != nil {
				t.Errorf("forged export: %v", err)
				continue
			}
			resp.Body.Close()
			*codes = append(*codes, resp.StatusCode)
		}
	}
	t.Cleanup(func() { spansListening = nil })
	return codes
}

// TestServerSpansForgedBeforeTheRun: a sender that knows the request ids
// posts a span for each before the run, some claiming a server TTFT of
// 9.5 s, some a plausible 1 ms; the real spans still join every request
// with the truth log's times, the forgeries are rejected (they claim more
// than the client saw, or came before the requests were sent), and the
// run says so.
func TestServerSpansForgedBeforeTheRun(t *testing.T) {
	forgeOnListen(t, forgedExport(9500*time.Millisecond, 10*time.Second, 0xf0), forgedExport(time.Millisecond, 2*time.Millisecond, 0xf1))
	stderr, s, truth := runWithSpans(t, mock.OTLPGRPC, mock.Config{})
	if s.Joined != spanRequests || s.RejectedSpans != 2*spanRequests || s.ConflictingRequests != 0 {
		t.Fatalf("joined %d, rejected %d, conflicting %d: want every request joined to its real span and the %d forgeries rejected\n%s",
			s.Joined, s.RejectedSpans, s.ConflictingRequests, 2*spanRequests, stderr)
	}
	checkTruth(t, s, truth)
	if mean := s.Phases.ServerTTFT.MeanMs; mean > 1000 {
		t.Errorf("server TTFT mean %.0f ms: the forged 9,500 ms got in", mean)
	}
	if !strings.Contains(stderr, "Server spans: warning: 40 spans did not fit their requests' times on the client") ||
		!strings.Contains(stderr, "--otlp-receiver-token") {
		t.Errorf("stderr does not warn of the forgeries:\n%s", stderr)
	}
}

// TestServerSpansToken: with --otlp-receiver-token the mock's exporter,
// given the header in $OTEL_EXPORTER_OTLP_HEADERS as vLLM's would be,
// joins every request over both protocols, while a forger without it is
// refused before its spans are read; without the header in the exporter's
// environment nothing joins, and the reason says why.
func TestServerSpansToken(t *testing.T) {
	for _, protocol := range []string{mock.OTLPHTTP, mock.OTLPGRPC} {
		t.Run(strings.ReplaceAll(protocol, "/", "_"), func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret")
			codes := forgeOnListen(t, forgedExport(9500*time.Millisecond, 10*time.Second, 0xf0))
			stderr, s, truth := runWithSpans(t, protocol, mock.Config{}, "--otlp-receiver-token", "s3cret")
			if s.Joined != spanRequests || s.Receiver.Unauthenticated != 1 || s.RejectedSpans != 0 || !s.Receiver.TokenRequired {
				t.Fatalf("joined %d, unauthenticated %d, rejected %d, token %v\n%s", s.Joined, s.Receiver.Unauthenticated, s.RejectedSpans, s.Receiver.TokenRequired, stderr)
			}
			if len(*codes) != 1 || (*codes)[0] != http.StatusUnauthorized {
				t.Errorf("the forger was answered %v, want 401", *codes)
			}
			checkTruth(t, s, truth)
		})
	}
	t.Run("exporter_without_it", func(t *testing.T) {
		defer func(g time.Duration) { spanGrace = g }(spanGrace)
		spanGrace = 500 * time.Millisecond
		_, s, _ := runWithSpans(t, mock.OTLPGRPC, mock.Config{}, "--otlp-receiver-token", "s3cret")
		if s.Joined != 0 || s.Receiver.Unauthenticated == 0 || !strings.Contains(s.Why, "without the receiver's token") {
			t.Errorf("joined %d, unauthenticated %d, why %q", s.Joined, s.Receiver.Unauthenticated, s.Why)
		}
	})
}
