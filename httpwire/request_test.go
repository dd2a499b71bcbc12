package httpwire

import (
	"bufio"
	"bytes"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/request")

var requestCases = []struct {
	name string
	req  Request
}{
	{"completions", Request{
		Method: "POST", Host: "localhost:8000", Path: "/v1/completions",
		ContentType: "application/json", Authorization: "Bearer sk-test", RequestID: "bench-1a2b3c4d-0",
		Body: []byte(`{"model":"m","prompt":"Hello","max_tokens":16,"stream":true}`),
	}},
	{"user headers replace defaults", Request{
		Method: "POST", Host: "localhost:8000", Path: "/v1/chat/completions",
		ContentType: "application/json", Authorization: "Bearer from-env", RequestID: "r-7",
		Headers: []Header{
			{"authorization", "Bearer from-flag"},
			{"USER-AGENT", "bench/1"},
			{"X-Tenant", "a"},
			{"Content-Type", "application/json; charset=utf-8"},
			{"X-Request-Id", "ignored: the request's own id wins"},
		},
		Body: []byte(`{"messages":[]}`),
	}},
	{"user x-request-id without an id", Request{
		Method: "POST", Host: "example.com", Path: "/v1/completions",
		Headers: []Header{{"x-request-id", "fixed"}},
		Body:    []byte(`{}`),
	}},
	{"get models and close", Request{
		Method: "GET", Host: "[::1]:8000", Path: "/v1/models", Close: true,
		Headers: []Header{{"X-Api-Key", "k"}},
	}},
	{"post without body", Request{Method: "POST", Host: "127.0.0.1:30000", Path: "/start_profile"}},
	{"user Host and Connection", Request{
		Method: "POST", Host: "10.0.0.1:8000", Path: "/v1/completions", Close: true,
		Headers: []Header{{"host", "api.internal"}, {"connection", "Close"}},
		Body:    []byte(`{}`),
	}},
}

func TestAppendRequestGolden(t *testing.T) {
	for _, c := range requestCases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.req.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			prefix := []byte("kept")
			got := AppendRequest(prefix, &c.req)
			if !bytes.HasPrefix(got, prefix) {
				t.Fatalf("AppendRequest overwrote dst: %q", got)
			}
			got = got[len(prefix):]
			path := filepath.Join("testdata", "request", strings.ReplaceAll(c.name, " ", "_")+".http")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./httpwire -run TestAppendRequestGolden -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("AppendRequest =\n%s\nwant (%s)\n%s", got, path, want)
			}
			checkWithNetHTTP(t, &c.req, got)
		})
	}
}

// checkWithNetHTTP reads the encoded request with net/http's server-side
// parser and checks that it means what r says.
func checkWithNetHTTP(t *testing.T, r *Request, wire []byte) {
	t.Helper()
	hr, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(wire)))
	if err != nil {
		t.Fatalf("net/http cannot read the request: %v", err)
	}
	body, err := io.ReadAll(hr.Body)
	if err != nil {
		t.Fatalf("net/http cannot read the body: %v", err)
	}
	if hr.Method != r.Method || hr.RequestURI != r.Path || !bytes.Equal(body, r.Body) || hr.Close != r.Close && !r.hasUserHeader("Connection") {
		t.Errorf("net/http read %s %s body %q close %v; want %s %s body %q close %v",
			hr.Method, hr.RequestURI, body, hr.Close, r.Method, r.Path, r.Body, r.Close)
	}
	if r.RequestID != "" {
		if got := hr.Header.Values("X-Request-Id"); len(got) != 1 || got[0] != r.RequestID {
			t.Errorf("x-request-id = %q, want only %q", got, r.RequestID)
		}
	}
	for _, h := range r.Headers {
		if equalFoldString(h.Key, "host") {
			if hr.Host != h.Value {
				t.Errorf("Host = %q, want the user's %q", hr.Host, h.Value)
			}
			continue
		}
		if equalFoldString(h.Key, "x-request-id") && r.RequestID != "" || equalFoldString(h.Key, "connection") {
			continue
		}
		if got := hr.Header.Values(h.Key); len(got) != 1 || got[0] != h.Value {
			t.Errorf("header %s = %q, want only the user's %q", h.Key, got, h.Value)
		}
	}
}

func TestValidate(t *testing.T) {
	valid := func(edit func(r *Request)) Request {
		r := Request{Method: "POST", Host: "localhost:8000", Path: "/v1/completions", ContentType: "application/json"}
		edit(&r)
		return r
	}
	cases := []struct {
		name string
		req  Request
		err  string // "" = valid
	}{
		{"valid", valid(func(*Request) {}), ""},
		{"any token method", valid(func(r *Request) { r.Method = "PROPFIND" }), ""},
		{"empty Host replaced by user's", valid(func(r *Request) { r.Host = ""; r.Headers = []Header{{"Host", "h"}} }), ""},
		{"empty user value", valid(func(r *Request) { r.Headers = []Header{{"X-Empty", ""}} }), ""},
		{"user value with UTF-8", valid(func(r *Request) { r.Headers = []Header{{"X-Name", "café"}} }), ""},
		{"empty method", valid(func(r *Request) { r.Method = "" }), "empty HTTP method"},
		{"method with space", valid(func(r *Request) { r.Method = "PO ST" }), `HTTP method "PO ST": byte ' ' is not allowed in a method name`},
		{"empty path", valid(func(r *Request) { r.Path = "" }), "empty request path"},
		{"path with space", valid(func(r *Request) { r.Path = "/v1/a b" }),
			`request path "/v1/a b": byte ' ' is not allowed in a request target (percent-encode it)`},
		{"path with LF", valid(func(r *Request) { r.Path = "/v1\nX: y" }),
			`request path "/v1\nX: y": byte '\n' is not allowed in a request target (percent-encode it)`},
		{"empty Host", valid(func(r *Request) { r.Host = "" }), "empty Host: HTTP/1.1 requires a Host header"},
		{"Host with CRLF", valid(func(r *Request) { r.Host = "a\r\nX: y" }),
			`header "Host": the value has a line break (byte 0x0d at offset 1); a header value may hold visible characters, spaces and tabs only`},
		{"Authorization with LF", valid(func(r *Request) { r.Authorization = "Bearer a\nb" }),
			`header "Authorization": the value has a line break (byte 0x0a at offset 8); a header value may hold visible characters, spaces and tabs only`},
		{"request id with NUL", valid(func(r *Request) { r.RequestID = "a\x00" }),
			`header "x-request-id": the value has a control character (byte 0x00 at offset 1); a header value may hold visible characters, spaces and tabs only`},
		{"Content-Type with CR", valid(func(r *Request) { r.ContentType = "a\r" }),
			`header "Content-Type": the value has a line break (byte 0x0d at offset 1); a header value may hold visible characters, spaces and tabs only`},
		{"empty user name", valid(func(r *Request) { r.Headers = []Header{{"", "v"}} }), "a header has an empty name; write NAME=VALUE"},
		{"user name with space", valid(func(r *Request) { r.Headers = []Header{{"X Tenant", "v"}} }),
			"header \"X Tenant\": byte ' ' is not allowed in a header name (letters, digits and !#$%&'*+-.^_`|~ only)"},
		{"user name with colon", valid(func(r *Request) { r.Headers = []Header{{"X-A:", "v"}} }),
			"header \"X-A:\": byte ':' is not allowed in a header name (letters, digits and !#$%&'*+-.^_`|~ only)"},
		{"user value with CRLF", valid(func(r *Request) { r.Headers = []Header{{"X-A", "v\r\nX-B: w"}} }),
			`header "X-A": the value has a line break (byte 0x0d at offset 1); a header value may hold visible characters, spaces and tabs only`},
		{"user value with SOH", valid(func(r *Request) { r.Headers = []Header{{"X-A", "a\x01b"}} }),
			`header "X-A": the value has a control character (byte 0x01 at offset 1); a header value may hold visible characters, spaces and tabs only`},
		{"user value with ESC", valid(func(r *Request) { r.Headers = []Header{{"X-A", "\x1b[31m"}} }),
			`header "X-A": the value has a control character (byte 0x1b at offset 0); a header value may hold visible characters, spaces and tabs only`},
		{"user value with DEL", valid(func(r *Request) { r.Headers = []Header{{"X-A", "ab\x7f"}} }),
			`header "X-A": the value has a control character (byte 0x7f at offset 2); a header value may hold visible characters, spaces and tabs only`},
		{"user value with tab and obs-text", valid(func(r *Request) { r.Headers = []Header{{"X-A", "a\tb \xff"}} }), ""},
		{"user Content-Length", valid(func(r *Request) { r.Headers = []Header{{"content-length", "5"}} }),
			`header "content-length" cannot be set: the body's framing is derived from the request body`},
		{"user Transfer-Encoding", valid(func(r *Request) { r.Headers = []Header{{"Transfer-Encoding", "chunked"}} }),
			`header "Transfer-Encoding" cannot be set: the body's framing is derived from the request body`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.req.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.err {
				t.Fatalf("Validate() = %q, want %q", got, c.err)
			}
		})
	}
}

func TestAppendRequestAllocations(t *testing.T) {
	r := requestCases[1].req
	dst := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { dst = AppendRequest(dst[:0], &r) }); n != 0 {
		t.Errorf("AppendRequest into a large enough buffer allocates %v times, want 0", n)
	}
}
