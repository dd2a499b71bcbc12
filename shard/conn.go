package shard

type connState uint8

const (
	connConnecting connState = iota // non-blocking connect in progress
	connIdle                        // keep-alive, in the idle pool
	connBusy                        // carrying a request
	connClosed
)

// conn is one keep-alive connection and the request it carries (at most
// one). It is the httpwire and sse handler for its own bytes, so parsing a
// read calls straight back into it without any allocation. Only its shard's
// thread touches it.
type conn struct {
	// Response is the answer in flight, parsed straight from this
	// connection's reads.
	Response

	fd    int
	tag   uint32 // epoll registration tag (see poller.add)
	state connState
	// reused: the connection carried an earlier request, so an EOF or reset
	// before any response byte is the server closing an idle keep-alive
	// connection under us, and the request is sent again on a new one.
	reused bool

	// The request in flight.
	req      *Request
	written  int  // bytes of req.Wire written so far
	gotBytes bool // any response byte arrived
	resent   bool // already sent again once after a keep-alive race

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
	c.resent = false
	c.Reset()
	c.SetPoolingUsage(req.PoolingUsage, req.PromptLen)
}
