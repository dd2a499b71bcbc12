package cli

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
)

// Credentials in --base-url (http://user:password@host:port) are what
// aiohttp turns into HTTP Basic authentication on every request of the
// session: benchmark requests as well as /v1/models, /tokenize, /metrics
// and profiling. stampede does the same for the base URL's origin alone
// (bench/endpoint), and keeps them out of everything it prints or saves:
// the base URL the run carries has the userinfo removed, and only the
// Authorization value remembers it. A --server-metrics URL's own
// credentials are split off the same way, for its scrape.

// splitURLCredentials removes the userinfo from raw, the value of flag
// ("scheme://userinfo@host..."), and returns what remains and the userinfo's Basic
// Authorization value ("" when raw has none). Like yarl, the user name and
// password are percent-decoded, and like aiohttp's BasicAuth they are sent
// Latin-1 encoded. Errors never quote the password.
func splitURLCredentials(flag, raw string) (stripped, authorization string, err error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw, "", nil
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return raw, "", nil
	}
	userinfo := authority[:at]
	stripped = scheme + "://" + rest[at+1:]
	user, password, _ := strings.Cut(userinfo, ":")
	if user, err = url.PathUnescape(user); err != nil {
		return stripped, "", fmt.Errorf("argument %s: the user name before '@' has a bad %%-escape (%v); write a literal %% as %%25", flag, err)
	}
	if password, err = url.PathUnescape(password); err != nil {
		return stripped, "", fmt.Errorf("argument %s: the password before '@' has a bad %%-escape; write a literal %% as %%25", flag)
	}
	if strings.Contains(user, ":") {
		return stripped, "", fmt.Errorf("argument %s: the user name must not contain ':' (HTTP Basic authentication separates it from the password with ':')", flag)
	}
	latin1, ok := toLatin1(user + ":" + password)
	if !ok {
		return stripped, "", fmt.Errorf("argument %s: the user name or password has a character outside Latin-1, "+
			"which HTTP Basic authentication (as aiohttp sends it) cannot carry", flag)
	}
	return stripped, "Basic " + base64.StdEncoding.EncodeToString(latin1), nil
}

// toLatin1 encodes s as ISO-8859-1; ok is false when a rune is above U+00FF.
func toLatin1(s string) (b []byte, ok bool) {
	b = make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return nil, false
		}
		b = append(b, byte(r))
	}
	return b, true
}
