package mock

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		rest      string // bytes left for the next request
		partial   bool   // the request is incomplete
		method    string
		target    string
		body      string
		close     bool
		requestID string
	}{
		{name: "get", in: "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n", method: "GET", target: "/v1/models"},
		{name: "bare LF", in: "GET /health HTTP/1.1\nHost: x\n\n", method: "GET", target: "/health"},
		{name: "no headers", in: "GET / HTTP/1.1\r\n\r\n", method: "GET", target: "/"},
		{name: "content-length", in: "POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", method: "POST", target: "/v1/completions", body: "{}"},
		{name: "pipelined leaves the next request", in: "POST /a HTTP/1.1\r\nContent-Length: 1\r\n\r\nxGET /b HTTP/1.1\r\n\r\n", rest: "GET /b HTTP/1.1\r\n\r\n", method: "POST", target: "/a", body: "x"},
		{name: "body incomplete", in: "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", partial: true},
		{name: "headers incomplete", in: "POST /a HTTP/1.1\r\nContent-Len", partial: true},
		{name: "chunked", in: "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n", method: "POST", target: "/a", body: "abcde"},
		{name: "chunked with trailer", in: "POST /a HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n1\r\nz\r\n0\r\nX-T: 1\r\n\r\n", method: "POST", target: "/a", body: "z"},
		{name: "chunked incomplete", in: "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab", partial: true},
		{name: "connection close", in: "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", method: "GET", target: "/", close: true},
		{name: "http/1.0 closes", in: "GET / HTTP/1.0\r\n\r\n", method: "GET", target: "/", close: true},
		{name: "http/1.0 keep-alive", in: "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", method: "GET", target: "/"},
		{name: "request id", in: "GET / HTTP/1.1\r\nX-Request-Id:  bench-7 \r\n\r\n", method: "GET", target: "/", requestID: "bench-7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req httpRequest
			var scratch []byte
			n, err := parseRequest([]byte(tt.in), &req, &scratch)
			if err != nil {
				t.Fatalf("parseRequest: %v", err)
			}
			want := len(tt.in) - len(tt.rest)
			if tt.partial {
				want = 0
			}
			if n != want {
				t.Fatalf("consumed %d bytes, want %d", n, want)
			}
			if n == 0 {
				return
			}
			if string(req.method) != tt.method || string(req.target) != tt.target || string(req.body) != tt.body {
				t.Errorf("got %s %s body %q, want %s %s body %q", req.method, req.target, req.body, tt.method, tt.target, tt.body)
			}
			if req.close != tt.close {
				t.Errorf("close = %v, want %v", req.close, tt.close)
			}
			if string(req.requestID) != tt.requestID {
				t.Errorf("requestID = %q, want %q", req.requestID, tt.requestID)
			}
		})
	}
}

func TestParseRequestErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		status int
		msg    string
	}{
		{"garbage", "\x00\x01\x02 hello\r\n\r\n", 400, "malformed"},
		{"no version", "GET /\r\n\r\n", 400, "malformed request line"},
		{"bad version", "GET / HTTP/2.0\r\n\r\n", 505, "unsupported protocol"},
		{"space in method", "G\tT / HTTP/1.1\r\n\r\n", 400, "malformed"},
		{"header without colon", "GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400, "malformed header line"},
		{"bad header name", "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400, "malformed header name"},
		{"control byte in value", "GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n", 400, "control byte"},
		{"bad content-length", "POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400, "malformed Content-Length"},
		{"negative content-length", "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "malformed Content-Length"},
		{"conflicting content-length", "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, "conflicting"},
		{"both framings", "POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "both"},
		{"gzip transfer-encoding", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "unsupported Transfer-Encoding"},
		{"bad chunk size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "malformed chunk size"},
		{"chunk too long", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", 400, "longer than its size"},
		{"body too large", "POST / HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n", 413, "exceeds"},
		{"chunked too large", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffff\r\n", 413, "exceeds"},
		{"header block too large", "GET / HTTP/1.1\r\nX: " + strings.Repeat("a", maxHeaderBytes) + "\r\n", 431, "exceeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req httpRequest
			var scratch []byte
			n, err := parseRequest([]byte(tt.in), &req, &scratch)
			rerr, ok := err.(*requestError)
			if !ok {
				t.Fatalf("parseRequest = %d, %v; want a *requestError", n, err)
			}
			if rerr.status != tt.status || !strings.Contains(rerr.msg, tt.msg) {
				t.Errorf("error = %d %q, want %d containing %q", rerr.status, rerr.msg, tt.status, tt.msg)
			}
		})
	}
}

// TestParseRequestSplits feeds a request in two pieces at every split
// point: before the whole request is there the parser must ask for more.
func TestParseRequestSplits(t *testing.T) {
	inputs := []string{
		"POST /v1/completions HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n{\"a\":\"bcd\"}",
		"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n7\r\n:\"bcd\"}\r\n0\r\n\r\n",
	}
	for _, in := range inputs {
		var req httpRequest
		var scratch []byte
		for i := 0; i < len(in); i++ {
			n, err := parseRequest([]byte(in[:i]), &req, &scratch)
			if n != 0 || err != nil {
				t.Fatalf("prefix of %d bytes: got %d, %v; want 0, nil", i, n, err)
			}
		}
		n, err := parseRequest([]byte(in), &req, &scratch)
		if n != len(in) || err != nil || string(req.body) != `{"a":"bcd"}` {
			t.Fatalf("whole request: got %d, %v, body %q", n, err, req.body)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	seeds := []string{
		"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
		"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nT: 1\r\n\r\n",
		"GET / HTTP/1.0\r\nConnection: keep-alive, Upgrade\r\nX-Request-Id: r1\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffff\r\n",
		"\r\n\r\n",
		"GET / HTTP/1.1\n\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var req httpRequest
		var scratch []byte
		n, err := parseRequest(b, &req, &scratch)
		if err != nil {
			if _, ok := err.(*requestError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if n < 0 || n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		if n == 0 {
			return
		}
		if len(req.body) > maxBodyBytes || len(req.method) == 0 || len(req.target) == 0 {
			t.Fatalf("implausible request: method %q target %q body %d bytes", req.method, req.target, len(req.body))
		}
		// The request must parse the same from exactly its own bytes.
		body := append([]byte(nil), req.body...)
		var again httpRequest
		n2, err := parseRequest(b[:n], &again, &scratch)
		if err != nil || n2 != n || !bytes.Equal(again.body, body) {
			t.Fatalf("reparse of the request's %d bytes: %d, %v", n, n2, err)
		}
	})
}

func BenchmarkParseRequest(b *testing.B) {
	in := []byte("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\nx-request-id: bench-1\r\nContent-Length: 120\r\n\r\n" + strings.Repeat("x", 120))
	var req httpRequest
	var scratch []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if n, err := parseRequest(in, &req, &scratch); n != len(in) || err != nil {
			b.Fatal(n, err)
		}
	}
}
