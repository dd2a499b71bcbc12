package shard

import "github.com/stampede-bench/stampede/internal/fifo"

type connState uint8

const (
	connConnecting connState = iota // non-blocking connect in progress
	connIdle                        // keep-alive, in the idle pool
	connBusy                        // carrying a request
	connClosed
	connHandshaking // TLS: connect and handshake on a handshaker (fd -1)
)

// conn is one keep-alive connection and the request it carries (at most
// one). It is the httpwire and sse handler for its own bytes, so parsing a
// read calls straight back into it without any allocation. Only its shard's
// thread touches it.
type conn struct {
	// The fields an event on a busy connection reads come first, ahead of
	// the Response they share cache lines with (see Response).

	fd    int
	tag   uint32 // epoll registration tag (see poller.add)
	state connState
	// reused: the connection carried an earlier request, so an EOF or reset
	// before any response byte is likely the server closing an idle
	// keep-alive connection under us (see resendable).
	reused bool
	// queued: the connection is on its shard's ready list.
	queued bool
	// retired: idle, but off the idle stack, waiting for the server's
	// close (see Shard.retire).
	retired bool
	// dest is the destination the connection was opened to (an index
	// of the shard's sas); it carries requests to that one alone.
	dest int
	// idleSinceNs is when the connection last went idle.
	idleSinceNs int64
	// advertised: the connection's last answer stated a keep-alive policy
	// (a Keep-Alive header with max), as the HTTP library of llama.cpp's
	// server does; while its destination's reuse is unknown, such a
	// connection is not reused young (see destReuse).
	advertised bool
	// hungUp: an event reported the peer's close or reset (EPOLLRDHUP,
	// EPOLLHUP). No later edge reports what is left to read then, the end
	// of the stream included: the connection is read until EOF or error.
	hungUp bool

	// The request in flight.
	req      *Request
	written  int  // bytes of req.Wire written so far
	gotBytes bool // any response byte arrived
	// reqBase is sentBytes when the request began: the request's own
	// bytes on the socket are sentBytes - reqBase (see resendable).
	reqBase uint32
	// responses counts the responses the connection carried to their end,
	// for the server's Keep-Alive max (see reusable).
	responses int64

	// Transmit stamps (see Shard.requestSent): txStamps says the socket
	// makes them; sentBytes counts the bytes written on the connection, as
	// the kernel's stamp keys do (mod 2³²); txPending says the stamp of
	// byte txKey, the request's last, is still to be read.
	txStamps  bool
	txPending bool
	txKey     uint32
	sentBytes uint32
	// ur: the shard's io_uring reads the connection (see Shard.reap).
	ur bool

	// TLS on the loop (Config.TLS): the record layer once the handshake
	// completed; before that, the handshake in progress and c's place in
	// the shard's list of them.
	tls     *loopTLS
	dial    *tlsDial
	hsIndex int

	// Response is the answer in flight, parsed straight from this
	// connection's reads.
	Response

	deadlineNs int64
	heapIndex  int
	idlePrev   *conn
	idleNext   *conn
}

// beginRequest resets the per-request state for req.
func (c *conn) beginRequest(req *Request) {
	c.req = req
	c.written = 0
	c.gotBytes = false
	c.reqBase = c.sentBytes
	c.txPending = false
	if c.tls != nil {
		c.tls.sent = false
	}
	c.Reset()
	c.SetPoolingUsage(req.PoolingUsage, req.PromptLen)
}

// connFIFO is the ready list: connections with bytes left to read, in the
// order they are to be served. It reuses its array, so a steady state
// allocates nothing.
type connFIFO = fifo.Queue[*conn]
