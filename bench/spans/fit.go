package spans

import (
	"fmt"
	"slices"
	"time"
)

// Which spans count. A span claims to be the server's account of one
// request, and anyone who can reach the receiver can send one: the request
// ids travel in clear (x-request-id, traceparent). So a span is accepted
// for a request only when it could be the server's, given what the client
// itself saw of that request; the rest are rejected, counted by reason.
//
// The client's window of request i is, on the client's clock, from the
// moment it began to send (its start, plus connect and TLS on a new
// connection: the loop learns of these after they happen, so the window
// only widens) to its last token event (a kernel receive stamp, or a
// clock read after it): the server cannot have had the request before it
// was sent, nor finished it after its last token arrived. Every check
// below compares durations measured on one clock each, except the last,
// which places the server's instants with the offset between the clocks
// that the spans themselves show:
//
//  1. the span has a start and an end, the end not before the start;
//  2. server TTFT ≤ the client's send → first token, server e2e and the
//     span's length ≤ the client's send → last token;
//  3. the server's own phases fit its own TTFT and e2e (queue + prefill ≤
//     TTFT; TTFT, decode, inference ≤ e2e);
//  4. its export reached the receiver no sooner than the client's send
//     plus the span's length: the server exports a request once it ends;
//  5. its interval [start, end] lies within the client's window shifted by
//     θ, the server's clock minus the client's. Each span of a request
//     that has one span after checks 1-4 allows the θ in [end − last,
//     start − send]; θ is the point most of those intervals share, and a
//     span whose interval misses it is rejected.
//
// A duration measured on two clocks differs by the rate of one against
// the other: the Linux kernel slews a clock by at most 500 ppm (NTP's
// largest frequency correction), so two clocks drift apart by at most
// rateTolerancePPM = 1,000 ppm, which a duration d is allowed (d × 10⁻³).
// toleranceNs = 1 ms is added to every comparison: far above the stamps'
// resolution (vLLM's times are float seconds, a few hundred nanoseconds
// at today's Unix time; the client's are nanoseconds) and the error of a
// clock mapping (the client's kernel stamps converted to its run clock; in
// a cluster, each agent's clock to agent 0's, half a minimum RTT), and
// below anything a forgery would need to change (a server TTFT of 9.5 s
// against the client's 50 ms). For check 5 the offset itself may drift by
// the rate over the run, so the shared point is sought, and every span
// checked, within toleranceNs + 1,000 ppm × the run's span of client
// times.
//
// Then the spans a request has left are counted: two or more different
// ones (a copy received again, an exporter's retry, is a duplicate, not a
// second span) make the request conflicting, joined to none.
const (
	toleranceNs      = int64(time.Millisecond)
	rateTolerancePPM = 1000
)

// tolerance is what a duration d measured on the other side's clock may
// exceed its counterpart by.
func tolerance(d int64) int64 {
	return toleranceNs + max(d, 0)/1_000_000*rateTolerancePPM
}

// rejection is why a span was rejected (fitted: it was not).
type rejection int

const (
	fitted rejection = iota
	rejectNoTimes
	rejectTTFT
	rejectE2E
	rejectPhases
	rejectEarly
	rejectOffset
	rejections
)

// rejectionReason says each rejection as the warning lists it.
var rejectionReason = [rejections]string{
	rejectNoTimes: "without a start and end time",
	rejectTTFT:    "with a server TTFT longer than the client's time from sending to the first token",
	rejectE2E:     "longer than the client's time from sending to the last token",
	rejectPhases:  "whose phases do not fit its own TTFT and e2e",
	rejectEarly:   "exported before the server could have finished the request",
	rejectOffset:  "whose start and end fall outside the client's window at the clock offset the other spans show",
}

// window is one request on the client's run clock: when it began to
// send, its first and last token events.
type window struct {
	sendNs, firstNs, lastNs int64
}

// fitsClient applies checks 1-4 to span s of the request with window w;
// receivedNs is when its export arrived, on the client's run clock.
func fitsClient(s *Span, w window, receivedNs int64) rejection {
	if s.StartUnixNs <= 0 || s.EndUnixNs < s.StartUnixNs {
		return rejectNoTimes
	}
	toFirst, toLast := w.firstNs-w.sendNs, w.lastNs-w.sendNs
	length := s.EndUnixNs - s.StartUnixNs
	e2e := max(s.E2ENs, length)
	if s.TTFTNs > toFirst+tolerance(toFirst) {
		return rejectTTFT
	}
	if e2e > toLast+tolerance(toLast) {
		return rejectE2E
	}
	before := max(s.QueueNs, 0) + max(s.PrefillNs, 0)
	if s.TTFTNs >= 0 && before > s.TTFTNs+tolerance(s.TTFTNs) {
		return rejectPhases
	}
	if max(before, s.TTFTNs, s.DecodeNs, s.InferenceNs) > e2e+tolerance(e2e) {
		return rejectPhases
	}
	if receivedNs < w.sendNs+e2e-tolerance(e2e) {
		return rejectEarly
	}
	return fitted
}

// offsetRange is the offsets θ (server clock − client clock) at which a
// span's interval lies within its request's window, on the client's wall
// clock (startUnixNs: the run's time 0).
func offsetRange(s *Span, w window, startUnixNs int64) (lo, hi int64) {
	return s.EndUnixNs - (startUnixNs + w.lastNs), s.StartUnixNs - (startUnixNs + w.sendNs)
}

// sharedOffset is the point that most of the ranges, each widened by tol,
// share: the middle of the first stretch covered by the most of them.
func sharedOffset(ranges [][2]int64, tol int64) (theta int64, ok bool) {
	if len(ranges) == 0 {
		return 0, false
	}
	type edge struct {
		at   int64
		step int
	}
	edges := make([]edge, 0, 2*len(ranges))
	for _, r := range ranges {
		edges = append(edges, edge{r[0] - tol, 1}, edge{r[1] + tol, -1})
	}
	// At one point an opening comes before a closing: the ranges are
	// closed.
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		return b.step - a.step
	})
	best, cur := 0, 0
	for k, e := range edges {
		cur += e.step
		if e.step > 0 && cur > best && k+1 < len(edges) {
			best = cur
			theta = e.at + (edges[k+1].at-e.at)/2
		}
	}
	return theta, true
}

// durationText is a duration for an example: rounded to the microsecond.
func durationText(ns int64) string {
	return time.Duration(ns).Round(time.Microsecond).String()
}

// rejectionExample says what did not fit for span s of request id.
func rejectionExample(why rejection, id string, s *Span, w window, receivedNs int64) string {
	toFirst, toLast := w.firstNs-w.sendNs, w.lastNs-w.sendNs
	e2e := max(s.E2ENs, s.EndUnixNs-s.StartUnixNs)
	switch why {
	case rejectNoTimes:
		return fmt.Sprintf("request %s: start %d, end %d", id, s.StartUnixNs, s.EndUnixNs)
	case rejectTTFT:
		return fmt.Sprintf("request %s: server TTFT %s, the client's %s from sending to its first token", id, durationText(s.TTFTNs), durationText(toFirst))
	case rejectE2E:
		return fmt.Sprintf("request %s: server e2e %s, the client's %s from sending to its last token", id, durationText(e2e), durationText(toLast))
	case rejectPhases:
		return fmt.Sprintf("request %s: queue %s, prefill %s, decode %s, inference %s against TTFT %s and e2e %s", id,
			durationText(s.QueueNs), durationText(s.PrefillNs), durationText(s.DecodeNs), durationText(s.InferenceNs), durationText(s.TTFTNs), durationText(e2e))
	case rejectEarly:
		return fmt.Sprintf("request %s: its export came %s after the client began to send it, for a span of %s", id, durationText(receivedNs-w.sendNs), durationText(e2e))
	}
	return "request " + id
}
