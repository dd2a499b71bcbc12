package cli

import (
	"strings"
	"testing"
)

func TestSplitURLCredentials(t *testing.T) {
	tests := []struct {
		raw, stripped, auth, err string
	}{
		{raw: "http://h:1", stripped: "http://h:1"},
		{raw: "http://h:1/a@b", stripped: "http://h:1/a@b"},
		{raw: "no scheme@h", stripped: "no scheme@h"},
		// base64("alice:pw")
		{raw: "http://alice:pw@h:1", stripped: "http://h:1", auth: "Basic YWxpY2U6cHc="},
		{raw: "https://alice@h/v1?x=@", stripped: "https://h/v1?x=@", auth: "Basic YWxpY2U6"},
		// Percent-decoded, "p@ss:w" as the password; "é" sent as Latin-1 0xe9.
		{raw: "http://al%20ice:p%40ss:w@h", stripped: "http://h", auth: "Basic YWwgaWNlOnBAc3M6dw=="},
		{raw: "http://%C3%A9:x@h", stripped: "http://h", auth: "Basic 6Tp4"},
		{raw: "http://u:%E2%82%AC@h", stripped: "http://h", err: "outside Latin-1"},
		{raw: "http://u:secret%zz@h", stripped: "http://h", err: "password before '@' has a bad %-escape"},
		{raw: "http://a%3Ab:x@h", stripped: "http://h", err: "must not contain ':'"},
	}
	for _, tt := range tests {
		stripped, auth, err := splitURLCredentials("--base-url", tt.raw)
		if stripped != tt.stripped || auth != tt.auth {
			t.Errorf("%q: stripped %q auth %q, want %q %q", tt.raw, stripped, auth, tt.stripped, tt.auth)
		}
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%q: %v", tt.raw, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q: error %v, want one with %q", tt.raw, err, tt.err)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("%q: the error shows the password: %v", tt.raw, err)
		}
	}
}

// TestURLCredentialsConfig: the credentials leave BaseURL and APIURL for
// URLAuthorization, and an explicit Authorization beside them is refused
// as aiohttp refuses it.
