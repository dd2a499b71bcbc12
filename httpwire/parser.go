package httpwire

import (
	"bytes"
	"fmt"
	"math"
)

// Limits on what a response may send before its body. They bound the memory a
// Parser can be made to hold (a shard keeps one per connection, 10,000 and
// more of them) and end a conversation with a broken or hostile peer early.
const (
	// MaxLineBytes bounds one status, header, chunk-size or trailer line,
	// counting a CR before the LF but not the LF. Real servers send lines of
	// a few hundred bytes; 8 KiB is the request-line and field limit nginx
	// and most proxies apply by default.
	MaxLineBytes = 8 << 10
	// MaxHeadBytes bounds a whole response head (status line, header lines
	// and blank line) and, separately, the trailer block. 64 KiB is eight
	// maximal lines, far above any LLM server's heads (a few hundred bytes).
	MaxHeadBytes = 64 << 10
	// MaxHeaderFields bounds the field lines in a head or a trailer block, so
	// that many tiny lines cannot cost more to scan than the bytes suggest.
	// Go's net/http and nginx accept about a hundred; 256 leaves room.
	MaxHeaderFields = 256
)

// Handler receives a response's parts as Feed finds them. tsNs is the
// timestamp passed to the Feed call that completed the part.
type Handler interface {
	OnHead(h *Head, tsNs int64)
	OnBody(b []byte, tsNs int64) // de-framed body bytes; valid only during the call
	OnEnd(tsNs int64)            // the response (body included) is complete
}

type parseState uint8

const (
	stateHead      parseState = iota // status line and header lines, until the blank line
	stateBodyLen                     // remaining bytes of a Content-Length body
	stateBodyClose                   // a body that ends when the connection closes
	stateChunkSize                   // a chunk-size line (with optional extensions)
	stateChunkData                   // remaining bytes of one chunk's data
	stateChunkEnd                    // the CRLF after a chunk's data
	stateTrailer                     // trailer lines after the last chunk, until the blank line
	stateDone                        // the response is complete
	stateFailed                      // a ProtocolError was returned; Reset to use again
)

// Parser is an incremental HTTP/1.1 response parser. The zero value is ready
// to parse a response to a request other than HEAD. It holds only parse state
// plus a buffer for what arrives split across Feed calls: a response head
// (at most MaxHeadBytes) or a chunk-size or trailer line (at most
// MaxLineBytes). Body bytes are never copied.
//
// Lenient where real servers differ harmlessly: a bare LF ends any line
// (status, header, chunk-size, trailer, and the line end after chunk data)
// just as CRLF does; whitespace may precede a chunk extension's ";"; the
// reason phrase may be missing. A client that only reads responses cannot be
// confused by these the way a proxy can, so refusing them would only fail
// requests that every other client accepts.
//
// A Parser is used by one goroutine at a time.
type Parser struct {
	state       parseState
	headRequest bool
	err         error // the error that failed the parser, returned until Reset

	framing headFraming

	// buf holds a partial head or line carried from one Feed call to the next.
	buf []byte
	// Head and trailer scanning: bytes of the unfinished line seen so far,
	// bytes of completed lines, and completed lines.
	lineBytes  int
	blockBytes int
	lines      int

	remaining int64 // bytes left in the Content-Length body or the current chunk
	bodyBytes int64 // body bytes handed to OnBody so far
	sawCR     bool  // stateChunkEnd: the CR of the CRLF has been consumed

	// head is last: a response's body, read event after event, never
	// touches it, so the fields above share fewer cache lines.
	head Head
}

// Reset prepares the parser for the next response on the same connection.
// headRequest says the request was HEAD, so the response has no body whatever
// its header fields say. Reset keeps the parser's buffer for reuse.
func (p *Parser) Reset(headRequest bool) {
	buf := p.buf[:0]
	*p = Parser{headRequest: headRequest, buf: buf}
}

// Done reports whether the last response is complete.
func (p *Parser) Done() bool { return p.state == stateDone }

// KeepAlive reports whether the connection may carry another request after
// the response. It is valid once Done.
func (p *Parser) KeepAlive() bool { return p.state == stateDone && p.head.KeepAlive }

// Feed consumes bytes as they arrive, calling h for each part it completes.
// It returns how many bytes it consumed: it stops right after the response
// that OnEnd completed, so n < len(b) means extra bytes followed the response
// (a pipelined response, or garbage); Feed on a Done parser consumes nothing.
// Errors are *ProtocolError and leave the parser failed until Reset.
//
// Body bytes reach OnBody as sub-slices of b; only a head or a chunk-size or
// trailer line split across calls is copied.
func (p *Parser) Feed(b []byte, tsNs int64, h Handler) (n int, err error) {
	for n < len(b) {
		var k int
		var perr *ProtocolError
		switch p.state {
		case stateHead:
			k, perr = p.feedHead(b[n:], tsNs, h)
		case stateBodyLen:
			k = p.feedCounted(b[n:], tsNs, h)
			if p.remaining == 0 {
				p.end(tsNs, h)
			}
		case stateBodyClose:
			k = len(b) - n
			p.body(b[n:], tsNs, h)
		case stateChunkSize:
			k, perr = p.feedChunkSize(b[n:], tsNs, h)
		case stateChunkData:
			k = p.feedCounted(b[n:], tsNs, h)
			if p.remaining == 0 {
				p.state = stateChunkEnd
			}
		case stateChunkEnd:
			k, perr = p.feedChunkEnd(b[n])
		case stateTrailer:
			k, perr = p.feedTrailer(b[n:], tsNs, h)
		case stateDone:
			return n, nil
		case stateFailed:
			return n, p.err
		}
		n += k
		if perr != nil {
			return n, p.fail(perr)
		}
	}
	if p.state == stateFailed {
		return n, p.err
	}
	return n, nil
}

// CloseRead tells the parser that the peer closed the connection (read
// returned EOF). It completes a close-delimited body, calling OnEnd, and
// returns nil; it returns nil too if the response was already complete.
// Otherwise the response was cut short and it returns a *ProtocolError
// wrapping io.ErrUnexpectedEOF that says where.
func (p *Parser) CloseRead(tsNs int64, h Handler) error {
	var err *ProtocolError
	switch p.state {
	case stateDone:
		return nil
	case stateFailed:
		return p.err
	case stateBodyClose:
		p.end(tsNs, h)
		return nil
	case stateHead:
		if p.blockBytes == 0 && p.lineBytes == 0 {
			err = closedEarly(PartHead, "connection closed before the response head")
		} else {
			err = closedEarly(PartHead, "connection closed before the end of the response head")
		}
	case stateBodyLen:
		err = closedEarly(PartBody, fmt.Sprintf("connection closed after %d of %d body bytes", p.bodyBytes, p.head.ContentLength))
	case stateChunkSize, stateChunkData, stateChunkEnd:
		err = closedEarly(PartChunked, "connection closed in chunked body")
	case stateTrailer:
		err = closedEarly(PartTrailer, "connection closed in chunked body trailer")
	}
	return p.fail(err)
}

func (p *Parser) fail(err *ProtocolError) error {
	p.state = stateFailed
	p.err = err
	return err
}

// feedCounted hands up to p.remaining bytes of b to OnBody and returns how
// many it took.
func (p *Parser) feedCounted(b []byte, tsNs int64, h Handler) int {
	k := int(min(p.remaining, int64(len(b))))
	p.body(b[:k], tsNs, h)
	p.remaining -= int64(k)
	return k
}

func (p *Parser) body(b []byte, tsNs int64, h Handler) {
	if len(b) > 0 {
		p.bodyBytes += int64(len(b))
		h.OnBody(b, tsNs)
	}
}

func (p *Parser) end(tsNs int64, h Handler) {
	p.state = stateDone
	h.OnEnd(tsNs)
}

// feedHead looks for the end of the response head in b. A head that arrives
// whole is parsed in place; one split across calls is gathered in p.buf.
// Interim (1xx) responses are parsed and skipped.
func (p *Parser) feedHead(b []byte, tsNs int64, h Handler) (int, *ProtocolError) {
	end, err := p.scanHead(b)
	if err != nil {
		return 0, err
	}
	if end < 0 {
		p.buf = append(p.buf, b...)
		return len(b), nil
	}
	head := b[:end]
	if len(p.buf) > 0 {
		p.buf = append(p.buf, head...)
		head = p.buf
	}
	p.lineBytes, p.blockBytes, p.lines = 0, 0, 0
	if err := parseHead(head, &p.head, &p.framing); err != nil {
		return end, err
	}
	if p.head.StatusCode == 101 {
		return end, protocolErrorf(PartStatusLine, "unexpected 101 %s: connection upgrades are not supported", quoteBytes(p.head.Reason))
	}
	if p.head.StatusCode < 200 {
		// An interim response (100 Continue, 103 Early Hints): the final
		// response follows on the same connection.
		p.buf = p.buf[:0]
		return end, nil
	}
	p.startBody()
	h.OnHead(&p.head, tsNs)
	p.head.Reason, p.head.ContentType, p.head.fields = nil, nil, nil
	p.buf = p.buf[:0]
	if p.state == stateDone {
		h.OnEnd(tsNs)
	}
	return end, nil
}

// startBody chooses the body's framing by RFC 9112 §6.3 and settles whether
// the connection can be reused.
func (p *Parser) startBody() {
	hd, f := &p.head, &p.framing
	switch {
	case p.headRequest || hd.StatusCode == 204 || hd.StatusCode == 304:
		p.state = stateDone
	case f.chunked:
		// Transfer-Encoding overrides Content-Length, but a response with
		// both may be an attempt at request smuggling (RFC 9112 §6.3), and
		// HTTP/1.0 does not define Transfer-Encoding at all (§6.1): finish
		// the response, then close the connection.
		if f.contentLength >= 0 || hd.Minor == 0 {
			hd.KeepAlive = false
		}
		p.state = stateChunkSize
	case f.contentLength == 0:
		p.state = stateDone
	case f.contentLength > 0:
		p.remaining = f.contentLength
		p.state = stateBodyLen
	default:
		hd.KeepAlive = false
		p.state = stateBodyClose
	}
}

// scanHead continues the search for the blank line that ends a response
// head, across calls, enforcing the limits. It returns the index in
// b just past the blank line, or -1 if b ends first.
//
// Limits are checked in the same order whatever the split: a line's length
// as soon as it is known to exceed MaxLineBytes, the block's size and field
// count when a line ends. So the same bytes give the same error however they
// are fed.
func (p *Parser) scanHead(b []byte) (int, *ProtocolError) {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			p.lineBytes += len(b) - i
			if p.lineBytes > MaxLineBytes {
				return -1, lineTooLong(PartHead)
			}
			return -1, nil
		}
		n := p.lineBytes + j // the line's length without its LF
		if n > MaxLineBytes {
			return -1, lineTooLong(PartHead)
		}
		blank := n == 0 || n == 1 && p.lastLineByte(b, i, j) == '\r'
		p.blockBytes += n + 1
		p.lineBytes = 0
		i += j + 1
		if p.blockBytes > MaxHeadBytes {
			return -1, protocolErrorf(PartHead, "response head larger than %d bytes", MaxHeadBytes)
		}
		if blank {
			return i, nil
		}
		p.lines++
		// The first line is the status line, not a field.
		if p.lines-1 > MaxHeaderFields {
			return -1, protocolErrorf(PartHead, "response head has more than %d header fields", MaxHeaderFields)
		}
	}
}

// lastLineByte returns the last byte before the LF at b[i+j] of a line that
// may have begun in p.buf. The line is not empty.
func (p *Parser) lastLineByte(b []byte, i, j int) byte {
	if j > 0 {
		return b[i+j-1]
	}
	return p.buf[len(p.buf)-1]
}

func lineTooLong(part string) *ProtocolError {
	line := "header"
	switch part {
	case PartChunked:
		line = "chunk-size"
	case PartTrailer:
		line = "trailer"
	}
	return protocolErrorf(part, "%s line longer than %d bytes", line, MaxLineBytes)
}

// readLine returns the line at the start of b without its line end, joining
// it to a partial line kept from earlier calls, and how many bytes of b it
// consumed, and sets p.lineBytes to the line's length with any CR. If b ends
// before the line does, it keeps the partial line and returns ok == false.
// The line may alias p.buf: use it before the next call.
func (p *Parser) readLine(b []byte, part string) (line []byte, n int, ok bool, err *ProtocolError) {
	j := bytes.IndexByte(b, '\n')
	if j < 0 {
		if len(p.buf)+len(b) > MaxLineBytes {
			return nil, 0, false, lineTooLong(part)
		}
		p.buf = append(p.buf, b...)
		return nil, len(b), false, nil
	}
	line = b[:j]
	if len(p.buf) > 0 {
		p.buf = append(p.buf, line...)
		line = p.buf
		p.buf = p.buf[:0]
	}
	if len(line) > MaxLineBytes {
		return nil, 0, false, lineTooLong(part)
	}
	p.lineBytes = len(line)
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, j + 1, true, nil
}

func (p *Parser) feedChunkSize(b []byte, tsNs int64, h Handler) (int, *ProtocolError) {
	line, n, ok, err := p.readLine(b, PartChunked)
	if !ok {
		return n, err
	}
	size, err := parseChunkSize(line)
	if err != nil {
		return n, err
	}
	if size == 0 {
		p.state = stateTrailer
		return n, nil
	}
	p.remaining = size
	p.state = stateChunkData
	return n, nil
}

// parseChunkSize parses a chunk-size line: hex digits, then optional
// whitespace and chunk extensions, which are ignored.
func parseChunkSize(line []byte) (int64, *ProtocolError) {
	var size int64
	i := 0
	for ; i < len(line); i++ {
		d := unhex(line[i])
		if d < 0 {
			break
		}
		if size > math.MaxInt64>>4 {
			return 0, protocolErrorf(PartChunked, "chunk size %s too large", quoteBytes(line))
		}
		size = size<<4 | int64(d)
	}
	ext := trimOWS(line[i:])
	if i == 0 || len(ext) > 0 && ext[0] != ';' || bytes.IndexByte(ext, '\r') >= 0 {
		return 0, protocolErrorf(PartChunked, "malformed chunk size %s", quoteBytes(line))
	}
	return size, nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// feedChunkEnd consumes one byte of the line end after a chunk's data.
func (p *Parser) feedChunkEnd(c byte) (int, *ProtocolError) {
	switch {
	case c == '\r' && !p.sawCR:
		p.sawCR = true
	case c == '\n':
		p.sawCR = false
		p.state = stateChunkSize
	default:
		return 0, missingChunkCRLF(c)
	}
	return 1, nil
}

func missingChunkCRLF(c byte) *ProtocolError {
	return protocolErrorf(PartChunked, "missing CRLF after chunk data (found %q)", c)
}

// feedTrailer reads trailer lines up to the blank line that ends the body.
// Trailer fields are checked like header fields, then discarded.
func (p *Parser) feedTrailer(b []byte, tsNs int64, h Handler) (int, *ProtocolError) {
	line, n, ok, err := p.readLine(b, PartTrailer)
	if !ok {
		return n, err
	}
	if len(line) == 0 {
		p.end(tsNs, h)
		return n, nil
	}
	p.blockBytes += p.lineBytes + 1
	if p.blockBytes > MaxHeadBytes {
		return n, protocolErrorf(PartTrailer, "trailer larger than %d bytes", MaxHeadBytes)
	}
	p.lines++
	if p.lines > MaxHeaderFields {
		return n, protocolErrorf(PartTrailer, "trailer has more than %d fields", MaxHeaderFields)
	}
	if _, _, err := splitField(line, PartTrailer); err != nil {
		return n, err
	}
	return n, nil
}
