package shard

import "time"

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
		s.fail(c, s.connectErrorText(err))
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
// resendable), and when they did, it fails. llama.cpp's server closes 5 to
// 90 ms after its last chunk (measured on loopback), so a request sent in
// that window reaches its socket first, and the close acknowledges it
// unread: it fails. So as soon as a shard has seen the server close more
// kept-alive connections than it answered requests on reused ones (by more
// than closeSlack), it stops reusing them: each request opens its own
// connection, as the server's closes would have it do anyway, and none
// meets a closing one. What it cannot save are the reuses of a run's
// first answers, before any close was seen: against llama-server at
// concurrency 64, 0 to 3 requests in 256 (0 in two runs with this slack),
// at 256, 3 to 6 in 512 (slack 2 or 0 alike). A server that keeps connections alive
// answers on a reused one before its keep-alive timeout closes any, so
// it does not stop; one that stops costs a connect per request.
const closeSlack = 0

// retireWait is how long a connection the shard no longer reuses waits for
// the server's close before the shard closes it itself. The server that
// taught the shard to stop closes its connections at once; letting it
// close first leaves the closed socket's TIME_WAIT on its side, not among
// the client's ports.
const retireWait = 2 * time.Second

// keepsAlive reports whether connections are still worth reusing.
func (s *Shard) keepsAlive() bool {
	return s.closedKept <= s.answeredReused+closeSlack
}

// retire parks idle c off the idle stack until the server closes it, or
// retireWait passes.
func (s *Shard) retire(c *conn) {
	s.health.StoppedReuse = true
	c.retired = true
	s.timers.set(c, s.cfg.Clock.Now()+int64(retireWait))
}

// closeGrace is how long a connection must have been idle before a request
// takes it, unless the server has answered on reused connections more often
// than it closed kept-alive ones. A server that closes as its answer ends
// sends its FIN within microseconds of its last bytes; a request that
// waits this long for the connection finds the FIN there (popIdle looks)
// and goes out on a fresh connection instead of reaching the closing
// socket, unread, and being reset with it. llama.cpp's server closes later
// than that: for it, the stop of reuse above is what counts. Against a
// server that keeps its connections open it delays only the first
// requests that would reuse one, by at most this much.
const closeGrace = time.Millisecond

// holdIdle reports whether a request should wait for the most recently
// idle connection rather than take it now (see closeGrace), and then
// notes when the wait ends, for epoll_wait's timeout. With several
// destinations the next request's is not known before it is taken, so
// the wait is for the latest of their most recently idle connections.
func (s *Shard) holdIdle() bool {
	s.heldUntilNs = 0
	if s.answeredReused > s.closedKept {
		return false
	}
	var until int64
	for _, c := range s.idles {
		if c != nil {
			until = max(until, c.idleSinceNs+int64(closeGrace))
		}
	}
	if until > s.cfg.Clock.Now() {
		s.heldUntilNs = until
		return true
	}
	return false
}
