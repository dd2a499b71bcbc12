package spans

import (
	"strings"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/metrics"
)

// Join matches spans to the successful requests of results: by trace id
// (httpwire.TraceID of the request's id, which its traceparent carried),
// else by the span's gen_ai.request.id. requestIDs[i] is the x-request-id
// of the dataset's request i (results carry their index). The first span
// of a request wins; later ones are counted as duplicates.
func Join(results []metrics.RequestResult, requestIDs []string, c Collected, addr string, percentiles []float64, detailed bool) *report.ServerSpans {
	byTrace := make(map[[16]byte]int, len(results))
	byID := make(map[string]int, len(results))
	requests := 0
	for i := range results {
		r := &results[i]
		if !r.Success || r.Index >= len(requestIDs) || requestIDs[r.Index] == "" {
			continue
		}
		requests++
		id := requestIDs[r.Index]
		byTrace[httpwire.TraceID(id)] = i
		byID[id] = i
	}
	spanOf := make(map[int]*Span, len(c.Spans))
	byRequestID, unmatched, duplicates := 0, 0, 0
	for k := range c.Spans {
		s := &c.Spans[k]
		i, ok := byTrace[s.TraceID]
		viaID := false
		if !ok {
			i, ok = lookupRequestID(byID, s.RequestID)
			viaID = ok
		}
		switch {
		case !ok:
			unmatched++
		case spanOf[i] != nil:
			duplicates++
		default:
			spanOf[i] = s
			if viaID {
				byRequestID++
			}
		}
	}
	joined := make([]report.ServerSpanRequest, 0, len(spanOf))
	for i := range results {
		if s := spanOf[i]; s != nil {
			joined = append(joined, phases(&results[i], s))
		}
	}
	cnt := c.Counts
	recv := report.ServerSpansReceiver{
		Address: addr, Exports: cnt.Exports, Malformed: cnt.Malformed, Spans: cnt.Spans, Other: cnt.Other, Dropped: cnt.Dropped,
		BusyS: float64(cnt.BusyNs) / 1e9, WaitedS: c.Waited.Seconds(), HeldBytes: cnt.HeldBytes,
	}
	return report.NewServerSpans(requests, joined, recv, byRequestID, unmatched, duplicates, percentiles, detailed)
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
