package shard

import (
	"sync/atomic"
	"time"
)

// Sending a request again. A server that closes a kept-alive connection
// (its keep-alive timeout, or after an answer as llama.cpp's server does
// while it advertises "Keep-Alive: timeout=5, max=100") races the next
// request: the loop takes the connection from the idle pool, finds
// nothing waiting on it (popIdle looks), writes the request, and the
// server's FIN arrives a moment later. When the FIN left before the
// request arrived, the request never reached the server; failing it would
// charge the server with a failure it never saw.
//
// A request goes out again, once, on a fresh connection, when the server
// provably did not read it. It never goes out twice when the server may
// have read it (a generation is not idempotent, and Python's client does
// not replay a POST). Provably not read means, on a reused connection with
// no response byte received:
//
//   - none of it was written: the write failed on a connection the server
//     had already closed (net/http's nothingWrittenError); or
//   - the server's close (its FIN, or over TLS its close_notify) came
//     with none of the request acknowledged: the kernel's count of bytes
//     written but not acknowledged (SIOCOUTQ, read only here) still holds
//     all of the request's. The acknowledgement number of every segment
//     the server sent, its FIN included, says how far it had received; a
//     FIN that does not cover the request was sent before the request
//     reached the server, so the server had closed the connection before
//     it could read it. (A server that shuts its sending side and then
//     reads a request it can no longer answer would be the one exception;
//     a server that closes in full answers the request with a reset.)
//
// A reset without a FIN is never enough: a server may read a request and
// then reset the connection, and its reset acknowledges nothing.
//
// The request keeps its stream: its arrival and start stay those of the
// first send, so TTFT and latency count from the request's own start, as
// Python's would time a request its client had sent twice (the clock
// starts before the first send), and the wait for the server's close and
// the new connect are in them. The breakdown's connect phase ends with the
// fresh connection's connect. The request keeps its slot throughout: the
// schedule and the concurrency cap see one request, never two.

// resendable reports whether c's request, whose connection just failed
// with err, provably never reached the server (see above) and may go out
// again. A re-sent request is on a fresh connection, never a reused one,
// so no request goes out a third time.
func (s *Shard) resendable(c *conn, err error) bool {
	if !c.reused || c.gotBytes || c.req == nil || s.stopping.Load() || s.aborting.Load() {
		return false
	}
	written := c.sentBytes - c.reqBase
	if written == 0 {
		return true
	}
	if err != ErrClosedByPeer {
		return false
	}
	unacked, ok := unackedBytes(c.fd)
	return ok && unacked >= written
}

// resend moves c's request, which provably never reached the server, to a
// fresh connection and sends it there; c is closed. If no connection can
// be opened, the request fails with the connect's error.
func (s *Shard) resend(c *conn) {
	req := c.req
	nc, err := s.open(c.dest)
	if err != nil {
		s.fail(c, s.connectErrorTo(c.dest, err))
		return
	}
	s.health.Resent++
	// The stream moves with the request (its buffers too: each connection
	// keeps one stream's); c is left the fresh connection's empty one.
	nc.stream, c.stream = c.stream, nc.stream
	s.timers.clear(c)
	c.giveBack()
	c.req = nil
	s.closeConn(c)
	s.sendFresh(nc, req)
}

// Servers that close what they keep alive. A server that closes its
// connections after answers while it advertises keep-alive races every
// request the loop sends on a reused connection; the request that loses is
// saved only when its bytes provably never reached the server (see
// resendable), and when they did, it fails. llama.cpp's server closes each
// connection 5 to 90 ms after the last chunk of a streamed answer
// (measured on loopback: its HTTP library ends the connection when the
// stream's callback finishes), so a
// request sent in that window reaches its socket first, is acknowledged by
// the kernel, and dies unread with the socket: it fails.
//
// So the shard learns, per destination, whether reuse is safe:
//
//   - proven: a request on a connection that carried an answer before
//     was answered. From then on the most recently idle connection is
//     reused at once.
//   - closes: the server closed (or reset under a request, see
//     destReuse) more kept-alive connections than it answered requests
//     on reused ones (closeSlack). Reuse stops: each request opens its
//     own connection, as the server's closes would have it do anyway, and
//     none meets a closing one.
//   - unknown, until one of the two. The most recently idle connection is
//     reused at once, as when proven, unless its answer stated a
//     keep-alive policy (a Keep-Alive header with max, which llama.cpp's
//     HTTP library sends and uvicorn, hyper and the mock do not): that is
//     the hint that the server may be one that closes after its answers,
//     and such a connection is reused only once it has stayed open
//     proveIdle after its answer (the oldest is tried first), or once the
//     shard has opened a wave of connections, as many as its slots, in
//     place of reuse. Meanwhile a request opens a fresh connection, and
//     the server's closes, which come long before the wave's end and
//     within proveIdle, teach the shard to stop. A connection opened by
//     the warm-up, which carried nothing, is taken at once.
//
// The hint only delays reuse; the closes and the answers decide it. A
// server that advertises keep-alive and keeps it costs the first reuses'
// fresh connections (at most one per slot, fewer when answers come apart),
// and nothing after. One that closes after its answers without saying so
// is stopped by its closes and resets alone, and the reuses made before
// the first of them can still fail; the first on any shard of the run
// stops them all (ReuseStops). Against the scripted server that closes 5
// to 90 ms after each answer without a Keep-Alive header (2 shards of 16
// slots, 8 server threads, TestServerClosingLateWithoutHint), 8–15 of 192
// requests failed with each shard learning alone, 8 in each of 10 runs
// with the stop shared: those sent on the first answers' connections
// before any close.
const closeSlack = 0

// proveIdle is how long a connection must have stayed open after its
// answer before the shard trusts it with a request while it does not know
// whether the server keeps connections alive (see above): several times the
// longest answer-to-close delay measured against llama.cpp's server on a
// busy machine.
const proveIdle = 500 * time.Millisecond

// retireWait is how long a connection the shard no longer reuses waits for
// the server's close before the shard closes it itself. The server that
// taught the shard to stop closes its connections at once; letting it
// close first leaves the closed socket's TIME_WAIT on its side, not among
// the client's ports.
const retireWait = 2 * time.Second

// destReuse is what a shard learned about one destination's keep-alive.
type destReuse struct {
	// closedKept counts kept-alive connections the server closed (a FIN,
	// or bytes no request asked for) before a request on them was
	// answered, and those that carried an answer and were reset under the
	// next request before any response byte (the request reached a
	// closing socket); answeredReused, requests answered on a connection
	// that carried an answer before.
	closedKept, answeredReused int64
	// spared counts requests that went on a fresh connection while reuse
	// was unknown (Health's FreshBeforeReuse is their sum).
	spared int64
}

// keepsAlive reports whether connections to dest are still worth reusing:
// not once the server's closes stopped reuse on this shard or another.
func (s *Shard) keepsAlive(dest int) bool {
	r := &s.reuse[dest]
	return r.closedKept <= r.answeredReused+closeSlack && !s.cfg.Reuse.stopped(dest)
}

// ReuseStops is what a run's shards tell each other of their servers'
// keep-alive: which destinations' closes stopped reuse. The server is the
// same for every shard, and one that closes what it keeps alive after
// its answers fails the requests each shard reuses a connection for until
// that shard meets its first close; told by the first shard that does,
// the others stop at once. Any shard's thread.
type ReuseStops struct {
	stops []atomic.Bool // by Request.Dest
}

// NewReuseStops is a run's ReuseStops for dests destinations (1 without
// Config.Dests).
func NewReuseStops(dests int) *ReuseStops {
	return &ReuseStops{stops: make([]atomic.Bool, max(1, dests))}
}

func (r *ReuseStops) stopped(dest int) bool {
	return r != nil && dest < len(r.stops) && r.stops[dest].Load()
}

func (r *ReuseStops) stop(dest int) {
	if r != nil && dest < len(r.stops) {
		r.stops[dest].Store(true)
	}
}

// retire parks idle c off the idle stack until the server closes it, or
// retireWait passes.
func (s *Shard) retire(c *conn) {
	s.health.StoppedReuse = true
	c.retired = true
	s.timers.set(c, s.cfg.Clock.Now()+int64(retireWait))
}

// closedByServer counts idle or just reused c, which the server closed
// before it answered a request on it. The close that stops reuse retires
// the connections still idle to c's destination: none will carry a
// request again, and each would otherwise hold its socket until the
// server closed it or the run ended.
func (s *Shard) closedByServer(c *conn) {
	s.reuse[c.dest].closedKept++
	if !s.keepsAlive(c.dest) {
		s.cfg.Reuse.stop(c.dest)
		s.retireIdle(c.dest)
	}
}

// retireIdle marks the shard stopped reusing connections (so it is even
// when none was idle, or reuse stopped on a request's failure) and retires
// the connections idle to dest.
func (s *Shard) retireIdle(dest int) {
	s.health.StoppedReuse = true
	for c := s.idles[dest]; c != nil; c = s.idles[dest] {
		s.unlinkIdle(c)
		s.retire(c)
	}
}

// reusable picks the idle connection to dest that a request may take
// while reuse is unknown (see above), or nil when the request should open
// its own. It walks the idle stack only in the unknown phase, which ends
// once the destination is proven or closes.
func (s *Shard) reusable(dest int) *conn {
	r := &s.reuse[dest]
	var oldest *conn
	for c := s.idles[dest]; c != nil; c = c.idleNext {
		if c.responses == 0 || !c.advertised {
			return c
		}
		oldest = c
	}
	if oldest == nil {
		return nil
	}
	proven := s.cfg.Clock.Now()-oldest.idleSinceNs >= int64(proveIdle) || r.spared >= int64(s.cfg.Slots)
	if proven && (s.proofGate == nil || s.proofGate()) {
		return oldest
	}
	r.spared++
	return nil
}
