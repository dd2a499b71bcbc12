package mock

import "github.com/stampede-bench/stampede/httpwire"

// httpRequest is what the handlers use of one parsed request. Its byte
// slices point into the connection's input buffer (a chunked body into its
// parser's buffer), so they are valid until the next request is parsed.
type httpRequest struct {
	method []byte
	target []byte
	// close is true when the connection must close after the response:
	// "Connection: close", or HTTP/1.0 without "Connection: keep-alive".
	close bool
	// requestID is the x-request-id header, if any.
	requestID []byte
	// session is the X-Session-ID header (the prefix cache's session key).
	session []byte
	// traceparent is the W3C trace context header, if any.
	traceparent []byte
	body        []byte
}

// set fills req from a request httpwire read.
func (req *httpRequest) set(r *httpwire.ServerRequest) {
	*req = httpRequest{
		method:      r.Method,
		target:      r.Target,
		close:       !r.KeepAlive,
		requestID:   r.Header("x-request-id"),
		session:     r.Header("x-session-id"),
		traceparent: r.Header("traceparent"),
		body:        r.Body,
	}
}
