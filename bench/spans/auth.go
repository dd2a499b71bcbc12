package spans

import (
	"crypto/subtle"
	"strings"
)

// Auth is the header every export must carry (--otlp-receiver-token): a
// bearer token is Header "Authorization" and Value "Bearer <token>", as an
// exporter sends it from OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer
// <token>. An export without it is refused (HTTP 401, gRPC
// Unauthenticated) and counted, before its body is read.
type Auth struct {
	Header string
	Value  string
}

// allows reports whether one of values (the request's values of a.Header)
// is a.Value. The comparison takes the same time wherever the values
// differ; an Authorization scheme ("Bearer") matches in any case, as HTTP
// has it.
func (a *Auth) allows(values []string) bool {
	if a == nil {
		return true
	}
	want := a.Value
	ok := 0
	for _, got := range values {
		if strings.EqualFold(a.Header, "Authorization") {
			if ws, gs := strings.IndexByte(want, ' '), strings.IndexByte(got, ' '); ws > 0 && gs == ws && strings.EqualFold(got[:gs], want[:ws]) {
				got = want[:ws] + got[gs:]
			}
		}
		ok |= subtle.ConstantTimeCompare([]byte(got), []byte(want))
	}
	return ok == 1
}
