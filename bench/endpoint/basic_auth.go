package endpoint

import "net/http"

// basicAuthTransport adds the URL's Authorization to control requests
// that set none, as aiohttp's session does for a URL with credentials.
type basicAuthTransport struct {
	base          http.RoundTripper
	authorization string
}

func (t basicAuthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", t.authorization)
	return t.base.RoundTrip(req)
}
