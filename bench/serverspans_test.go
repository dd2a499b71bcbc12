package bench

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
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
