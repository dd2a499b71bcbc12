package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/metrics"
)

// ServerSpans is the sidecar's server_spans section: --otlp-receiver's
// join of the server's trace spans to the requests, and where each
// joined request's TTFT went, from the client's queue to the server's
// first token.
//
// The client's and the server's clocks are never assumed to agree. The
// server's phases come from the server's span alone (server_queue,
// prefill, server_ttft, and first_token_out = server_ttft − server_queue −
// prefill); the client's from its own stamps (queue_wait, connect, send);
// and one figure crosses the sides, network_and_front_end: the client's
// time from request sent to first token minus the server's TTFT, a
// difference of two durations (never of two instants), which holds both
// network directions and the server's HTTP front end. From connect on,
// the phases add up to the client's TTFT for each request; queue_wait,
// the client's own queue, comes before TTFT's start, as in Python.
type ServerSpans struct {
	// Requests is how many successful requests went out with trace
	// context; Joined how many of them a span was found for, Unjoined the
	// rest. Summary says it in words ("9,987 of 10,000 requests joined"),
	// Why, when some did not join, what the receiver saw instead.
	Requests int    `json:"requests"`
	Joined   int    `json:"joined"`
	Unjoined int    `json:"unjoined"`
	Summary  string `json:"summary"`
	Why      string `json:"why,omitempty"`
	// ByRequestID is how many of Joined matched by gen_ai.request.id
	// rather than trace id; UnmatchedSpans the spans that matched no
	// request, DuplicateSpans the copies of a span received again (an
	// exporter's retry).
	ByRequestID    int `json:"joined_by_request_id"`
	UnmatchedSpans int `json:"unmatched_spans"`
	DuplicateSpans int `json:"duplicate_spans"`
	// RejectedSpans are the spans that did not fit their request's times
	// on the client, set aside; Rejections says why, by reason.
	// ConflictingRequests are the requests two or more different spans
	// fitted (ConflictingSpans of them), joined to none.
	RejectedSpans       int             `json:"rejected_spans"`
	Rejections          []SpanRejection `json:"rejections,omitempty"`
	ConflictingRequests int             `json:"conflicting_requests"`
	ConflictingSpans    int             `json:"conflicting_spans"`
	// ClockOffset is the server's clock against the client's as the
	// spans' times place it; absent when no request had a single span.
	ClockOffset *SpanClockOffset `json:"clock_offset,omitempty"`
	// Warning, when spans were rejected or conflicted, says so and what
	// to do.
	Warning  string              `json:"warning,omitempty"`
	Receiver ServerSpansReceiver `json:"receiver"`
	// Phases summarises each phase over the joined requests.
	Phases ServerSpanPhases `json:"phases"`
	// TTFTCorrelation is, per phase, Pearson's r of the phase with TTFT
	// across the joined requests: which phase grew when TTFT grew. 0 when
	// the phase did not vary.
	TTFTCorrelation []PhaseCorrelation `json:"ttft_correlation"`
	// Slowest is where the slowest 1 % of joined requests by TTFT (at
	// least one) spent it: each phase's mean and share of their mean TTFT.
	Slowest SlowestShare `json:"slowest_1pct"`
	// PerRequest is every joined request's phases, with --save-detailed,
	// in request order.
	PerRequest []ServerSpanRequest `json:"per_request,omitempty"`
}

// SpanRejection is one reason spans were rejected: how many, and the
// first of them (its request and the figures that did not fit).
type SpanRejection struct {
	Reason  string `json:"reason"`
	Spans   int    `json:"spans"`
	Example string `json:"example"`
}

// SpanClockOffset is the server's clock minus the client's, in
// milliseconds, as the spans of the requests that had one span place it
// (FromRequests of them), and the tolerance within which every span's
// times had to agree with it (docs/server-spans.md, "Which spans count").
type SpanClockOffset struct {
	ServerMinusClientMs float64 `json:"server_minus_client_ms"`
	ToleranceMs         float64 `json:"tolerance_ms"`
	FromRequests        int     `json:"from_requests"`
}

// SpanJoinCounts are the join's counts beside the joined requests.
type SpanJoinCounts struct {
	ByRequestID, Unmatched, Duplicates    int
	Rejections                            []SpanRejection
	ConflictingRequests, ConflictingSpans int
	ClockOffset                           *SpanClockOffset
}

// ServerSpansReceiver is what the receiver saw: exports decoded and
// refused (by why), request spans received, other spans, spans past its
// bound, its connections, its busy time, and how long it waited after the
// run for late spans.
type ServerSpansReceiver struct {
	Address string `json:"address"`
	Exports int64  `json:"exports"`
	// Refused is every export refused; Malformed, Unauthenticated,
	// TooLarge, Busy and TimedOut split it by why.
	Refused         int64   `json:"refused"`
	Malformed       int64   `json:"malformed"`
	Unauthenticated int64   `json:"unauthenticated"`
	TooLarge        int64   `json:"too_large"`
	Busy            int64   `json:"busy"`
	TimedOut        int64   `json:"timed_out"`
	Spans           int64   `json:"spans"`
	Other           int64   `json:"other_spans"`
	Dropped         int64   `json:"dropped"`
	BusyS           float64 `json:"busy_s"`
	// BusyPerSpanUs is BusyS per span received, in microseconds.
	BusyPerSpanUs float64 `json:"busy_per_span_us"`
	// HeldBytes is the memory the kept spans held.
	HeldBytes int64   `json:"held_bytes"`
	WaitedS   float64 `json:"waited_after_run_s"`
	// MaxBodyBytes and MaxExportSpans are the limits of one export.
	MaxBodyBytes   int `json:"max_body_bytes"`
	MaxExportSpans int `json:"max_export_spans"`
	// TokenRequired: exports had to carry --otlp-receiver-token's header.
	// Unprotected: the receiver listened beyond loopback without one.
	TokenRequired bool                   `json:"token_required"`
	Unprotected   bool                   `json:"unprotected"`
	Connections   ServerSpansConnections `json:"connections"`
}

// ServerSpansConnections is the receiver's account of its connections.
type ServerSpansConnections struct {
	Accepted int64 `json:"accepted"`
	// Cap is the most it keeps open; RefusedAtCap were closed at once,
	// every open one busy with an export; Evicted were waiting without
	// one and closed to make room.
	Cap          int   `json:"cap"`
	RefusedAtCap int64 `json:"refused_at_cap"`
	Evicted      int64 `json:"evicted"`
	// NoRequest were closed at the header deadline (HeaderTimeoutS)
	// without having sent a request.
	NoRequest      int64   `json:"closed_without_request"`
	HeaderTimeoutS float64 `json:"header_timeout_s"`
	// AcceptErrors are the accepts that failed, OpenFiles of them for the
	// open-files limit (OpenFilesLimit); AcceptError the last error.
	AcceptErrors   int64  `json:"accept_errors"`
	OpenFiles      int64  `json:"accept_errors_open_files"`
	OpenFilesLimit uint64 `json:"open_files_limit,omitempty"`
	AcceptError    string `json:"accept_error,omitempty"`
}

// ServerSpanPhases holds one summary per phase, in the order of the
// request's path.
type ServerSpanPhases struct {
	QueueWait          SidecarStats `json:"queue_wait"`
	Connect            SidecarStats `json:"connect"`
	Send               SidecarStats `json:"send"`
	NetworkAndFrontEnd SidecarStats `json:"network_and_front_end"`
	ServerQueue        SidecarStats `json:"server_queue"`
	Prefill            SidecarStats `json:"prefill"`
	FirstTokenOut      SidecarStats `json:"first_token_out"`
	TTFT               SidecarStats `json:"ttft"`
	ServerTTFT         SidecarStats `json:"server_ttft"`
	ServerE2E          SidecarStats `json:"server_e2e"`
}

// ServerSpanRequest is one joined request in nanoseconds: the client's
// phases (connect includes a TLS handshake), the cross-side
// network_and_front_end, the server's phases, and the server's own TTFT
// and end-to-end latency (-1 when the span did not carry them).
type ServerSpanRequest struct {
	Index              int   `json:"index"`
	QueueWaitNs        int64 `json:"queue_wait_ns"`
	ConnectNs          int64 `json:"connect_ns"`
	SendNs             int64 `json:"send_ns"`
	NetworkAndFrontEnd int64 `json:"network_and_front_end_ns"`
	ServerQueueNs      int64 `json:"server_queue_ns"`
	PrefillNs          int64 `json:"prefill_ns"`
	FirstTokenOutNs    int64 `json:"first_token_out_ns"`
	TTFTNs             int64 `json:"ttft_ns"`
	ServerTTFTNs       int64 `json:"server_ttft_ns"`
	ServerE2ENs        int64 `json:"server_e2e_ns"`
}

// PhaseCorrelation is one phase's Pearson r with TTFT.
type PhaseCorrelation struct {
	Phase string  `json:"phase"`
	R     float64 `json:"r"`
}

// SlowestShare is the slowest requests' phases: their count, mean TTFT,
// and each phase's mean and share of that mean.
type SlowestShare struct {
	Requests   int          `json:"requests"`
	MeanTTFTMs float64      `json:"mean_ttft_ms"`
	Phases     []PhaseShare `json:"phases"`
}

// PhaseShare is one phase's mean among the slowest and its share of their
// mean TTFT (0..1).
type PhaseShare struct {
	Phase  string  `json:"phase"`
	MeanMs float64 `json:"mean_ms"`
	Share  float64 `json:"share"`
}

// phase names one per-request figure.
type phase struct {
	name string
	of   func(*ServerSpanRequest) int64
}

var queueWait = phase{"queue_wait", func(r *ServerSpanRequest) int64 { return r.QueueWaitNs }}

// stackedPhases are the phases that add up to TTFT, in path order, by the
// names the correlation, the slowest table and the chart use.
var stackedPhases = []phase{
	{"connect", func(r *ServerSpanRequest) int64 { return r.ConnectNs }},
	{"send", func(r *ServerSpanRequest) int64 { return r.SendNs }},
	{"network_and_front_end", func(r *ServerSpanRequest) int64 { return r.NetworkAndFrontEnd }},
	{"server_queue", func(r *ServerSpanRequest) int64 { return r.ServerQueueNs }},
	{"prefill", func(r *ServerSpanRequest) int64 { return r.PrefillNs }},
	{"first_token_out", func(r *ServerSpanRequest) int64 { return r.FirstTokenOutNs }},
}

// NewServerSpans is the section for requests successful requests sent
// with trace context, of which joined (in request order) were joined;
// percentiles follow --metric-percentiles; detailed keeps every joined
// request.
func NewServerSpans(requests int, joined []ServerSpanRequest, recv ServerSpansReceiver, counts SpanJoinCounts, percentiles []float64, detailed bool) *ServerSpans {
	s := &ServerSpans{
		Requests: requests, Joined: len(joined), Unjoined: requests - len(joined),
		ByRequestID: counts.ByRequestID, UnmatchedSpans: counts.Unmatched, DuplicateSpans: counts.Duplicates,
		Rejections: counts.Rejections, ConflictingRequests: counts.ConflictingRequests, ConflictingSpans: counts.ConflictingSpans,
		ClockOffset: counts.ClockOffset,
		Receiver:    recv, TTFTCorrelation: []PhaseCorrelation{}, Slowest: SlowestShare{Phases: []PhaseShare{}},
	}
	for _, r := range counts.Rejections {
		s.RejectedSpans += r.Spans
	}
	s.Summary = fmt.Sprintf("%s of %s requests joined", thousands(len(joined)), thousands(requests))
	s.Why = unjoinedWhy(s)
	s.Warning = spansWarning(s)
	if recv.Spans > 0 {
		s.Receiver.BusyPerSpanUs = recv.BusyS * 1e6 / float64(recv.Spans)
	}
	// column summarises one phase; the server's own TTFT and e2e skip
	// the spans that lacked them (-1), the stacked phases keep every row
	// (network_and_front_end may be negative when the two sides disagree).
	column := func(of func(*ServerSpanRequest) int64) SidecarStats {
		sec := make([]float64, 0, len(joined))
		for i := range joined {
			if v := of(&joined[i]); v != -1 {
				sec = append(sec, float64(v)/1e9)
			}
		}
		if len(sec) == 0 {
			return SidecarStats{Percentiles: []SidecarPercentile{}}
		}
		return sidecarStats(metrics.Summarize(sec, percentiles))
	}
	p := &s.Phases
	p.QueueWait = column(queueWait.of)
	p.Connect = column(stackedPhases[0].of)
	p.Send = column(stackedPhases[1].of)
	p.NetworkAndFrontEnd = column(stackedPhases[2].of)
	p.ServerQueue = column(stackedPhases[3].of)
	p.Prefill = column(stackedPhases[4].of)
	p.FirstTokenOut = column(stackedPhases[5].of)
	p.TTFT = column(func(r *ServerSpanRequest) int64 { return r.TTFTNs })
	p.ServerTTFT = column(func(r *ServerSpanRequest) int64 { return r.ServerTTFTNs })
	p.ServerE2E = column(func(r *ServerSpanRequest) int64 { return r.ServerE2ENs })
	if len(joined) == 0 {
		return s
	}
	for _, ph := range append([]phase{queueWait}, stackedPhases...) {
		s.TTFTCorrelation = append(s.TTFTCorrelation, PhaseCorrelation{Phase: ph.name, R: pearson(joined, ph.of)})
	}
	s.Slowest = slowest(joined)
	if detailed {
		s.PerRequest = joined
	}
	return s
}

// unjoinedWhy says what the receiver saw when requests went unjoined:
// with no export taken, what kept the exports out (receiverTrouble);
// else what became of the spans, then any trouble the receiver had.
func unjoinedWhy(s *ServerSpans) string {
	r := s.Receiver
	if s.Unjoined == 0 {
		return ""
	}
	trouble := receiverTrouble(&r)
	if r.Exports == 0 {
		if len(trouble) > 0 {
			return "the receiver got no export: " + strings.Join(trouble, "; ")
		}
		none := ""
		if r.Connections.Accepted == 0 {
			none = " (no connection came)"
		}
		return "the receiver got no export" + none + ": is the server's exporter pointed at " + r.Address + " (vLLM: --otlp-traces-endpoint), and did it flush within the wait after the run?"
	}
	var causes []string
	switch {
	case r.Spans == 0:
		causes = append(causes, fmt.Sprintf("the exports held %d spans, none with a request's latency attributes (gen_ai.latency.*)", r.Other))
	case r.Dropped > 0:
		causes = append(causes, fmt.Sprintf("%d spans came past the receiver's bound and were not kept", r.Dropped))
	}
	if s.ConflictingRequests > 0 {
		causes = append(causes, fmt.Sprintf("%d requests had two or more different spans that each fitted, and were joined to none", s.ConflictingRequests))
	}
	if s.RejectedSpans > 0 {
		causes = append(causes, fmt.Sprintf("%d spans did not fit their requests' times on the client", s.RejectedSpans))
	}
	if s.UnmatchedSpans > 0 {
		causes = append(causes, fmt.Sprintf("%d spans matched no request by trace id or gen_ai.request.id: does the server take its trace context from the traceparent header?", s.UnmatchedSpans))
	}
	causes = append(causes, trouble...)
	if len(causes) == 0 {
		return "the server exported no span for them within the wait after the run"
	}
	return strings.Join(causes, "; ")
}

// receiverTrouble is what kept connections or exports out of the
// receiver, most fundamental first.
func receiverTrouble(r *ServerSpansReceiver) []string {
	c := &r.Connections
	var out []string
	if c.OpenFiles > 0 {
		limit := ""
		if c.OpenFilesLimit > 0 {
			limit = fmt.Sprintf(" of %s", thousands(int(c.OpenFilesLimit)))
		}
		out = append(out, fmt.Sprintf("accepting a connection failed %d times for the process's open-files limit%s (ulimit -n): the run's own connections held its file descriptors; raise the limit or run fewer streams", c.OpenFiles, limit))
	}
	if n := c.AcceptErrors - c.OpenFiles; n > 0 {
		out = append(out, fmt.Sprintf("accepting a connection failed %d times (%s)", n, c.AcceptError))
	}
	if c.RefusedAtCap > 0 {
		out = append(out, fmt.Sprintf("%d connections were turned away at the receiver's cap of %d open connections, every one busy with an export", c.RefusedAtCap, c.Cap))
	}
	if c.NoRequest > 0 {
		out = append(out, fmt.Sprintf("%d connections were held open without a request until the %s header deadline", c.NoRequest, durationText(time.Duration(c.HeaderTimeoutS*1e9))))
	}
	if c.Evicted > 0 {
		out = append(out, fmt.Sprintf("%d connections waiting without an export were closed to make room (%d open at most)", c.Evicted, c.Cap))
	}
	if r.Unauthenticated > 0 {
		out = append(out, fmt.Sprintf("%d exports came without the receiver's token (--otlp-receiver-token): give the server's exporter the header, e.g. OTEL_EXPORTER_OTLP_HEADERS=\"authorization=Bearer <token>\"", r.Unauthenticated))
	}
	if r.Busy > 0 {
		out = append(out, fmt.Sprintf("%d exports were told to try again, the receiver busy with others", r.Busy))
	}
	if r.TimedOut > 0 {
		out = append(out, fmt.Sprintf("%d exports' bodies did not arrive before the read deadline", r.TimedOut))
	}
	if r.TooLarge > 0 {
		out = append(out, fmt.Sprintf("%d exports were over the receiver's limits (%s bytes a body, %s spans an export)", r.TooLarge, thousands(r.MaxBodyBytes), thousands(r.MaxExportSpans)))
	}
	if r.Malformed > 0 {
		out = append(out, fmt.Sprintf("%d exports were refused: not OTLP protobuf over gRPC or POST /v1/traces", r.Malformed))
	}
	return out
}

// spansWarning says when spans were rejected or conflicted: someone other
// than the server may be sending spans, and they were kept out of the
// breakdown.
func spansWarning(s *ServerSpans) string {
	if s.RejectedSpans == 0 && s.ConflictingRequests == 0 {
		return ""
	}
	var parts []string
	if s.RejectedSpans > 0 {
		var why []string
		for _, r := range s.Rejections {
			why = append(why, fmt.Sprintf("%d %s", r.Spans, r.Reason))
		}
		parts = append(parts, fmt.Sprintf("%d spans did not fit their requests' times on the client and were set aside (%s; first: %s)",
			s.RejectedSpans, strings.Join(why, ", "), s.Rejections[0].Example))
	}
	if s.ConflictingRequests > 0 {
		parts = append(parts, fmt.Sprintf("%d requests had two or more different spans that each fitted (%d spans) and were joined to none", s.ConflictingRequests, s.ConflictingSpans))
	}
	advice := "another sender may be posting spans to " + s.Receiver.Address + ": --otlp-receiver-token makes the receiver take only the exports that carry the server's token"
	if s.Receiver.TokenRequired {
		advice = "the exports carried the receiver's token: is the server's clock stepping, or does something else that holds the token export spans for these requests?"
	}
	return strings.Join(parts, "; ") + "; " + advice
}

// pearson is r of of(x) with TTFT over rows: Σ(x−x̄)(t−t̄) / √(Σ(x−x̄)² Σ(t−t̄)²),
// 0 when either does not vary.
func pearson(rows []ServerSpanRequest, of func(*ServerSpanRequest) int64) float64 {
	n := float64(len(rows))
	var mx, mt float64
	for i := range rows {
		mx += float64(of(&rows[i]))
		mt += float64(rows[i].TTFTNs)
	}
	mx, mt = mx/n, mt/n
	var sxt, sxx, stt float64
	for i := range rows {
		dx, dt := float64(of(&rows[i]))-mx, float64(rows[i].TTFTNs)-mt
		sxt += dx * dt
		sxx += dx * dx
		stt += dt * dt
	}
	if sxx == 0 || stt == 0 {
		return 0
	}
	return sxt / math.Sqrt(sxx*stt)
}

// slowest is the phases of the slowest 1 % of rows by TTFT, at least one.
func slowest(rows []ServerSpanRequest) SlowestShare {
	sorted := slices.Clone(rows)
	slices.SortStableFunc(sorted, func(a, b ServerSpanRequest) int { return cmp.Compare(b.TTFTNs, a.TTFTNs) })
	top := sorted[:max(1, len(sorted)/100)]
	var ttft float64
	for i := range top {
		ttft += float64(top[i].TTFTNs)
	}
	ttft /= float64(len(top))
	out := SlowestShare{Requests: len(top), MeanTTFTMs: ttft / 1e6}
	for _, ph := range stackedPhases {
		var sum float64
		for i := range top {
			sum += float64(ph.of(&top[i]))
		}
		mean := sum / float64(len(top))
		sh := PhaseShare{Phase: ph.name, MeanMs: mean / 1e6}
		if ttft > 0 {
			sh.Share = mean / ttft
		}
		out.Phases = append(out.Phases, sh)
	}
	return out
}

// thousands is n with commas every three digits, as the summary reads.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// WriteSpansLine is the --otlp-receiver join's line on stderr, after the
// health line, which holds the receiver's own cost (WriteHealth).
func WriteSpansLine(w io.Writer, s *ServerSpans) {
	if s == nil {
		return
	}
	rc := s.Receiver
	set := ""
	if s.RejectedSpans > 0 || s.ConflictingRequests > 0 {
		set = fmt.Sprintf(", %d rejected, %d requests conflicting", s.RejectedSpans, s.ConflictingRequests)
	}
	fmt.Fprintf(w, "Server spans (stampede): %s; %d spans in %d exports (%d refused, %d past the bound%s), waited %.1f s after the run\n",
		s.Summary, rc.Spans, rc.Exports, rc.Refused, rc.Dropped, set, rc.WaitedS)
	if s.Warning != "" {
		fmt.Fprintf(w, "Server spans: warning: %s\n", s.Warning)
	}
	if s.Why != "" {
		fmt.Fprintf(w, "Server spans: %d requests unjoined: %s\n", s.Unjoined, s.Why)
	}
}
