package httpwire

import "strconv"

// Server-side framing for the mock server. Each function appends to dst and
// returns the extended slice, so a server builds a whole response in one
// reusable buffer.

// AppendStatusLine appends "HTTP/1.1 <code> <reason>\r\n".
func AppendStatusLine(dst []byte, code int, reason string) []byte {
	dst = append(dst, "HTTP/1.1 "...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, ' ')
	dst = append(dst, reason...)
	return append(dst, "\r\n"...)
}

// AppendHeader appends one "Key: value\r\n" header line.
func AppendHeader(dst []byte, key, value string) []byte {
	dst = append(dst, key...)
	dst = append(dst, ": "...)
	dst = append(dst, value...)
	return append(dst, "\r\n"...)
}

// AppendContentLength appends a Content-Length header line.
func AppendContentLength(dst []byte, n int) []byte {
	dst = append(dst, "Content-Length: "...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, "\r\n"...)
}

// AppendEndOfHeaders appends the blank line that ends a header block.
func AppendEndOfHeaders(dst []byte) []byte { return append(dst, "\r\n"...) }

// AppendChunk appends payload as one chunk of a chunked body
// ("<hex size>\r\n<payload>\r\n"). An empty payload appends nothing, since a
// zero-size chunk would end the body; use AppendLastChunk for that.
func AppendChunk(dst, payload []byte) []byte {
	if len(payload) == 0 {
		return dst
	}
	dst = strconv.AppendUint(dst, uint64(len(payload)), 16)
	dst = append(dst, "\r\n"...)
	dst = append(dst, payload...)
	return append(dst, "\r\n"...)
}

// AppendLastChunk appends the zero-size chunk and the empty trailer that end
// a chunked body.
func AppendLastChunk(dst []byte) []byte { return append(dst, "0\r\n\r\n"...) }

// ReasonPhrase returns the standard reason phrase for the status codes the
// mock server sends, or "Unknown".
func ReasonPhrase(code int) string {
	switch code {
	case 100:
		return "Continue"
	case 200:
		return "OK"
	case 400:
		return "Bad Request"
	case 401:
		return "Unauthorized"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 413:
		return "Request Entity Too Large"
	case 429:
		return "Too Many Requests"
	case 431:
		return "Request Header Fields Too Large"
	case 500:
		return "Internal Server Error"
	case 501:
		return "Not Implemented"
	case 503:
		return "Service Unavailable"
	case 505:
		return "HTTP Version Not Supported"
	}
	return "Unknown"
}
