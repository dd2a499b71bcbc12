package endpoint

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/stampede-bench/stampede/bench/plan"
)

// Credentials stay with their origin. --header's pairs, $OPENAI_API_KEY's
// Bearer token and --base-url's user:password belong to the base URL's
// scheme, host and port; --server-metrics-header's and the user:password
// of --server-metrics' URL belong to that scrape. A control request to
// any other origin carries none of them, and neither does a redirect that
// leaves the origin of the request it follows (net/http keeps
// Authorization across ports of one host and every other header across
// hosts, so the client's redirect policy removes them itself).

// Origin is a URL's scheme, host and port, the port written out.
type Origin struct{ Scheme, Host, Port string }

// OriginOf is u's origin; a URL without a host has the zero Origin.
func OriginOf(u *url.URL) Origin {
	if u == nil || u.Host == "" {
		return Origin{}
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return Origin{Scheme: scheme, Host: strings.ToLower(u.Hostname()), Port: port}
}

// originOfURL is OriginOf(raw), the zero Origin when raw does not parse.
func originOfURL(raw string) Origin {
	u, err := url.Parse(raw)
	if err != nil {
		return Origin{}
	}
	return OriginOf(u)
}

// SameOrigin reports whether a and b are URLs of one origin.
func SameOrigin(a, b string) bool {
	oa, ob := originOfURL(a), originOfURL(b)
	return oa != Origin{} && oa == ob
}

// originTransport adds the base URL's Basic authentication to control
// requests for the base origin that set no Authorization, as aiohttp's
// session does for a URL with credentials, and to no other origin.
type originTransport struct {
	base          http.RoundTripper
	origin        Origin
	authorization string
}

func (t originTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.authorization == "" || req.Header.Get("Authorization") != "" || OriginOf(req.URL) != t.origin {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", t.authorization)
	return t.base.RoundTrip(req)
}

// credentialKeys are the header names that carry a credential in cfg: the
// authentication headers and every header the user gave, canonical.
func credentialKeys(cfg *plan.Plan) map[string]bool {
	keys := map[string]bool{"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Cookie2": true}
	for _, hs := range [][]plan.Header{cfg.Headers, cfg.ScrapeHeaders} {
		for _, h := range hs {
			keys[http.CanonicalHeaderKey(h.Key)] = true
		}
	}
	return keys
}

// errTooManyRedirects is net/http's own limit, kept by the policy below.
var errTooManyRedirects = errors.New("stopped after 10 redirects")

// keepCredentialsHome is the control client's redirect policy: a hop to
// an origin other than the first request's loses every credential header,
// which net/http copied from the first request.
func keepCredentialsHome(keys map[string]bool) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errTooManyRedirects
		}
		if OriginOf(req.URL) == OriginOf(via[0].URL) {
			return nil
		}
		for k := range req.Header {
			if keys[http.CanonicalHeaderKey(k)] {
				req.Header.Del(k)
			}
		}
		return nil
	}
}

// HeadersFor is the --header pairs a control request to rawURL carries:
// all of them on the base URL's origin, none elsewhere.
func (s *Server) HeadersFor(rawURL string) []plan.Header {
	if SameOrigin(rawURL, s.cfg.BaseURL) {
		return s.cfg.Headers
	}
	return nil
}

// ScrapeHeaders are the headers of a --server-metrics scrape: --header's
// when its URL is on the base origin, then the URL's own Basic
// authentication and --server-metrics-header's, which replace a pair of
// the same name.
func (s *Server) ScrapeHeaders() []plan.Header {
	c := s.cfg
	var hs []plan.Header
	set := func(key, value string) {
		for i := range hs {
			if strings.EqualFold(hs[i].Key, key) {
				hs[i].Value = value
				return
			}
		}
		hs = append(hs, plan.Header{Key: key, Value: value})
	}
	for _, h := range s.HeadersFor(c.ServerMetricsURL()) {
		set(h.Key, h.Value)
	}
	if c.ScrapeAuthorization != "" {
		set("Authorization", c.ScrapeAuthorization)
	}
	for _, h := range c.ScrapeHeaders {
		set(h.Key, h.Value)
	}
	return hs
}
