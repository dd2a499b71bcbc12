package httpwire

import "bytes"

// Limits on what a client may send a server. They bound the memory one
// connection can pin and the work one parse can do; benchmark requests are
// far below them (the largest prompts are a few hundred KiB of JSON).
// Chunk-size and trailer lines are bounded by MaxLineBytes, the fields of a
// head and of a trailer by MaxHeaderFields, as in responses.
const (
	// MaxRequestHeadBytes bounds the request line plus header lines, as Go's
	// net/http DefaultMaxHeaderBytes does.
	MaxRequestHeadBytes = 1 << 20
	// MaxRequestBodyBytes bounds a request body, Content-Length or chunked.
	MaxRequestBodyBytes = 64 << 20
)

// ServerRequest is a request as a server reads it. The head's fields are set
// as soon as the head has arrived; Method, Target, Body and Header only once
// RequestParser.Parse reports the request complete, and then they alias the
// bytes given to Parse (a chunked body: the parser's own buffer) until the
// next call.
type ServerRequest struct {
	Method []byte
	Target []byte
	// Minor is the HTTP version's minor number: 1 for HTTP/1.1, 0 for 1.0.
	Minor         int
	ContentLength int64 // -1 if absent or chunked
	Chunked       bool  // Transfer-Encoding: chunked
	// KeepAlive: the connection may carry another request after the
	// response. HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with
	// "Connection: keep-alive".
	KeepAlive bool
	// ExpectContinue: the client sent "Expect: 100-continue" and may wait
	// for an interim "100 Continue" before it sends the body.
	ExpectContinue bool
	Body           []byte

	fields []byte // the header lines, for Header
}

// Header returns the value of the first header field named name (ASCII
// case-insensitive), without surrounding whitespace, or nil.
func (r *ServerRequest) Header(name string) []byte { return lookupField(r.fields, name) }

type requestState uint8

const (
	reqHead      requestState = iota // request line and header lines, until the blank line
	reqBodyLen                       // a Content-Length body, until all of it is there
	reqChunkSize                     // a chunk-size line
	reqChunkData                     // one chunk's data, copied to the body as it comes
	reqChunkEnd                      // the CRLF after a chunk's data
	reqTrailer                       // trailer lines, until the blank line
	reqDone                          // the request is complete
	reqFailed                        // a ProtocolError was returned; Reset to use again
)

// RequestParser reads HTTP/1.x requests for a server. A server appends the
// bytes it reads to one buffer and hands the whole buffer to Parse each time;
// the parser remembers how far it has read, so bytes are examined once however
// the request is split. A Content-Length body stays in the caller's buffer; a
// chunked body is decoded, chunk by chunk as it arrives, into the parser's own
// buffer, which is reused from request to request.
//
// It is lenient as Parser is where clients differ harmlessly (a bare LF ends
// any line; whitespace may precede a chunk extension's ";") and stricter where
// a server must be: a request with both Content-Length and chunked framing, a
// transfer coding other than chunked, and control bytes in header values are
// refused. Errors are *ProtocolError with the Status to answer.
//
// The zero value is ready to use. A RequestParser is used by one goroutine at
// a time.
type RequestParser struct {
	state requestState
	err   *ProtocolError
	req   ServerRequest

	off   int // bytes of the request examined so far
	lines int // head or trailer lines so far
	// Where the parts of the head are, as offsets, since the caller's buffer
	// may move between calls (an append that grows it).
	methodEnd, targetEnd   int
	fieldsStart, fieldsEnd int

	remaining    int64  // bytes left in the current chunk
	sawCR        bool   // reqChunkEnd: the CR of the CRLF has been consumed
	trailerBytes int    // size of the trailer lines so far
	body         []byte // the decoded chunked body
}

// Reset makes the parser ready for a new request, keeping its body buffer.
func (p *RequestParser) Reset() {
	body := p.body[:0]
	*p = RequestParser{body: body}
}

// Request returns the request being parsed (see ServerRequest for which
// fields are set when).
func (p *RequestParser) Request() *ServerRequest { return &p.req }

// Parse continues parsing the request at the start of b. Until Parse returns
// a request or an error, b must begin with the bytes given to the previous
// call: a caller appends what arrives and passes the whole buffer again. Parse
// returns n > 0, the request's length in b, once the request is complete;
// n == 0 with a nil error means more bytes are needed. The call after a
// complete request starts the next one, at the start of the b it is given.
// Errors are *ProtocolError and leave the parser failed until Reset.
func (p *RequestParser) Parse(b []byte) (n int, err error) {
	switch p.state {
	case reqDone:
		p.Reset()
	case reqFailed:
		return 0, p.err
	}
	n, perr := p.parse(b)
	if perr != nil {
		p.state = reqFailed
		p.err = perr
		return 0, perr
	}
	return n, nil
}

func (p *RequestParser) parse(b []byte) (int, *ProtocolError) {
	for {
		switch p.state {
		case reqHead:
			end, err := p.scanHead(b)
			if end < 0 || err != nil {
				return 0, err
			}
			if err := p.parseHead(b[:end]); err != nil {
				return 0, err
			}
			if p.state == reqDone {
				return p.complete(b, end), nil
			}
		case reqBodyLen:
			end := p.off + int(p.req.ContentLength)
			if len(b) < end {
				return 0, nil
			}
			p.req.Body = b[p.off:end]
			return p.complete(b, end), nil
		case reqChunkSize:
			line, ok, err := p.chunkLine(b, PartChunked)
			if !ok {
				return 0, err
			}
			size, err := parseChunkSize(line)
			if err != nil {
				return 0, err.withStatus(400)
			}
			switch {
			case size == 0:
				p.state = reqTrailer
			case size > MaxRequestBodyBytes-int64(len(p.body)):
				return 0, protocolErrorf(PartChunked, "chunked request body exceeds %d bytes", MaxRequestBodyBytes).withStatus(413)
			default:
				p.remaining = size
				p.state = reqChunkData
			}
		case reqChunkData:
			k := int(min(p.remaining, int64(len(b)-p.off)))
			p.body = append(p.body, b[p.off:p.off+k]...)
			p.off += k
			p.remaining -= int64(k)
			if p.remaining > 0 {
				return 0, nil
			}
			p.state = reqChunkEnd
		case reqChunkEnd:
			if p.off == len(b) {
				return 0, nil
			}
			switch c := b[p.off]; {
			case c == '\r' && !p.sawCR:
				p.sawCR = true
			case c == '\n':
				p.sawCR = false
				p.state = reqChunkSize
			default:
				return 0, missingChunkCRLF(c).withStatus(400)
			}
			p.off++
		case reqTrailer:
			line, ok, err := p.chunkLine(b, PartTrailer)
			if !ok {
				return 0, err
			}
			if len(line) == 0 {
				p.req.Body = p.body
				return p.complete(b, p.off), nil
			}
			p.trailerBytes += len(line) + 2
			p.lines++
			switch {
			case p.trailerBytes > MaxHeadBytes:
				return 0, protocolErrorf(PartTrailer, "trailer larger than %d bytes", MaxHeadBytes).withStatus(400)
			case p.lines > MaxHeaderFields:
				return 0, protocolErrorf(PartTrailer, "trailer has more than %d fields", MaxHeaderFields).withStatus(400)
			}
			if _, _, err := splitField(line, PartTrailer); err != nil {
				return 0, err.withStatus(400)
			}
		}
	}
}

// complete ends the request at b[:n], pointing its slices into b.
func (p *RequestParser) complete(b []byte, n int) int {
	p.req.Method = b[:p.methodEnd]
	p.req.Target = b[p.methodEnd+1 : p.targetEnd]
	p.req.fields = b[p.fieldsStart:p.fieldsEnd]
	p.state = reqDone
	return n
}

// scanHead continues the search for the blank line that ends the head and
// returns the index just past it, or -1 if b ends first.
func (p *RequestParser) scanHead(b []byte) (int, *ProtocolError) {
	for {
		j := bytes.IndexByte(b[p.off:], '\n')
		if j < 0 {
			if len(b) > MaxRequestHeadBytes {
				return -1, headTooLarge()
			}
			return -1, nil
		}
		line := b[p.off : p.off+j]
		p.off += j + 1
		if p.off > MaxRequestHeadBytes {
			return -1, headTooLarge()
		}
		// A blank first line ends the head too; the request line is then
		// empty, and malformed.
		if len(line) == 0 || len(line) == 1 && line[0] == '\r' {
			return p.off, nil
		}
		p.lines++
		if p.lines-1 > MaxHeaderFields {
			return -1, protocolErrorf(PartRequestHead, "request head has more than %d header fields", MaxHeaderFields).withStatus(431)
		}
	}
}

func headTooLarge() *ProtocolError {
	return protocolErrorf(PartRequestHead, "request head larger than %d bytes", MaxRequestHeadBytes).withStatus(431)
}

// parseHead parses a complete head, through its blank line, and chooses how
// the body is framed.
func (p *RequestParser) parseHead(head []byte) *ProtocolError {
	line, rest := cutLine(head)
	if err := p.parseRequestLine(line); err != nil {
		return err
	}
	r := &p.req
	p.fieldsStart = len(head) - len(rest)
	f := headFraming{contentLength: -1}
	for {
		p.fieldsEnd = len(head) - len(rest)
		var line []byte
		line, rest = cutLine(rest)
		if len(line) == 0 {
			break
		}
		if err := p.parseField(line, &f); err != nil {
			return err
		}
	}
	if r.Minor == 1 {
		r.KeepAlive = !f.connClose
	} else {
		r.KeepAlive = f.connKeepAlive && !f.connClose
	}
	r.ContentLength = f.contentLength
	r.Chunked = f.chunked
	p.off = len(head)
	p.lines = 0
	switch {
	case f.chunked && f.contentLength >= 0:
		// A request framed both ways may be an attempt at smuggling
		// (RFC 9112 §6.3).
		return protocolErrorf(PartRequestHead, "request has both Content-Length and Transfer-Encoding: chunked").withStatus(400)
	case f.chunked:
		r.ContentLength = -1
		p.body = p.body[:0]
		p.state = reqChunkSize
	case f.contentLength > MaxRequestBodyBytes:
		return protocolErrorf(PartBody, "request body of %d bytes exceeds %d", f.contentLength, MaxRequestBodyBytes).withStatus(413)
	case f.contentLength > 0:
		p.state = reqBodyLen
	default:
		p.state = reqDone
	}
	return nil
}

// parseRequestLine parses "POST /v1/completions HTTP/1.1".
func (p *RequestParser) parseRequestLine(line []byte) *ProtocolError {
	method, rest, ok1 := bytes.Cut(line, []byte(" "))
	target, version, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok1 || !ok2 || len(method) == 0 || len(target) == 0 {
		return protocolErrorf(PartRequestLine, "malformed request line %s", quoteBytes(line)).withStatus(400)
	}
	for _, c := range method {
		if !isTokenByte(c) {
			return protocolErrorf(PartRequestLine, "malformed method %s: byte %q is not allowed", quoteBytes(method), c).withStatus(400)
		}
	}
	for _, c := range target {
		if c <= ' ' || c == 0x7f {
			return protocolErrorf(PartRequestLine, "malformed request target %s: byte %q is not allowed", quoteBytes(target), c).withStatus(400)
		}
	}
	switch string(version) {
	case "HTTP/1.1":
		p.req.Minor = 1
	case "HTTP/1.0":
		p.req.Minor = 0
	default:
		return protocolErrorf(PartRequestLine, "unsupported HTTP version %s (HTTP/1.0 and HTTP/1.1 are accepted)", quoteBytes(version)).withStatus(505)
	}
	p.methodEnd = len(method)
	p.targetEnd = len(method) + 1 + len(target)
	return nil
}

// parseField checks one header line and records what frames the body or
// decides the connection's fate.
func (p *RequestParser) parseField(line []byte, f *headFraming) *ProtocolError {
	name, value, err := splitField(line, PartRequestHead)
	if err != nil {
		return err.withStatus(400)
	}
	for _, c := range value {
		if c < ' ' && c != '\t' || c == 0x7f {
			return protocolErrorf(PartRequestHead, "header %s: control byte %q in value", quoteBytes(name), c).withStatus(400)
		}
	}
	switch {
	case equalFoldBytes(name, "content-length"):
		if err := parseContentLength(value, f, PartRequestHead); err != nil {
			return err.withStatus(400)
		}
	case equalFoldBytes(name, "transfer-encoding"):
		if err := parseTransferEncoding(value, f, PartRequestHead); err != nil {
			return err.withStatus(501)
		}
	case equalFoldBytes(name, "connection"):
		f.connectionOptions(value)
	case equalFoldBytes(name, "expect"):
		p.req.ExpectContinue = equalFoldBytes(value, "100-continue")
	}
	return nil
}

// chunkLine returns the chunk-size or trailer line at p.off without its line
// end and moves past it, or ok == false if b ends first.
func (p *RequestParser) chunkLine(b []byte, part string) (line []byte, ok bool, err *ProtocolError) {
	j := bytes.IndexByte(b[p.off:], '\n')
	if j < 0 {
		if len(b)-p.off > MaxLineBytes {
			return nil, false, lineTooLong(part).withStatus(400)
		}
		return nil, false, nil
	}
	line = b[p.off : p.off+j]
	if len(line) > MaxLineBytes {
		return nil, false, lineTooLong(part).withStatus(400)
	}
	p.off += j + 1
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, true, nil
}

func (e *ProtocolError) withStatus(status int) *ProtocolError {
	e.Status = status
	return e
}
