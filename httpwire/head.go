package httpwire

import (
	"bytes"
	"math"
)

// Head is a parsed final (non-1xx) response head. Byte slices alias the
// parser's buffer or the bytes passed to Feed and are valid only during
// Handler.OnHead.
type Head struct {
	Major, Minor  int // HTTP/1.0 or 1.1
	StatusCode    int
	Reason        []byte
	ContentType   []byte
	ContentLength int64 // -1 if absent, or if Transfer-Encoding overrides it
	Chunked       bool  // Transfer-Encoding: chunked (HEAD, 204 and 304 responses have no body regardless)
	KeepAlive     bool  // connection may be reused after this response
	// KeepAliveMax is the max parameter of a Keep-Alive header
	// ("timeout=5, max=100"): the most responses the server will send on
	// the connection. 0 when absent or not a positive decimal.
	KeepAliveMax int64

	fields []byte // the header lines, for Header; valid as long as the slices above
}

// Header returns the value of the first header field named name (ASCII
// case-insensitive), without surrounding whitespace, or nil if the head has
// no such field. Like the Head's other slices, the value is valid only during
// Handler.OnHead.
func (h *Head) Header(name string) []byte { return lookupField(h.fields, name) }

// lookupField returns the value of the first line of fields named name (ASCII
// case-insensitive) without surrounding whitespace, or nil. The lines were
// checked when the head was parsed.
func lookupField(fields []byte, name string) []byte {
	for rest := fields; len(rest) > 0; {
		var line []byte
		line, rest = cutLine(rest)
		colon := bytes.IndexByte(line, ':')
		if colon == len(name) && equalFoldBytes(line[:colon], name) {
			return trimOWS(line[colon+1:])
		}
	}
	return nil
}

// headFraming is what the header fields say about framing and the connection,
// gathered while parsing them.
type headFraming struct {
	contentLength int64 // -1 if absent
	chunked       bool
	connClose     bool
	connKeepAlive bool
	keepAliveMax  int64
}

// parseHead parses a complete response head (status line, header lines and
// the blank line, with CRLF or bare LF line ends) into h. It sets every field
// of h except KeepAlive's adjustments for framing, which belong to the caller
// (see Parser.startBody).
func parseHead(head []byte, h *Head, f *headFraming) *ProtocolError {
	status, rest := cutLine(head)
	if err := parseStatusLine(status, h); err != nil {
		return err
	}
	*f = headFraming{contentLength: -1}
	h.ContentType = nil
	fieldsStart := len(head) - len(rest)
	for {
		var line []byte
		line, rest = cutLine(rest)
		if len(line) == 0 {
			break
		}
		if err := parseField(line, h, f); err != nil {
			return err
		}
	}
	// The header lines without the blank line that ends them.
	h.fields = head[fieldsStart : len(head)-len(rest)]
	h.ContentLength = f.contentLength
	h.Chunked = f.chunked
	h.KeepAliveMax = f.keepAliveMax
	if f.chunked {
		h.ContentLength = -1 // RFC 9112 §6.3: Transfer-Encoding overrides Content-Length
	}
	if h.Minor == 1 {
		h.KeepAlive = !f.connClose
	} else {
		h.KeepAlive = f.connKeepAlive && !f.connClose
	}
	return nil
}

// parseStatusLine parses "HTTP/1.1 200 OK". The reason phrase may be absent,
// with or without the space before it, as some servers send "HTTP/1.1 200".
func parseStatusLine(line []byte, h *Head) *ProtocolError {
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 || !bytes.HasPrefix(line, []byte("HTTP/")) {
		return protocolErrorf(PartStatusLine, "malformed status line %s", quoteBytes(line))
	}
	switch version := line[:sp]; {
	case string(version) == "HTTP/1.1":
		h.Major, h.Minor = 1, 1
	case string(version) == "HTTP/1.0":
		h.Major, h.Minor = 1, 0
	default:
		return protocolErrorf(PartStatusLine, "unsupported HTTP version %s (HTTP/1.0 and HTTP/1.1 are accepted)", quoteBytes(version))
	}
	rest := line[sp+1:]
	if len(rest) < 3 || !isDigit(rest[0]) || !isDigit(rest[1]) || !isDigit(rest[2]) || len(rest) > 3 && rest[3] != ' ' {
		return protocolErrorf(PartStatusLine, "malformed status line %s", quoteBytes(line))
	}
	h.StatusCode = int(rest[0]-'0')*100 + int(rest[1]-'0')*10 + int(rest[2]-'0')
	if h.StatusCode < 100 || h.StatusCode > 599 {
		return protocolErrorf(PartStatusLine, "status code %s out of range 100-599", quoteBytes(rest[:3]))
	}
	h.Reason = rest[3:]
	if len(h.Reason) > 0 {
		h.Reason = h.Reason[1:]
	}
	if i := bytes.IndexAny(h.Reason, "\r\x00"); i >= 0 {
		return protocolErrorf(PartStatusLine, "invalid byte %q in reason phrase of status line %s", h.Reason[i], quoteBytes(line))
	}
	return nil
}

// parseField checks one "name: value" line and records the fields that frame
// the body or decide the connection's fate.
func parseField(line []byte, h *Head, f *headFraming) *ProtocolError {
	name, value, err := splitField(line, PartHead)
	if err != nil {
		return err
	}
	switch {
	case equalFoldBytes(name, "content-length"):
		return parseContentLength(value, f, PartHead)
	case equalFoldBytes(name, "transfer-encoding"):
		return parseTransferEncoding(value, f, PartHead)
	case equalFoldBytes(name, "connection"):
		f.connectionOptions(value)
	case equalFoldBytes(name, "keep-alive"):
		f.keepAliveParams(value)
	case equalFoldBytes(name, "content-type"):
		if h.ContentType == nil {
			h.ContentType = value
		}
	}
	return nil
}

// splitField splits a header or trailer line into its name and its value
// without surrounding whitespace, rejecting what RFC 9112 says a recipient
// must reject: obsolete line folding, whitespace before the colon, a name
// that is not a token, and CR or NUL in the value.
func splitField(line []byte, part string) (name, value []byte, err *ProtocolError) {
	if line[0] == ' ' || line[0] == '\t' {
		return nil, nil, protocolErrorf(part, "obsolete line folding is not supported (line %s)", quoteBytes(line))
	}
	colon := bytes.IndexByte(line, ':')
	if colon < 0 {
		return nil, nil, protocolErrorf(part, "malformed header line %s: no colon", quoteBytes(line))
	}
	name = line[:colon]
	if colon == 0 {
		return nil, nil, protocolErrorf(part, "malformed header line %s: empty name", quoteBytes(line))
	}
	for _, c := range name {
		if !isTokenByte(c) {
			return nil, nil, protocolErrorf(part, "malformed header name %s: byte %q is not allowed", quoteBytes(name), c)
		}
	}
	value = trimOWS(line[colon+1:])
	for _, c := range value {
		if c == '\r' || c == 0 {
			return nil, nil, protocolErrorf(part, "header %s: invalid byte %q in value", quoteBytes(name), c)
		}
	}
	return name, value, nil
}

// parseContentLength accepts one or more Content-Length values (repeated
// fields or a comma-separated list, RFC 9110 §8.6) only if they all agree.
func parseContentLength(value []byte, f *headFraming, part string) *ProtocolError {
	for rest := value; ; {
		elem, after, more := bytes.Cut(rest, []byte(","))
		n, ok := parseDecimal(trimOWS(elem))
		if !ok {
			return protocolErrorf(part, "malformed Content-Length %s", quoteBytes(value))
		}
		if f.contentLength >= 0 && f.contentLength != n {
			return protocolErrorf(part, "conflicting Content-Length values %d and %d", f.contentLength, n)
		}
		f.contentLength = n
		if !more {
			return nil
		}
		rest = after
	}
}

// parseTransferEncoding accepts exactly one coding, chunked: the client does
// not ask for compression, and any other coding (gzip, deflate, ...) could
// only be undone by decompressing, which this package does not do.
func parseTransferEncoding(value []byte, f *headFraming, part string) *ProtocolError {
	for rest := value; len(rest) > 0; {
		var coding []byte
		coding, rest = cutListElement(rest)
		switch {
		case len(coding) == 0:
			// Empty list elements are allowed by RFC 9110 §5.6.1.
		case !equalFoldBytes(coding, "chunked"):
			return protocolErrorf(part, "unsupported Transfer-Encoding %s (only chunked is accepted)", quoteBytes(value))
		case f.chunked:
			return protocolErrorf(part, "Transfer-Encoding %s applies chunked more than once", quoteBytes(value))
		default:
			f.chunked = true
		}
	}
	if !f.chunked {
		return protocolErrorf(part, "unsupported Transfer-Encoding %s (only chunked is accepted)", quoteBytes(value))
	}
	return nil
}

// parseDecimal parses a non-empty string of ASCII digits that fits an int64.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if !isDigit(c) || n > (math.MaxInt64-int64(c-'0'))/10 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// cutLine returns the line at the start of b without its line end ("\r\n" or a
// bare "\n") and the bytes after it. A final line without "\n" is returned whole.
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil
	}
	line, rest = b[:i], b[i+1:]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, rest
}

// cutListElement returns the first element of a comma-separated list, without
// surrounding whitespace, and the rest of the list.
func cutListElement(b []byte) (elem, rest []byte) {
	if i := bytes.IndexByte(b, ','); i >= 0 {
		return trimOWS(b[:i]), b[i+1:]
	}
	return trimOWS(b), nil
}

// trimOWS removes the optional whitespace (SP and HTAB) around a field value.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// equalFoldBytes reports whether b equals s ignoring ASCII case.
func equalFoldBytes(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if toLower(b[i]) != toLower(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// keepAliveParams notes the max parameter of a Keep-Alive header's
// comma-separated list (RFC 2068 §19.7.1.1; "timeout=5, max=100"). A
// value that is not a positive decimal is passed over: the header only
// advises, and Connection: close is what ends a connection for certain.
// Of several, the smallest holds.
func (f *headFraming) keepAliveParams(value []byte) {
	for rest := value; len(rest) > 0; {
		var param []byte
		param, rest = cutListElement(rest)
		name, v, ok := bytes.Cut(param, []byte("="))
		if !ok || !equalFoldBytes(trimOWS(name), "max") {
			continue
		}
		if n, ok := parseDecimal(trimOWS(v)); ok && n > 0 && (f.keepAliveMax == 0 || n < f.keepAliveMax) {
			f.keepAliveMax = n
		}
	}
}

// connectionOptions notes the close and keep-alive options of a
// Connection header's comma-separated list (RFC 9110 §7.6.1); a header
// may carry both, and later headers add to earlier ones.
func (f *headFraming) connectionOptions(value []byte) {
	for rest := value; len(rest) > 0; {
		var opt []byte
		opt, rest = cutListElement(rest)
		switch {
		case equalFoldBytes(opt, "close"):
			f.connClose = true
		case equalFoldBytes(opt, "keep-alive"):
			f.connKeepAlive = true
		}
	}
}
