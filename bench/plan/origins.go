package plan

import (
	"net/url"
	"slices"
	"strings"
)

// Origin is the scheme, host and port of an http(s) URL, lower-case, the
// port written out ("http://127.0.0.1:8000", "https://h:443"): the server
// a URL sends to, whatever its path, query or credentials. ok is false for
// text that is not such a URL.
func Origin(rawURL string) (origin string, ok bool) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || u.Host == "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch {
	case scheme != "http" && scheme != "https":
		return "", false
	case port == "" && scheme == "http":
		port = "80"
	case port == "":
		port = "443"
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port, true
}

// Origins are the servers the run sends to, each once: the base URL's
// (model discovery, readiness, and the requests without front ends), each
// --server-urls front end's, and the --server-metrics scrape's.
func (p *Plan) Origins() []string {
	var out []string
	for _, u := range append(append([]string{p.BaseURL}, p.FrontEndURLs...), p.ScrapeURL) {
		if o, ok := Origin(u); ok && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}
