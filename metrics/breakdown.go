package metrics

// BreakdownStats summarizes where the successful requests' TTFT went
// (stampede's own report, not Python's): one Stats per phase over the
// requests whose transport recorded a breakdown. Connect, TLS, Send, Server
// and FirstToken of one request add up to its TTFT exactly; QueueWait comes
// before the start and is not part of TTFT.
type BreakdownStats struct {
	// Requests counts the requests summarized; NewConnections those of
	// them that opened their connection.
	Requests       int
	NewConnections int
	// TLSConnections counts those whose new connection had a TLS
	// handshake.
	TLSConnections int
	QueueWait      Stats
	Connect        Stats
	TLS            Stats // TLS handshake; all 0 in a run without TLS
	Send           Stats
	Server         Stats
	FirstToken     Stats
	TTFT           Stats
}

// ComputeBreakdown summarizes the breakdowns of the successful requests in
// results, with the given percentiles; nil when no request has one (a run
// over a transport that records none, or one where every request failed).
func ComputeBreakdown(results []RequestResult, percentiles []float64) *BreakdownStats {
	var queue, connect, handshake, send, server, first, ttft []float64
	b := &BreakdownStats{}
	for i := range results {
		r := &results[i]
		if !r.Success || !r.Breakdown.Known {
			continue
		}
		b.Requests++
		if r.Breakdown.NewConn {
			b.NewConnections++
		}
		if r.Breakdown.TLSNs > 0 {
			b.TLSConnections++
		}
		queue = append(queue, Seconds(r.QueueNs))
		connect = append(connect, Seconds(r.Breakdown.ConnectNs))
		handshake = append(handshake, Seconds(r.Breakdown.TLSNs))
		send = append(send, Seconds(r.Breakdown.SendNs))
		server = append(server, Seconds(r.Breakdown.ServerNs))
		first = append(first, Seconds(r.Breakdown.FirstTokenNs))
		ttft = append(ttft, Seconds(r.TTFTNs))
	}
	if b.Requests == 0 {
		return nil
	}
	b.QueueWait = summarizeInPlace(queue, percentiles)
	b.Connect = summarizeInPlace(connect, percentiles)
	b.TLS = summarizeInPlace(handshake, percentiles)
	b.Send = summarizeInPlace(send, percentiles)
	b.Server = summarizeInPlace(server, percentiles)
	b.FirstToken = summarizeInPlace(first, percentiles)
	b.TTFT = summarizeInPlace(ttft, percentiles)
	return b
}
