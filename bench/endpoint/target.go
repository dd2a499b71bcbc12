package endpoint

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"

	"github.com/stampede-bench/stampede/internal/py"
)

// Target is where benchmark requests go, split for the engine.
type Target struct {
	Network, Address string // "tcp", "host:port"
	HostHeader       string
	Path             string      // request target of --endpoint
	TLS              *tls.Config // nil for http://
}

// ParseTarget splits an http:// or https:// URL into what the engine
// dials and what the request line and Host header carry.
func ParseTarget(apiURL string, insecure bool) (Target, error) {
	u, err := url.Parse(apiURL)
	if err != nil {
		return Target{}, &py.Error{Type: "ValueError", Msg: fmt.Sprintf("invalid URL %q: %v", apiURL, err)}
	}
	var t Target
	port := u.Port()
	switch u.Scheme {
	case "http":
		if port == "" {
			port = "80"
		}
	case "https":
		if port == "" {
			port = "443"
		}
		t.TLS = &tls.Config{ServerName: u.Hostname(), InsecureSkipVerify: insecure}
	default:
		return Target{}, &py.Error{Type: "ValueError",
			Msg: fmt.Sprintf("URL %q: scheme %q is not supported (use http:// or https://)", apiURL, u.Scheme)}
	}
	if u.Hostname() == "" {
		return Target{}, &py.Error{Type: "ValueError", Msg: fmt.Sprintf("URL %q has no host", apiURL)}
	}
	t.Network = "tcp"
	t.Address = net.JoinHostPort(u.Hostname(), port)
	t.HostHeader = u.Host
	t.Path = u.RequestURI()
	return t, nil
}
