package httpwire

import (
	"fmt"
	"io"
	"strconv"
)

// Parts of a message a ProtocolError can point at.
const (
	PartStatusLine  = "status line"
	PartHead        = "response head" // the header block as a whole, or header lines
	PartRequestLine = "request line"
	PartRequestHead = "request head" // a request's header block, or its header lines
	PartBody        = "body"         // a Content-Length or close-delimited body
	PartChunked     = "chunked body" // chunk-size lines, chunk data and its CRLF
	PartTrailer     = "trailer"      // the trailer fields after the last chunk
)

// ProtocolError is a message that breaks HTTP/1.1 framing, or a connection
// that closed in the middle of one. Its text names the violation, e.g.
// `malformed chunk size "zz"`; Part says where it was found.
type ProtocolError struct {
	Part string // one of the Part* constants
	What string // the violation, e.g. `malformed chunk size "zz"`
	Err  error  // the underlying cause (io.ErrUnexpectedEOF for early closes), or nil
	// Status is, for a request, the status a server answers it with before
	// closing the connection: 400, 413 (body too large), 431 (head too
	// large), 501 (a transfer coding other than chunked) or 505 (an HTTP
	// version other than 1.0 and 1.1). It is 0 for a response.
	Status int
}

func (e *ProtocolError) Error() string {
	if e.Err != nil {
		return e.What + ": " + e.Err.Error()
	}
	return e.What
}

func (e *ProtocolError) Unwrap() error { return e.Err }

func protocolErrorf(part, format string, args ...any) *ProtocolError {
	return &ProtocolError{Part: part, What: fmt.Sprintf(format, args...)}
}

func closedEarly(part, what string) *ProtocolError {
	return &ProtocolError{Part: part, What: what, Err: io.ErrUnexpectedEOF}
}

// quoteBytes renders b for an error message, quoted and capped so that a
// hostile peer cannot make error texts arbitrarily long.
func quoteBytes(b []byte) string {
	const maxQuoted = 64
	if len(b) > maxQuoted {
		return strconv.Quote(string(b[:maxQuoted])) + "..."
	}
	return strconv.Quote(string(b))
}
