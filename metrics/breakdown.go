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
// l, with the given percentiles; nil when no request has one (a run over a
// transport that records none, or one where every request failed).
func ComputeBreakdown(l *Log, percentiles []float64) *BreakdownStats {
	const (
		queue = iota
		connect
		handshake
		send
		server
		first
		ttft
		lists
	)
	b := &BreakdownStats{}
	set := NewLists(lists, percentiles)
	for set.More() {
		for _, r := range l.All() {
			if !r.Success || !r.Breakdown.Known {
				continue
			}
			if set.First() {
				b.Requests++
				if r.Breakdown.NewConn {
					b.NewConnections++
				}
				if r.Breakdown.TLSNs > 0 {
					b.TLSConnections++
				}
			}
			set.Add(queue, Seconds(r.QueueNs))
			set.Add(connect, Seconds(r.Breakdown.ConnectNs))
			set.Add(handshake, Seconds(r.Breakdown.TLSNs))
			set.Add(send, Seconds(r.Breakdown.SendNs))
			set.Add(server, Seconds(r.Breakdown.ServerNs))
			set.Add(first, Seconds(r.Breakdown.FirstTokenNs))
			set.Add(ttft, Seconds(r.TTFTNs))
		}
		if b.Requests == 0 {
			return nil
		}
		set.EndPass()
	}
	b.QueueWait, b.Connect, b.TLS = set.Stats(queue), set.Stats(connect), set.Stats(handshake)
	b.Send, b.Server, b.FirstToken, b.TTFT = set.Stats(send), set.Stats(server), set.Stats(first), set.Stats(ttft)
	return b
}
