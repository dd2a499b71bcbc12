package shard

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/sse"
)

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
	// decoder and streaming come from the transport that owns the
	// connection (one decoder per thread).
	decoder   *sse.Decoder
	streaming bool

	fd    int
	tag   uint32 // epoll registration tag (see poller.add)
	state connState
	// reused: the connection carried an earlier request, so an EOF or reset
	// before any response byte is the server closing an idle keep-alive
	// connection under us, and the request is sent again on a new one.
	reused bool

	// The request in flight.
	req        *Request
	written    int  // bytes of req.Wire written so far
	gotBytes   bool // any response byte arrived
	resent     bool // already sent again once after a keep-alive race
	status     int  // response status code, 0 until the head arrived
	reason     []byte
	keepAlive  bool
	done       bool  // the response body ended
	bodyTs     int64 // receive time of the read being parsed
	handlerErr error // first error raised inside a parser callback
	body       []byte
	stream     metrics.Stream
	chunk      sse.Chunk

	http httpwire.Parser
	sse  sse.Parser

	deadlineNs int64
	heapIndex  int
	idlePrev   *conn
	idleNext   *conn
}

var (
	_ httpwire.Handler = (*conn)(nil)
	_ sse.EventHandler = (*conn)(nil)
)

// OnHead implements httpwire.Handler.
func (c *conn) OnHead(h *httpwire.Head, tsNs int64) {
	c.status = h.StatusCode
	if h.StatusCode != 200 {
		// The reason is only ever the failure text of a non-200 answer;
		// not copying "OK" saves each new connection an allocation.
		c.reason = append(c.reason[:0], h.Reason...)
	}
	c.keepAlive = h.KeepAlive
}

// OnBody implements httpwire.Handler: body bytes go to the SSE parser for
// streams, into the body buffer for pooling responses, and nowhere for a
// non-200 response (which fails on its status alone, as in Python).
func (c *conn) OnBody(b []byte, tsNs int64) {
	if c.status != 200 || c.handlerErr != nil {
		return
	}
	if !c.streaming {
		c.body = append(c.body, b...)
		return
	}
	c.bodyTs = tsNs
	if err := c.sse.Feed(b, c); err != nil {
		c.handlerErr = err
	}
}

// OnEnd implements httpwire.Handler.
func (c *conn) OnEnd(tsNs int64) {
	c.done = true
	c.bodyTs = tsNs
}

// OnEvent implements sse.EventHandler: one SSE event is one OpenAI chunk.
func (c *conn) OnEvent(ev *sse.Event) error {
	if err := c.decoder.Decode(ev.Data, &c.chunk); err != nil {
		if ev.Unterminated {
			// Python drops a trailing unterminated piece that is not JSON.
			return nil
		}
		return err
	}
	switch {
	case c.chunk.Done:
	case c.chunk.Token:
		c.stream.Token(c.bodyTs, c.chunk.Text)
	case c.chunk.HasUsage:
		c.stream.Usage(c.chunk.PromptTokens, c.chunk.CompletionTokens)
	}
	return nil
}

// beginRequest resets the per-request state for req.
func (c *conn) beginRequest(req *Request) {
	c.req = req
	c.written = 0
	c.gotBytes = false
	c.resent = false
	c.resetResponse()
}

func (c *conn) resetResponse() {
	c.status = 0
	c.reason = c.reason[:0]
	c.keepAlive = false
	c.done = false
	c.handlerErr = nil
	c.body = c.body[:0]
	c.http.Reset(false)
	c.sse.Reset()
}

// progressText describes how far the stream got, for error texts.
func (c *conn) progressText() string {
	if c.status == 0 {
		return "before the response head"
	}
	n := c.stream.TokenEvents()
	if n == 1 {
		return "after 1 token event"
	}
	return "after " + strconv.Itoa(n) + " token events"
}

// failureText turns what ended a request early into its error text.
func (c *conn) failureText(err error) string {
	var pe *httpwire.ProtocolError
	switch {
	case errors.As(err, &pe):
		if errors.Is(pe, io.ErrUnexpectedEOF) && c.status != 0 {
			// "connection closed in chunked body after 12 token events"
			return pe.What + " " + c.progressText()
		}
		return pe.Error()
	case isReset(err):
		return "connection reset by peer " + c.progressText()
	case err == errClosedByPeer:
		return "connection closed by server " + c.progressText()
	}
	return fmt.Sprintf("%v (%s)", err, c.progressText())
}

var errClosedByPeer = errors.New("connection closed by server")
