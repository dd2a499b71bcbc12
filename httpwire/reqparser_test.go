package httpwire

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestRequestParser(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		rest      string // bytes left for the next request
		partial   bool   // the request is incomplete
		method    string
		target    string
		body      string
		keepAlive bool
		requestID string
		expect    bool
	}{
		{name: "get", in: "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n", method: "GET", target: "/v1/models", keepAlive: true},
		{name: "bare LF", in: "GET /health HTTP/1.1\nHost: x\n\n", method: "GET", target: "/health", keepAlive: true},
		{name: "no headers", in: "GET / HTTP/1.1\r\n\r\n", method: "GET", target: "/", keepAlive: true},
		{name: "content-length", in: "POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", method: "POST", target: "/v1/completions", body: "{}", keepAlive: true},
		{name: "content-length list that agrees", in: "POST /a HTTP/1.1\r\nContent-Length: 2, 2\r\n\r\n{}", method: "POST", target: "/a", body: "{}", keepAlive: true},
		{name: "pipelined leaves the next request", in: "POST /a HTTP/1.1\r\nContent-Length: 1\r\n\r\nxGET /b HTTP/1.1\r\n\r\n", rest: "GET /b HTTP/1.1\r\n\r\n", method: "POST", target: "/a", body: "x", keepAlive: true},
		{name: "body incomplete", in: "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nab", partial: true, keepAlive: true},
		{name: "headers incomplete", in: "POST /a HTTP/1.1\r\nContent-Len", partial: true},
		{name: "chunked", in: "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n", method: "POST", target: "/a", body: "abcde", keepAlive: true},
		{name: "chunked, bare LF", in: "POST /a HTTP/1.1\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n", method: "POST", target: "/a", body: "abc", keepAlive: true},
		{name: "chunked with trailer", in: "POST /a HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n1\r\nz\r\n0\r\nX-T: 1\r\n\r\n", method: "POST", target: "/a", body: "z", keepAlive: true},
		{name: "chunked incomplete", in: "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab", partial: true, keepAlive: true},
		{name: "connection close", in: "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", method: "GET", target: "/"},
		{name: "close wins over keep-alive", in: "GET / HTTP/1.1\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", method: "GET", target: "/"},
		{name: "http/1.0 closes", in: "GET / HTTP/1.0\r\n\r\n", method: "GET", target: "/"},
		{name: "http/1.0 keep-alive", in: "GET / HTTP/1.0\r\nConnection: Upgrade, Keep-Alive\r\n\r\n", method: "GET", target: "/", keepAlive: true},
		{name: "request id", in: "GET / HTTP/1.1\r\nX-Request-Id:  bench-7 \r\n\r\n", method: "GET", target: "/", requestID: "bench-7", keepAlive: true},
		{name: "expect before the body", in: "POST /a HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n", partial: true, expect: true, keepAlive: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p RequestParser
			n, err := p.Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := len(tt.in) - len(tt.rest)
			if tt.partial {
				want = 0
			}
			if n != want {
				t.Fatalf("consumed %d bytes, want %d", n, want)
			}
			r := p.Request()
			if r.KeepAlive != tt.keepAlive {
				t.Errorf("KeepAlive = %v, want %v", r.KeepAlive, tt.keepAlive)
			}
			if r.ExpectContinue != tt.expect {
				t.Errorf("ExpectContinue = %v, want %v", r.ExpectContinue, tt.expect)
			}
			if n == 0 {
				if r.Method != nil || r.Body != nil {
					t.Errorf("incomplete request has method %q, body %q", r.Method, r.Body)
				}
				return
			}
			if string(r.Method) != tt.method || string(r.Target) != tt.target || string(r.Body) != tt.body {
				t.Errorf("got %s %s body %q, want %s %s body %q", r.Method, r.Target, r.Body, tt.method, tt.target, tt.body)
			}
			if got := r.Header("x-request-id"); string(got) != tt.requestID {
				t.Errorf("Header(x-request-id) = %q, want %q", got, tt.requestID)
			}
		})
	}
}

func TestRequestParserErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		status int
		part   string
		msg    string
	}{
		{"garbage", "\x00\x01\x02 hello\r\n\r\n", 400, PartRequestLine, "malformed"},
		{"blank request line", "\r\n\r\n", 400, PartRequestLine, "malformed request line"},
		{"no version", "GET /\r\n\r\n", 400, PartRequestLine, "malformed request line"},
		{"two spaces", "GET  / HTTP/1.1\r\n\r\n", 400, PartRequestLine, "malformed request line"},
		{"bad version", "GET / HTTP/2.0\r\n\r\n", 505, PartRequestLine, `unsupported HTTP version "HTTP/2.0"`},
		{"tab in method", "G\tT / HTTP/1.1\r\n\r\n", 400, PartRequestLine, "malformed method"},
		{"control byte in target", "GET /a\x01 HTTP/1.1\r\n\r\n", 400, PartRequestLine, "malformed request target"},
		{"header without colon", "GET / HTTP/1.1\r\nNoColon\r\n\r\n", 400, PartRequestHead, "malformed header line"},
		{"bad header name", "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400, PartRequestHead, "malformed header name"},
		{"line folding", "GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 400, PartRequestHead, "obsolete line folding"},
		{"control byte in value", "GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n", 400, PartRequestHead, "control byte"},
		{"bad content-length", "POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400, PartRequestHead, "malformed Content-Length"},
		{"negative content-length", "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, PartRequestHead, "malformed Content-Length"},
		{"conflicting content-length", "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, PartRequestHead, "conflicting"},
		{"both framings", "POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400, PartRequestHead, "both"},
		{"gzip transfer-encoding", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501, PartRequestHead, "unsupported Transfer-Encoding"},
		{"chunked twice", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 501, PartRequestHead, "more than once"},
		{"bad chunk size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, PartChunked, "malformed chunk size"},
		{"chunk longer than its size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", 400, PartChunked, "missing CRLF after chunk data"},
		{"chunk-size line too long", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;" + strings.Repeat("e", MaxLineBytes), 400, PartChunked, "chunk-size line longer"},
		{"bad trailer", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nno colon\r\n\r\n", 400, PartTrailer, "malformed header line"},
		{"body too large", "POST / HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n", 413, PartBody, "exceeds"},
		{"content-length overflows", "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400, PartRequestHead, "malformed Content-Length"},
		{"chunked too large", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffff\r\n", 413, PartChunked, "exceeds"},
		{"head too large", "GET / HTTP/1.1\r\nX: " + strings.Repeat("a", MaxRequestHeadBytes) + "\r\n", 431, PartRequestHead, "larger than"},
		{"too many fields", "GET / HTTP/1.1\r\n" + strings.Repeat("X: y\r\n", MaxHeaderFields+1) + "\r\n", 431, PartRequestHead, "more than 256 header fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p RequestParser
			n, err := p.Parse([]byte(tt.in))
			var perr *ProtocolError
			if !errors.As(err, &perr) {
				t.Fatalf("Parse = %d, %v; want a *ProtocolError", n, err)
			}
			if perr.Status != tt.status || perr.Part != tt.part || !strings.Contains(perr.Error(), tt.msg) {
				t.Errorf("error = %d %s %q, want %d %s containing %q", perr.Status, perr.Part, perr.Error(), tt.status, tt.part, tt.msg)
			}
			// The parser stays failed until Reset.
			if _, again := p.Parse([]byte("GET / HTTP/1.1\r\n\r\n")); again != err {
				t.Errorf("Parse after an error = %v, want the same error", again)
			}
			p.Reset()
			if n, err := p.Parse([]byte("GET / HTTP/1.1\r\n\r\n")); n == 0 || err != nil {
				t.Errorf("Parse after Reset = %d, %v", n, err)
			}
		})
	}
}

// TestRequestParserGrowingBuffer feeds requests as a server sees them, one
// byte more on every call: before the whole request is there the parser asks
// for more, and at the end it gives what a single call gives. A fresh parser
// on every prefix agrees.
func TestRequestParserGrowingBuffer(t *testing.T) {
	inputs := []string{
		"POST /v1/completions HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n{\"a\":\"bcd\"}",
		"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n7\r\n:\"bcd\"}\r\n0\r\nX: y\r\n\r\n",
	}
	for _, in := range inputs {
		var p RequestParser
		for i := 0; i < len(in); i++ {
			if n, err := p.Parse([]byte(in[:i])); n != 0 || err != nil {
				t.Fatalf("prefix of %d bytes: got %d, %v; want 0, nil", i, n, err)
			}
			var fresh RequestParser
			if n, err := fresh.Parse([]byte(in[:i])); n != 0 || err != nil {
				t.Fatalf("prefix of %d bytes, fresh parser: got %d, %v; want 0, nil", i, n, err)
			}
		}
		n, err := p.Parse([]byte(in))
		if n != len(in) || err != nil || string(p.Request().Body) != `{"a":"bcd"}` {
			t.Fatalf("whole request: got %d, %v, body %q", n, err, p.Request().Body)
		}
	}
}

// TestRequestParserMovedBuffer: the caller's buffer may move between calls
// (append grows it); the request's slices point into the last one.
func TestRequestParserMovedBuffer(t *testing.T) {
	in := "POST /v1/chat/completions HTTP/1.1\r\nX-Request-Id: r1\r\nContent-Length: 4\r\n\r\nbody"
	first := []byte(in[:len(in)-2])
	var p RequestParser
	if n, err := p.Parse(first); n != 0 || err != nil {
		t.Fatalf("first part: %d, %v", n, err)
	}
	moved := []byte(in)
	copy(first, bytes.Repeat([]byte{'#'}, len(first))) // the old buffer, reused
	n, err := p.Parse(moved)
	r := p.Request()
	if n != len(in) || err != nil || string(r.Method) != "POST" || string(r.Target) != "/v1/chat/completions" ||
		string(r.Header("X-REQUEST-ID")) != "r1" || string(r.Body) != "body" {
		t.Fatalf("got %d, %v: %q %q id %q body %q", n, err, r.Method, r.Target, r.Header("x-request-id"), r.Body)
	}
}

// TestRequestParserReadsAppendRequest: what the client encodes, the server
// side reads back.
func TestRequestParserReadsAppendRequest(t *testing.T) {
	reqs := []Request{
		{Method: "POST", Host: "127.0.0.1:8000", Path: "/v1/completions", ContentType: "application/json",
			Authorization: "Bearer sk-x", RequestID: "bench-0", Body: []byte(`{"prompt":"hi"}`)},
		{Method: "GET", Host: "[::1]:8000", Path: "/v1/models", Close: true,
			Headers: []Header{{Key: "X-Extra", Value: "a b"}}},
		{Method: "POST", Host: "h", Path: "/v1/embeddings"},
	}
	var buf []byte
	for _, r := range reqs {
		buf = AppendRequest(buf, &r)
	}
	var p RequestParser
	for i, want := range reqs {
		n, err := p.Parse(buf)
		if n == 0 || err != nil {
			t.Fatalf("request %d: %d, %v", i, n, err)
		}
		got := p.Request()
		if string(got.Method) != want.Method || string(got.Target) != want.Path || !bytes.Equal(got.Body, want.Body) ||
			got.KeepAlive == want.Close || string(got.Header("host")) != want.Host ||
			string(got.Header("x-request-id")) != want.RequestID {
			t.Errorf("request %d: got %s %s host %q id %q keep-alive %v body %q; want %+v",
				i, got.Method, got.Target, got.Header("host"), got.Header("x-request-id"), got.KeepAlive, got.Body, want)
		}
		buf = buf[n:]
	}
	if len(buf) != 0 {
		t.Errorf("%d bytes left over", len(buf))
	}
}

// parsedRequest is what parseRequests records of one request or the error
// that ended the input.
type parsedRequest struct {
	N                         int
	Method, Target, Body, ID  string
	KeepAlive, ExpectContinue bool
	Minor                     int
	ContentLength             int64
	Chunked                   bool
	Err                       string
	Status                    int
}

// parseRequests reads every request in data, handing the parser a buffer
// that grows to each of cuts in turn and then to all of data, as a server's
// reads would. It stops at the first error.
func parseRequests(t *testing.T, data []byte, cuts []int) []parsedRequest {
	var p RequestParser
	var got []parsedRequest
	start := 0
	for _, end := range append(cuts, len(data)) {
		for start <= end {
			n, err := p.Parse(data[start:end])
			if err != nil {
				var perr *ProtocolError
				if !errors.As(err, &perr) {
					t.Fatalf("error of type %T: %v", err, err)
				}
				switch perr.Status {
				case 400, 413, 431, 501, 505:
				default:
					t.Fatalf("error %q has status %d", err, perr.Status)
				}
				return append(got, parsedRequest{Err: err.Error(), Status: perr.Status})
			}
			if n == 0 {
				break
			}
			if n > end-start {
				t.Fatalf("consumed %d of %d bytes", n, end-start)
			}
			r := p.Request()
			if len(r.Method) == 0 || len(r.Target) == 0 || len(r.Body) > MaxRequestBodyBytes {
				t.Fatalf("implausible request: method %q target %q body %d bytes", r.Method, r.Target, len(r.Body))
			}
			got = append(got, parsedRequest{N: n, Method: string(r.Method), Target: string(r.Target),
				Body: string(r.Body), ID: string(r.Header("x-request-id")), KeepAlive: r.KeepAlive,
				ExpectContinue: r.ExpectContinue, Minor: r.Minor, ContentLength: r.ContentLength, Chunked: r.Chunked})
			start += n
		}
	}
	return got
}

// FuzzRequestParser feeds any bytes to a RequestParser, whole and through a
// buffer that grows byte by byte or in random steps: it must never panic,
// return only *ProtocolErrors with a status a server can send, and read the
// same requests (or fail the same way) however the bytes arrive.
func FuzzRequestParser(f *testing.F) {
	seeds := []string{
		"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /v1/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
		"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nT: 1\r\n\r\n",
		"GET / HTTP/1.0\r\nConnection: keep-alive, Upgrade\r\nX-Request-Id: r1\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffff\r\n",
		"POST / HTTP/1.1\nExpect: 100-continue\nContent-Length: 3\n\nabcGET /x HTTP/1.1\n\n",
		"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
		"GET / HTTP/2.0\r\n\r\n",
		"\r\n\r\n",
		"GET / HTTP/1.1\n\n",
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint64(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, cutSeed uint64) {
		whole := parseRequests(t, data, nil)
		check := func(how string, cuts []int) {
			if got := parseRequests(t, data, cuts); !reflect.DeepEqual(got, whole) {
				t.Fatalf("fed %s: got\n%+v\nwant (fed whole)\n%+v", how, got, whole)
			}
		}
		byteCuts := make([]int, 0, len(data))
		for i := 1; i < len(data); i++ {
			byteCuts = append(byteCuts, i)
		}
		check("byte by byte", byteCuts)
		rng := rand.New(rand.NewPCG(cutSeed, uint64(len(data))))
		for range 3 {
			check("in random pieces", randomCuts(rng, len(data)))
		}
		// Each request reads the same from exactly its own bytes.
		off := 0
		for i, r := range whole {
			if r.Err != "" {
				break
			}
			again := parseRequests(t, data[off:off+r.N], nil)
			if len(again) != 1 || !reflect.DeepEqual(again[0], r) {
				t.Fatalf("request %d alone: %+v, want %+v", i, again, r)
			}
			off += r.N
		}
	})
}

// benchRequests are BenchmarkRequestParser's inputs. A step > 0 hands the
// parser a buffer that grows by step bytes a call, as a large body arriving
// over many reads does.
func benchRequests() []struct {
	name string
	in   string
	step int
} {
	const head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\nx-request-id: bench-1\r\n"
	chunk := func(size, n int) string {
		return strings.Repeat(fmt.Sprintf("%x\r\n%s\r\n", size, strings.Repeat("x", size)), n) + "0\r\n\r\n"
	}
	return []struct {
		name string
		in   string
		step int
	}{
		{"content-length", head + "Content-Length: 120\r\n\r\n" + strings.Repeat("x", 120), 0},
		{"chunked", head + "Transfer-Encoding: chunked\r\n\r\n" + chunk(40, 3), 0},
		{"chunked-256KiB-in-16KiB-reads", head + "Transfer-Encoding: chunked\r\n\r\n" + chunk(4096, 64), 16 << 10},
	}
}

func BenchmarkRequestParser(b *testing.B) {
	for _, bc := range benchRequests() {
		b.Run(bc.name, func(b *testing.B) {
			in := []byte(bc.in)
			var p RequestParser
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				n, err := 0, error(nil)
				for end := bc.step; n == 0 && err == nil && bc.step > 0; end += bc.step {
					n, err = p.Parse(in[:min(end, len(in))])
				}
				if bc.step == 0 {
					n, err = p.Parse(in)
				}
				if n != len(in) || err != nil {
					b.Fatal(n, err)
				}
				if len(p.Request().Header("x-request-id")) == 0 {
					b.Fatal("no request id")
				}
			}
		})
	}
}
