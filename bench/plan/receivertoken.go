package plan

import (
	"fmt"
	"strings"
)

// ReceiverTokenHeader is the header an OTLP export must carry under
// --otlp-receiver-token token: a bearer token (RFC 6750's b64token:
// letters, digits, "-._~+/", then any "=") is "Authorization: Bearer
// <token>", what an exporter sends from
// OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer <token>"; anything else
// must be a header of its own, NAME=VALUE (that variable's form) or NAME:
// VALUE.
func ReceiverTokenHeader(token string) (name, value string, err error) {
	token = strings.TrimSpace(token)
	if isB64Token(token) {
		return "Authorization", "Bearer " + token, nil
	}
	i := strings.IndexAny(token, "=:")
	if i > 0 {
		name, value = strings.TrimSpace(token[:i]), strings.TrimSpace(token[i+1:])
	}
	if !isHeaderName(name) || value == "" || strings.ContainsAny(value, "\r\n\x00") {
		return "", "", fmt.Errorf("argument --otlp-receiver-token: invalid value %q: want a bearer token (letters, digits, -._~+/ and a trailing =) or a header NAME=VALUE", token)
	}
	return name, value, nil
}

// isB64Token reports whether s is RFC 6750's b64token.
func isB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for _, c := range []byte(body) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			return false
		}
	}
	return true
}

// isHeaderName reports whether s is an HTTP field name (RFC 9110's token).
func isHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
