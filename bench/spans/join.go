package spans

import (
	"fmt"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/metrics"
)

// Run is the client's side of a run, as the join reads it.
type Run struct {
	// Results are the run's requests; RequestIDs[i] is the x-request-id
	// of the dataset's request i (results carry their index).
	Results    []metrics.RequestResult
	RequestIDs []string
	// Start is the run's time 0 (engine.Result.Start): its wall clock
	// places the client's times against the spans', its monotonic reading
	// against the receiver's.
	Start time.Time
}

// Matcher finds the request a span is for, and whether the span could be
// the server's (fit.go). Finish asks it, through Enough, whether every
// request has a span; Join then joins.
type Matcher struct {
	run      Run
	byTrace  map[[16]byte]int
	byID     map[string]int
	requests int
	// receivedNs turns a Span.ReceivedNs into the client's run time.
	receivedNs int64
	// Enough's progress: spans looked at, requests with a span that fits.
	seen     int
	covered  []bool
	nCovered int
}

// NewMatcher indexes run's successful requests that went out with an id,
// by trace id (httpwire.TraceID of the id, which the request's
// traceparent carried) and by id; receiverStarted is Receiver.Started.
func NewMatcher(run Run, receiverStarted time.Time) *Matcher {
	m := &Matcher{run: run, byTrace: make(map[[16]byte]int, len(run.Results)), byID: make(map[string]int, len(run.Results)),
		receivedNs: int64(receiverStarted.Sub(run.Start)), covered: make([]bool, len(run.Results))}
	for i := range run.Results {
		r := &run.Results[i]
		if !r.Success || r.Index >= len(run.RequestIDs) || run.RequestIDs[r.Index] == "" {
			continue
		}
		m.requests++
		id := run.RequestIDs[r.Index]
		m.byTrace[httpwire.TraceID(id)] = i
		m.byID[id] = i
	}
	return m
}

// Enough reports whether every request has a span that fits its times so
// far (checks 1-4 of fit.go); kept grows between calls.
func (m *Matcher) Enough(kept []Span) bool {
	for ; m.seen < len(kept); m.seen++ {
		s := &kept[m.seen]
		i, _, ok := m.match(s)
		if ok && !m.covered[i] && fitsClient(s, m.window(i), s.ReceivedNs+m.receivedNs) == fitted {
			m.covered[i] = true
			m.nCovered++
		}
	}
	return m.nCovered >= m.requests
}

// match is the index in Results of the request s is for: by trace id,
// else by the gen_ai.request.id it carries (viaID).
func (m *Matcher) match(s *Span) (i int, viaID, ok bool) {
	if i, ok := m.byTrace[s.TraceID]; ok {
		return i, false, true
	}
	i, ok = lookupRequestID(m.byID, s.RequestID)
	return i, ok, ok
}

// window is result i's window on the client's run clock (fit.go).
func (m *Matcher) window(i int) window {
	r := &m.run.Results[i]
	send := r.StartNs
	if r.Breakdown.Known {
		send += r.Breakdown.ConnectNs + r.Breakdown.TLSNs
	}
	first := r.StartNs + r.TTFTNs
	return window{sendNs: send, firstNs: first, lastNs: max(r.StartNs+r.LatencyNs, first)}
}

// id is result i's request id.
func (m *Matcher) id(i int) string { return m.run.RequestIDs[m.run.Results[i].Index] }

// candidate is a span that fitted its request so far.
type candidate struct {
	span  *Span
	viaID bool
}

// Join matches c's spans to m's requests, sets aside those that do not
// fit the client's times (fit.go) and the requests two different spans
// fit, and joins each other request with its one span. A copy of a span
// received again is counted as a duplicate; a span that matches nothing
// as unmatched.
func Join(m *Matcher, c Collected, addr string, percentiles []float64, detailed bool) *report.ServerSpans {
	m.receivedNs = int64(c.Started.Sub(m.run.Start))
	startUnixNs := m.run.Start.UnixNano()
	var counts report.SpanJoinCounts
	var rejected [rejections]report.SpanRejection
	reject := func(why rejection, example string) {
		r := &rejected[why]
		if r.Spans == 0 {
			r.Example = example
		}
		r.Spans++
	}
	seen := make([][]*Span, len(m.run.Results))
	fitting := make([][]candidate, len(m.run.Results))
	for k := range c.Spans {
		s := &c.Spans[k]
		i, viaID, ok := m.match(s)
		if !ok {
			counts.Unmatched++
			continue
		}
		if isCopy(seen[i], s) {
			counts.Duplicates++
			continue
		}
		seen[i] = append(seen[i], s)
		w, received := m.window(i), s.ReceivedNs+m.receivedNs
		if why := fitsClient(s, w, received); why != fitted {
			reject(why, rejectionExample(why, m.id(i), s, w, received))
			continue
		}
		fitting[i] = append(fitting[i], candidate{s, viaID})
	}
	// Check 5: the clock offset the requests with one span show, then
	// every span against it.
	var ranges [][2]int64
	var first, last int64
	some := false
	for i, cs := range fitting {
		if len(cs) == 0 {
			continue
		}
		w := m.window(i)
		if !some {
			first, last, some = w.sendNs, w.lastNs, true
		}
		first, last = min(first, w.sendNs), max(last, w.lastNs)
		if len(cs) == 1 {
			lo, hi := offsetRange(cs[0].span, w, startUnixNs)
			ranges = append(ranges, [2]int64{lo, hi})
		}
	}
	tol := toleranceNs + (last-first)/1_000_000*rateTolerancePPM
	if theta, ok := sharedOffset(ranges, tol); ok {
		counts.ClockOffset = &report.SpanClockOffset{ServerMinusClientMs: float64(theta) / 1e6, ToleranceMs: float64(tol) / 1e6, FromRequests: len(ranges)}
		for i, cs := range fitting {
			kept := cs[:0]
			for _, cd := range cs {
				lo, hi := offsetRange(cd.span, m.window(i), startUnixNs)
				if theta < lo-tol || theta > hi+tol {
					reject(rejectOffset, fmt.Sprintf("request %s: its span fits the client's window at an offset from %s to %s, the others' is %s ± %s",
						m.id(i), signed(lo), signed(hi), signed(theta), durationText(tol)))
					continue
				}
				kept = append(kept, cd)
			}
			fitting[i] = kept
		}
	}
	joined := make([]report.ServerSpanRequest, 0, m.requests)
	for i, cs := range fitting {
		switch len(cs) {
		case 0:
		case 1:
			joined = append(joined, phases(&m.run.Results[i], cs[0].span))
			if cs[0].viaID {
				counts.ByRequestID++
			}
		default:
			counts.ConflictingRequests++
			counts.ConflictingSpans += len(cs)
		}
	}
	for why := rejection(1); why < rejections; why++ {
		if r := rejected[why]; r.Spans > 0 {
			r.Reason = rejectionReason[why]
			counts.Rejections = append(counts.Rejections, r)
		}
	}
	return report.NewServerSpans(m.requests, joined, receiverSection(c, addr), counts, percentiles, detailed)
}

// isCopy reports whether s is a copy of one of spans.
func isCopy(spans []*Span, s *Span) bool {
	for _, t := range spans {
		if sameSpan(t, s) {
			return true
		}
	}
	return false
}

// signed is an offset with its sign.
func signed(ns int64) string {
	if ns >= 0 {
		return "+" + durationText(ns)
	}
	return durationText(ns)
}

// receiverSection is the sidecar's account of the receiver.
func receiverSection(c Collected, addr string) report.ServerSpansReceiver {
	cnt := &c.Counts
	cc := &cnt.Conns
	return report.ServerSpansReceiver{
		Address: addr, Exports: cnt.Exports, Refused: cnt.Refused(), Malformed: cnt.Malformed, Unauthenticated: cnt.Unauthenticated,
		TooLarge: cnt.TooLarge, Busy: cnt.Busy, TimedOut: cnt.TimedOut, Spans: cnt.Spans, Other: cnt.Other, Dropped: cnt.Dropped,
		BusyS: float64(cnt.BusyNs) / 1e9, WaitedS: c.Waited.Seconds(), HeldBytes: cnt.HeldBytes,
		MaxBodyBytes: c.limits.maxBodyBytes, MaxExportSpans: c.limits.maxExportSpans,
		TokenRequired: c.TokenRequired, Unprotected: c.Unprotected,
		Connections: report.ServerSpansConnections{
			Accepted: cc.Accepted, Cap: c.limits.maxConns, RefusedAtCap: cc.AtCap, Evicted: cc.Evicted, NoRequest: cc.NoRequest,
			HeaderTimeoutS: c.limits.headerTimeout.Seconds(), AcceptErrors: cc.AcceptErrors, OpenFiles: cc.OpenFiles,
			OpenFilesLimit: cc.OpenFilesLimit, AcceptError: cc.AcceptError,
		},
	}
}

// vLLM's OpenAI server names a request "cmpl-<x-request-id>" or
// "chatcmpl-<x-request-id>", and a prompt of a batch "<id>-<n>".
var requestIDPrefixes = []string{"chatcmpl-", "cmpl-", "embd-", "resp_", "rerank-", "pool-"}

// lookupRequestID finds the request a server's gen_ai.request.id names:
// the id itself, or with vLLM's prefix or a batch suffix taken off.
func lookupRequestID(byID map[string]int, id string) (int, bool) {
	if id == "" {
		return 0, false
	}
	if i, ok := byID[id]; ok {
		return i, true
	}
	for _, p := range requestIDPrefixes {
		if rest, ok := strings.CutPrefix(id, p); ok {
			if i, ok := byID[rest]; ok {
				return i, true
			}
			if j := strings.LastIndexByte(rest, '-'); j > 0 {
				if i, ok := byID[rest[:j]]; ok {
					return i, true
				}
			}
		}
	}
	return 0, false
}

// phases is the path of request r's TTFT with its server span s. The
// client's phases are its own stamps (connect holds a TLS handshake); the
// server's are the span's, with first_token_out = server TTFT − queue −
// prefill on the server's clock; network_and_front_end is the client's
// send-to-first-token minus the server's TTFT, the one difference across
// the sides, so the phases sum to the client's TTFT. A span without a
// TTFT leaves the server's phases 0 and the whole server time in
// network_and_front_end.
func phases(r *metrics.RequestResult, s *Span) report.ServerSpanRequest {
	b := r.Breakdown
	out := report.ServerSpanRequest{
		Index: r.Index, QueueWaitNs: r.QueueNs, ConnectNs: b.ConnectNs + b.TLSNs, SendNs: b.SendNs,
		TTFTNs: r.TTFTNs, ServerTTFTNs: s.TTFTNs, ServerE2ENs: s.E2ENs,
	}
	clientToFirst := r.TTFTNs - out.ConnectNs - out.SendNs
	if !b.Known {
		// Without the client's stamps the whole TTFT is the time from
		// start to first token.
		out.ConnectNs, out.SendNs, clientToFirst = 0, 0, r.TTFTNs
	}
	if s.TTFTNs < 0 {
		out.NetworkAndFrontEnd = clientToFirst
		return out
	}
	out.ServerQueueNs = max(s.QueueNs, 0)
	out.PrefillNs = max(s.PrefillNs, 0)
	out.FirstTokenOutNs = s.TTFTNs - out.ServerQueueNs - out.PrefillNs
	out.NetworkAndFrontEnd = clientToFirst - s.TTFTNs
	return out
}
