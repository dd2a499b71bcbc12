package httpwire

import "fmt"

// Header is one user header (--header KEY=VALUE).
type Header struct{ Key, Value string }

// Request is everything needed to encode one HTTP/1.1 request.
type Request struct {
	Method        string // "POST" or "GET" (any token accepted)
	Host          string // Host header value, "host:port" ("[::1]:8000" for IPv6)
	Path          string // request target, e.g. "/v1/completions"
	ContentType   string // "" = no Content-Type header
	Authorization string // full value, e.g. "Bearer sk-..."; "" = none
	RequestID     string // x-request-id value; "" = none
	// Headers are the user's headers. A user header replaces a default of the
	// same name (case-insensitive: Host, User-Agent, Accept, Content-Type,
	// Authorization, Connection), as aiohttp's merged headers do. RequestID,
	// when set, wins over a user x-request-id, as in vllm bench serve, which
	// sets x-request-id after merging the user's headers.
	Headers []Header
	Body    []byte // Content-Length is always sent for POST (even 0)
	Close   bool   // send "Connection: close" instead of relying on keep-alive
}

// AppendRequest encodes r into dst and returns the extended slice: the request
// line, Host, User-Agent: stampede, Accept: */*, Content-Type, Content-Length,
// Authorization, x-request-id, the user headers, Connection: close (if
// r.Close), the blank line and the body.
//
// Content-Length is sent for POST, and for any other method with a non-empty
// body. Keep-alive is HTTP/1.1's default, so no Connection header is sent
// unless r.Close is set, as aiohttp does.
//
// AppendRequest validates nothing at run time: requests are encoded once,
// before the clock starts, after (*Request).Validate accepted them.
func AppendRequest(dst []byte, r *Request) []byte {
	dst = append(dst, r.Method...)
	dst = append(dst, ' ')
	dst = append(dst, r.Path...)
	dst = append(dst, " HTTP/1.1\r\n"...)
	dst = r.appendDefault(dst, "Host", r.Host)
	dst = r.appendDefault(dst, "User-Agent", "stampede")
	dst = r.appendDefault(dst, "Accept", "*/*")
	if r.ContentType != "" {
		dst = r.appendDefault(dst, "Content-Type", r.ContentType)
	}
	if r.Method == "POST" || len(r.Body) > 0 {
		dst = AppendContentLength(dst, len(r.Body))
	}
	if r.Authorization != "" {
		dst = r.appendDefault(dst, "Authorization", r.Authorization)
	}
	if r.RequestID != "" {
		dst = AppendHeader(dst, "x-request-id", r.RequestID)
	}
	for _, h := range r.Headers {
		if r.RequestID != "" && equalFoldString(h.Key, "x-request-id") {
			continue
		}
		dst = AppendHeader(dst, h.Key, h.Value)
	}
	if r.Close {
		dst = r.appendDefault(dst, "Connection", "close")
	}
	dst = AppendEndOfHeaders(dst)
	return append(dst, r.Body...)
}

// appendDefault appends a default header unless a user header of the same
// name replaces it.
func (r *Request) appendDefault(dst []byte, key, value string) []byte {
	for _, h := range r.Headers {
		if equalFoldString(h.Key, key) {
			return dst
		}
	}
	return AppendHeader(dst, key, value)
}

// Validate reports what in r would break the request's framing: a method
// that is not a token, a request target with spaces or control bytes, a
// header that ValidateHeader refuses, or a user header that would
// contradict the body framing AppendRequest writes (Content-Length,
// Transfer-Encoding). Errors name the header.
func (r *Request) Validate() error {
	if r.Method == "" {
		return fmt.Errorf("empty HTTP method")
	}
	if i := firstNonToken(r.Method); i >= 0 {
		return fmt.Errorf("HTTP method %q: byte %q is not allowed in a method name", r.Method, r.Method[i])
	}
	if r.Path == "" {
		return fmt.Errorf("empty request path")
	}
	for i := 0; i < len(r.Path); i++ {
		if c := r.Path[i]; c <= ' ' || c == 0x7f {
			return fmt.Errorf("request path %q: byte %q is not allowed in a request target (percent-encode it)", r.Path, c)
		}
	}
	defaults := [...]Header{
		{"Host", r.Host},
		{"Content-Type", r.ContentType},
		{"Authorization", r.Authorization},
		{"x-request-id", r.RequestID},
	}
	for _, h := range defaults {
		if err := validateValue(h); err != nil {
			return err
		}
	}
	if r.Host == "" && !r.hasUserHeader("Host") {
		return fmt.Errorf("empty Host: HTTP/1.1 requires a Host header")
	}
	for _, h := range r.Headers {
		if err := validateUserHeader(h); err != nil {
			return err
		}
	}
	return nil
}

func (r *Request) hasUserHeader(key string) bool {
	for _, h := range r.Headers {
		if equalFoldString(h.Key, key) {
			return true
		}
	}
	return false
}

func validateUserHeader(h Header) error {
	if err := ValidateHeader(h.Key, h.Value); err != nil {
		return err
	}
	if equalFoldString(h.Key, "Content-Length") || equalFoldString(h.Key, "Transfer-Encoding") {
		return fmt.Errorf("header %q cannot be set: the body's framing is derived from the request body", h.Key)
	}
	return nil
}

// ValidateHeader checks one header as RFC 9110 §5 requires: the name a
// token, the value visible characters, spaces and tabs (field-vchar, SP,
// HTAB; bytes 0x80–0xFF are allowed as obs-text), so no control byte (CR
// and LF would end the line early, the others servers refuse or pass on
// to logs and terminals). Errors name the header and the offending byte's
// position, never the value, which may be a secret.
func ValidateHeader(key, value string) error {
	if key == "" {
		return fmt.Errorf("a header has an empty name; write NAME=VALUE")
	}
	if i := firstNonToken(key); i >= 0 {
		return fmt.Errorf("header %q: byte %q is not allowed in a header name "+
			"(letters, digits and !#$%%&'*+-.^_`|~ only)", key, key[i])
	}
	return validateValue(Header{key, value})
}

// validateValue rejects control bytes in a header value.
func validateValue(h Header) error {
	for i := 0; i < len(h.Value); i++ {
		if c := h.Value[i]; (c < ' ' && c != '\t') || c == 0x7f {
			what := "a control character"
			if c == '\r' || c == '\n' {
				what = "a line break"
			}
			return fmt.Errorf("header %q: the value has %s (byte 0x%02x at offset %d); "+
				"a header value may hold visible characters, spaces and tabs only", h.Key, what, c, i)
		}
	}
	return nil
}

// firstNonToken returns the index of the first byte of s that is not an RFC
// 9110 tchar, or -1.
func firstNonToken(s string) int {
	for i := 0; i < len(s); i++ {
		if !isTokenByte(s[i]) {
			return i
		}
	}
	return -1
}

// isTokenByte reports whether c is an RFC 9110 tchar.
func isTokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// equalFoldString reports whether s and t are equal ignoring ASCII case.
func equalFoldString(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if toLower(s[i]) != toLower(t[i]) {
			return false
		}
	}
	return true
}

func toLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
