package mock

import (
	"bytes"
	"fmt"
	"strings"
)

// Limits on what a client may send. They bound the memory one connection
// can pin and the work one parse can do; benchmark requests are far below
// them (the largest prompts are a few hundred KiB of JSON).
const (
	// maxHeaderBytes bounds the request line plus headers, as Go's
	// net/http DefaultMaxHeaderBytes does.
	maxHeaderBytes = 1 << 20
	// maxHeaderCount bounds the number of header lines.
	maxHeaderCount = 256
	// maxBodyBytes bounds a request body, Content-Length or chunked.
	maxBodyBytes = 64 << 20
	// maxChunkLineBytes bounds one chunk-size line with its extensions.
	maxChunkLineBytes = 4096
)

// httpRequest is one parsed request. Its byte slices point into the buffer
// given to parseRequest (the body of a chunked request into the scratch
// buffer), so they are valid until that buffer is changed.
type httpRequest struct {
	method []byte
	target []byte
	// http10 is true for HTTP/1.0 requests.
	http10 bool
	// close is true when the connection must close after the response:
	// "Connection: close", or HTTP/1.0 without "Connection: keep-alive".
	close bool
	// expectContinue is set by "Expect: 100-continue"; it is valid even
	// when parseRequest reports the body incomplete.
	expectContinue bool
	// requestID is the x-request-id header, if any.
	requestID []byte
	body      []byte
}

// requestError is a request the server answers with an error status and
// then closes the connection, since its framing can no longer be trusted.
type requestError struct {
	status int
	msg    string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) *requestError {
	return &requestError{status: 400, msg: fmt.Sprintf(format, args...)}
}

// parseRequest parses one HTTP/1.x request from the start of b. It returns
// the number of bytes the request took, or n == 0 with a nil error when b
// does not yet hold a whole request. A chunked body is decoded into
// *scratch, which is reused across calls.
func parseRequest(b []byte, req *httpRequest, scratch *[]byte) (n int, err error) {
	*req = httpRequest{}
	headEnd, bodyStart := findHeaderEnd(b)
	if headEnd < 0 {
		if len(b) > maxHeaderBytes {
			return 0, &requestError{status: 431, msg: fmt.Sprintf("request header block exceeds %d bytes", maxHeaderBytes)}
		}
		return 0, nil
	}
	if headEnd > maxHeaderBytes {
		return 0, &requestError{status: 431, msg: fmt.Sprintf("request header block exceeds %d bytes", maxHeaderBytes)}
	}
	head := b[:headEnd]

	line, rest := nextLine(head)
	if err := parseRequestLine(line, req); err != nil {
		return 0, err
	}
	req.close = req.http10
	contentLength := int64(-1)
	chunked := false
	for count := 0; len(rest) > 0; count++ {
		if count == maxHeaderCount {
			return 0, &requestError{status: 431, msg: fmt.Sprintf("more than %d header lines", maxHeaderCount)}
		}
		line, rest = nextLine(rest)
		name, value, err := splitHeader(line)
		if err != nil {
			return 0, err
		}
		switch {
		case asciiEqualFold(name, "content-length"):
			v, ok := parseDecimal(value)
			if !ok {
				return 0, badRequest("malformed Content-Length %q", value)
			}
			if contentLength >= 0 && contentLength != v {
				return 0, badRequest("conflicting Content-Length headers %d and %d", contentLength, v)
			}
			contentLength = v
		case asciiEqualFold(name, "transfer-encoding"):
			if !asciiEqualFold(value, "chunked") {
				return 0, &requestError{status: 501, msg: fmt.Sprintf("unsupported Transfer-Encoding %q (only chunked is)", value)}
			}
			chunked = true
		case asciiEqualFold(name, "connection"):
			if hasToken(value, "close") {
				req.close = true
			} else if hasToken(value, "keep-alive") {
				req.close = false
			}
		case asciiEqualFold(name, "x-request-id"):
			req.requestID = value
		case asciiEqualFold(name, "expect"):
			req.expectContinue = asciiEqualFold(value, "100-continue")
		}
	}
	if chunked && contentLength >= 0 {
		return 0, badRequest("both Content-Length and Transfer-Encoding: chunked")
	}

	body := b[bodyStart:]
	switch {
	case chunked:
		used, err := decodeChunked(body, scratch)
		if used == 0 || err != nil {
			return 0, err
		}
		req.body = *scratch
		return bodyStart + used, nil
	case contentLength > maxBodyBytes:
		return 0, &requestError{status: 413, msg: fmt.Sprintf("request body of %d bytes exceeds %d", contentLength, maxBodyBytes)}
	case contentLength > 0:
		if int64(len(body)) < contentLength {
			return 0, nil
		}
		req.body = body[:contentLength]
		return bodyStart + int(contentLength), nil
	}
	return bodyStart, nil
}

// findHeaderEnd returns the end of the header block (before its blank line)
// and the start of the body, or -1, -1 if the blank line has not arrived.
// Lines may end in CRLF or a bare LF, as Go's and nginx's servers accept.
func findHeaderEnd(b []byte) (headEnd, bodyStart int) {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1, -1
		}
		nl := i + j
		// The line that starts right after this newline: is it empty?
		if nl+1 < len(b) && b[nl+1] == '\n' {
			return nl + 1, nl + 2
		}
		if nl+2 < len(b) && b[nl+1] == '\r' && b[nl+2] == '\n' {
			return nl + 1, nl + 3
		}
		if nl+2 >= len(b) {
			return -1, -1
		}
		i = nl + 1
	}
}

// nextLine splits b at its first newline, dropping the line ending.
func nextLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		line, rest = b, nil
	} else {
		line, rest = b[:i], b[i+1:]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest
}

func parseRequestLine(line []byte, req *httpRequest) error {
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		return badRequest("malformed request line %q", clip(line))
	}
	sp2 := bytes.IndexByte(line[sp1+1:], ' ')
	if sp2 <= 0 {
		return badRequest("malformed request line %q", clip(line))
	}
	sp2 += sp1 + 1
	req.method, req.target = line[:sp1], line[sp1+1:sp2]
	for _, c := range req.method {
		if !isTokenChar(c) {
			return badRequest("malformed method %q", clip(req.method))
		}
	}
	for _, c := range req.target {
		if c <= ' ' || c == 0x7f {
			return badRequest("malformed request target %q", clip(req.target))
		}
	}
	switch string(line[sp2+1:]) {
	case "HTTP/1.1":
	case "HTTP/1.0":
		req.http10 = true
	default:
		return &requestError{status: 505, msg: fmt.Sprintf("unsupported protocol %q (HTTP/1.0 and HTTP/1.1 are)", clip(line[sp2+1:]))}
	}
	return nil
}

// splitHeader splits "Name: value", trimming optional whitespace around
// the value.
func splitHeader(line []byte) (name, value []byte, err error) {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return nil, nil, badRequest("malformed header line %q", clip(line))
	}
	name = line[:colon]
	for _, c := range name {
		if !isTokenChar(c) {
			return nil, nil, badRequest("malformed header name %q", clip(name))
		}
	}
	value = bytes.Trim(line[colon+1:], " \t")
	for _, c := range value {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return nil, nil, badRequest("control byte in value of header %q", name)
		}
	}
	return name, value, nil
}

// decodeChunked decodes a chunked body from b into *dst. It returns the
// bytes consumed through the trailer's blank line, or 0 with a nil error if
// the body is incomplete.
func decodeChunked(b []byte, dst *[]byte) (int, error) {
	out := (*dst)[:0]
	off := 0
	for {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			if len(b)-off > maxChunkLineBytes {
				return 0, badRequest("chunk-size line longer than %d bytes", maxChunkLineBytes)
			}
			return 0, nil
		}
		if i > maxChunkLineBytes {
			return 0, badRequest("chunk-size line longer than %d bytes", maxChunkLineBytes)
		}
		line, _ := nextLine(b[off : off+i+1])
		off += i + 1
		if semi := bytes.IndexByte(line, ';'); semi >= 0 {
			line = line[:semi]
		}
		line = bytes.TrimRight(line, " \t")
		size, ok := parseHex(line)
		if !ok {
			return 0, badRequest("malformed chunk size %q", clip(line))
		}
		if size == 0 {
			used, err := skipTrailer(b[off:])
			if used == 0 || err != nil {
				return 0, err
			}
			*dst = out
			return off + used, nil
		}
		if size > maxBodyBytes-int64(len(out)) {
			return 0, &requestError{status: 413, msg: fmt.Sprintf("chunked request body exceeds %d bytes", maxBodyBytes)}
		}
		end := off + int(size)
		switch {
		case end+1 > len(b):
			return 0, nil
		case b[end] == '\n':
			out = append(out, b[off:end]...)
			off = end + 1
		case b[end] == '\r':
			if end+2 > len(b) {
				return 0, nil
			}
			if b[end+1] != '\n' {
				return 0, badRequest("chunk data not followed by CRLF")
			}
			out = append(out, b[off:end]...)
			off = end + 2
		default:
			return 0, badRequest("chunk data longer than its size %d", size)
		}
		*dst = out
	}
}

// skipTrailer consumes trailer lines through the blank line that ends a
// chunked body; trailer fields are ignored.
func skipTrailer(b []byte) (int, error) {
	off := 0
	for count := 0; ; count++ {
		if count > maxHeaderCount {
			return 0, badRequest("more than %d trailer lines", maxHeaderCount)
		}
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			if len(b)-off > maxChunkLineBytes {
				return 0, badRequest("trailer line longer than %d bytes", maxChunkLineBytes)
			}
			return 0, nil
		}
		line, _ := nextLine(b[off : off+i+1])
		off += i + 1
		if len(line) == 0 {
			return off, nil
		}
		if _, _, err := splitHeader(line); err != nil {
			return 0, err
		}
	}
}

func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

func parseHex(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | int64(d)
	}
	return v, true
}

// isTokenChar reports whether c may appear in an RFC 9110 token (method,
// header name).
func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return c != 0 && strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// hasToken reports whether a comma-separated header value lists tok.
func hasToken(value []byte, tok string) bool {
	for len(value) > 0 {
		var item []byte
		if i := bytes.IndexByte(value, ','); i >= 0 {
			item, value = value[:i], value[i+1:]
		} else {
			item, value = value, nil
		}
		if asciiEqualFold(bytes.Trim(item, " \t"), tok) {
			return true
		}
	}
	return false
}

// clip shortens b for an error message.
func clip(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
