package httpwire

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// parseCase is one response and what parsing it must report. Every case is
// fed whole, byte by byte and split at every point (checkSplitInvariance), so
// the expectations hold however the bytes arrive.
type parseCase struct {
	name   string
	resp   string // the response
	extra  string // bytes after the response that Feed must leave unconsumed
	head   bool   // the request was HEAD
	close  bool   // the peer closes the connection after resp+extra
	events string // handler calls, consecutive bodies merged: "head,body,end"
	err    string // the exact error text; "" = none

	// Checked when events include "head".
	status  int
	reason  string
	ctype   string
	cl      int64
	chunked bool
	body    string
	ka      bool // Head.KeepAlive, and Parser.KeepAlive once done
}

func runParseCases(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			input := []byte(c.resp + c.extra)
			got := checkSplitInvariance(t, input, c.head, c.close)
			if got.Err != c.err {
				t.Fatalf("error = %q, want %q", got.Err, c.err)
			}
			if got.Events != c.events {
				t.Fatalf("events = %q, want %q", got.Events, c.events)
			}
			if c.err == "" && got.Consumed != len(c.resp) {
				t.Errorf("consumed %d bytes, want %d (the response without the extra bytes)", got.Consumed, len(c.resp))
			}
			if got.Body != c.body {
				t.Errorf("body = %q, want %q", got.Body, c.body)
			}
			if !strings.Contains(c.events, "head") {
				return
			}
			h := got.Heads[len(got.Heads)-1]
			if h.StatusCode != c.status || h.Reason != c.reason || h.ContentType != c.ctype ||
				h.ContentLength != c.cl || h.Chunked != c.chunked || h.KeepAlive != c.ka {
				t.Errorf("head = %+v, want status %d reason %q content-type %q content-length %d chunked %v keep-alive %v",
					h, c.status, c.reason, c.ctype, c.cl, c.chunked, c.ka)
			}
			if got.Done && got.KeepAlive != c.ka {
				t.Errorf("Parser.KeepAlive() = %v, want %v", got.KeepAlive, c.ka)
			}
		})
	}
}

const (
	ok5 = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
	// next is a second response pipelined after the one under test.
	next = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"
)

func TestParseStatusLine(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "HTTP/1.1", resp: ok5, events: "head,body,end", status: 200, reason: "OK", cl: 5, body: "hello", ka: true},
		{name: "HTTP/1.0", resp: "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello",
			events: "head,body,end", status: 200, reason: "OK", cl: 5, body: "hello"},
		{name: "multi-word reason", resp: "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
			events: "head,end", status: 404, reason: "Not Found", cl: 0, ka: true},
		{name: "no reason, no space", resp: "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
			events: "head,end", status: 200, cl: 0, ka: true},
		{name: "empty reason", resp: "HTTP/1.1 500 \r\nContent-Length: 0\r\n\r\n",
			events: "head,end", status: 500, cl: 0, ka: true},
		{name: "HTTP/2.0", resp: "HTTP/2.0 200 OK\r\n\r\n",
			err: `unsupported HTTP version "HTTP/2.0" (HTTP/1.0 and HTTP/1.1 are accepted)`},
		{name: "HTTP/2", resp: "HTTP/2 200\r\n\r\n",
			err: `unsupported HTTP version "HTTP/2" (HTTP/1.0 and HTTP/1.1 are accepted)`},
		{name: "HTTP/1.2", resp: "HTTP/1.2 200 OK\r\n\r\n",
			err: `unsupported HTTP version "HTTP/1.2" (HTTP/1.0 and HTTP/1.1 are accepted)`},
		{name: "lower-case protocol", resp: "http/1.1 200 OK\r\n\r\n", err: `malformed status line "http/1.1 200 OK"`},
		{name: "not HTTP", resp: "ICY 200 OK\r\n\r\n", err: `malformed status line "ICY 200 OK"`},
		{name: "no status code", resp: "HTTP/1.1\r\n\r\n", err: `malformed status line "HTTP/1.1"`},
		{name: "two-digit code", resp: "HTTP/1.1 20 OK\r\n\r\n", err: `malformed status line "HTTP/1.1 20 OK"`},
		{name: "four-digit code", resp: "HTTP/1.1 2000 OK\r\n\r\n", err: `malformed status line "HTTP/1.1 2000 OK"`},
		{name: "double space", resp: "HTTP/1.1  200 OK\r\n\r\n", err: `malformed status line "HTTP/1.1  200 OK"`},
		{name: "code below 100", resp: "HTTP/1.1 099 X\r\n\r\n", err: `status code "099" out of range 100-599`},
		{name: "code above 599", resp: "HTTP/1.1 600 X\r\n\r\n", err: `status code "600" out of range 100-599`},
		{name: "NUL in reason", resp: "HTTP/1.1 200 O\x00K\r\n\r\n",
			err: `invalid byte '\x00' in reason phrase of status line "HTTP/1.1 200 O\x00K"`},
		{name: "blank first line", resp: "\r\nHTTP/1.1 200 OK\r\n\r\n", err: `malformed status line ""`},
		{name: "bare LF line ends", resp: "HTTP/1.1 200 OK\nContent-Length: 2\n\nhi",
			events: "head,body,end", status: 200, reason: "OK", cl: 2, body: "hi", ka: true},
		{name: "mixed line ends", resp: "HTTP/1.1 200 OK\nContent-Length: 2\r\n\nhi",
			events: "head,body,end", status: 200, reason: "OK", cl: 2, body: "hi", ka: true},
	})
}

func TestParseInterimResponses(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "100 Continue skipped",
			resp:   "HTTP/1.1 100 Continue\r\n\r\n" + ok5,
			events: "head,body,end", status: 200, reason: "OK", cl: 5, body: "hello", ka: true},
		{name: "several interim responses with fields",
			resp: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n" +
				"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
			events: "head,end", status: 200, reason: "OK", cl: 0, ka: true},
		{name: "interim fields are checked", resp: "HTTP/1.1 103 Early Hints\r\nbad line\r\n\r\n" + ok5,
			err: `malformed header line "bad line": no colon`},
		{name: "101 is an error", resp: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
			err: `unexpected 101 "Switching Protocols": connection upgrades are not supported`},
	})
}

func TestParseHeaderFields(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "names are case-insensitive",
			resp:   "HTTP/1.1 200 OK\r\ncontent-TYPE: text/event-stream\r\nCONTENT-length: 2\r\nconnection: CLOSE\r\n\r\nhi",
			events: "head,body,end", status: 200, reason: "OK", ctype: "text/event-stream", cl: 2, body: "hi"},
		{name: "values are trimmed", resp: "HTTP/1.1 200 OK\r\nContent-Type: \t application/json \t\r\nContent-Length:2\r\n\r\nhi",
			events: "head,body,end", status: 200, reason: "OK", ctype: "application/json", cl: 2, body: "hi", ka: true},
		{name: "first Content-Type wins", resp: "HTTP/1.1 200 OK\r\nContent-Type: a/b\r\nContent-Type: c/d\r\nContent-Length: 0\r\n\r\n",
			events: "head,end", status: 200, reason: "OK", ctype: "a/b", cl: 0, ka: true},
		{name: "empty value", resp: "HTTP/1.1 200 OK\r\nX-Empty:\r\nContent-Length: 0\r\n\r\n",
			events: "head,end", status: 200, reason: "OK", cl: 0, ka: true},
		{name: "obsolete line folding", resp: "HTTP/1.1 200 OK\r\nX-A: b\r\n c\r\n\r\n",
			err: `obsolete line folding is not supported (line " c")`},
		{name: "folding with a tab", resp: "HTTP/1.1 200 OK\r\nX-A: b\r\n\tc\r\n\r\n",
			err: `obsolete line folding is not supported (line "\tc")`},
		{name: "whitespace before the first field", resp: "HTTP/1.1 200 OK\r\n X-A: b\r\n\r\n",
			err: `obsolete line folding is not supported (line " X-A: b")`},
		{name: "whitespace before colon", resp: "HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello",
			err: `malformed header name "Content-Length ": byte ' ' is not allowed`},
		{name: "no colon", resp: "HTTP/1.1 200 OK\r\nContent-Length 5\r\n\r\nhello",
			err: `malformed header line "Content-Length 5": no colon`},
		{name: "empty name", resp: "HTTP/1.1 200 OK\r\n: x\r\n\r\n", err: `malformed header line ": x": empty name`},
		{name: "CR in value", resp: "HTTP/1.1 200 OK\r\nX-A: b\rc\r\n\r\n", err: `header "X-A": invalid byte '\r' in value`},
		{name: "CRCRLF", resp: "HTTP/1.1 200 OK\r\nX-A: b\r\r\n\r\n", err: `header "X-A": invalid byte '\r' in value`},
		{name: "NUL in value", resp: "HTTP/1.1 200 OK\r\nX-A: b\x00\r\n\r\n", err: `header "X-A": invalid byte '\x00' in value`},
		{name: "obs-text in value is accepted", resp: "HTTP/1.1 200 OK\r\nX-A: caf\xe9\r\nContent-Length: 0\r\n\r\n",
			events: "head,end", status: 200, reason: "OK", cl: 0, ka: true},
	})
}

func TestParseContentLength(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "body", resp: ok5, extra: next, events: "head,body,end", status: 200, reason: "OK", cl: 5, body: "hello", ka: true},
		{name: "zero", resp: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", extra: next,
			events: "head,end", status: 200, reason: "OK", cl: 0, ka: true},
		{name: "equal duplicates", resp: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
			events: "head,body,end", status: 200, reason: "OK", cl: 5, body: "hello", ka: true},
		{name: "equal list", resp: "HTTP/1.1 200 OK\r\nContent-Length: 5 ,5\r\n\r\nhello",
			events: "head,body,end", status: 200, reason: "OK", cl: 5, body: "hello", ka: true},
		{name: "conflicting duplicates", resp: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
			err: "conflicting Content-Length values 5 and 6"},
		{name: "conflicting list", resp: "HTTP/1.1 200 OK\r\nContent-Length: 5, 50\r\n\r\nhello",
			err: "conflicting Content-Length values 5 and 50"},
		{name: "empty", resp: "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", err: `malformed Content-Length ""`},
		{name: "empty list element", resp: "HTTP/1.1 200 OK\r\nContent-Length: 5,\r\n\r\nhello", err: `malformed Content-Length "5,"`},
		{name: "negative", resp: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", err: `malformed Content-Length "-1"`},
		{name: "plus sign", resp: "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", err: `malformed Content-Length "+5"`},
		{name: "hex", resp: "HTTP/1.1 200 OK\r\nContent-Length: 0x5\r\n\r\nhello", err: `malformed Content-Length "0x5"`},
		{name: "overflow", resp: "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\n",
			err: `malformed Content-Length "9223372036854775808"`},
		{name: "largest", resp: "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\nabc", close: true,
			events: "head,body", status: 200, reason: "OK", cl: 9223372036854775807, body: "abc", ka: true,
			err: "connection closed after 3 of 9223372036854775807 body bytes: unexpected EOF"},
	})
}

func TestParseChunked(t *testing.T) {
	const te = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	chunked := func(name, body, want string) parseCase {
		return parseCase{name: name, resp: te + body, extra: next, events: "head,body,end",
			status: 200, reason: "OK", cl: -1, chunked: true, body: want, ka: true}
	}
	// failingAfter is a chunked body that fails after delivering body.
	failingAfter := func(name, in, body, err string) parseCase {
		events := "head"
		if body != "" {
			events += ",body"
		}
		return parseCase{name: name, resp: te + in, events: events, status: 200, reason: "OK", cl: -1, chunked: true,
			body: body, ka: true, err: err}
	}
	failing := func(name, in, err string) parseCase { return failingAfter(name, in, "", err) }
	cases := []parseCase{
		chunked("two chunks", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world"),
		chunked("upper and lower hex", "A\r\n0123456789\r\na\r\nabcdefghij\r\n0\r\n\r\n", "0123456789abcdefghij"),
		chunked("leading zeros", "0005\r\nhello\r\n00000000000000000000\r\n\r\n", "hello"),
		chunked("extensions ignored", "5;name=value\r\nhello\r\n1;a;b=\"q;x\"\r\n!\r\n0;last\r\n\r\n", "hello!"),
		chunked("whitespace before extension", "5 \t;ext\r\nhello\r\n0 \r\n\r\n", "hello"),
		chunked("trailers discarded", "5\r\nhello\r\n0\r\nX-Trailer: 1\r\nServer-Timing: total;dur=3\r\n\r\n", "hello"),
		chunked("bare LF everywhere", "5\nhello\n0\nX-T: 1\n\n", "hello"),
		chunked("SSE events", "f\r\ndata: {\"a\":1}\n\n\r\n10\r\ndata: [DONE]\n\n\r\n\r\n0\r\n\r\n",
			"data: {\"a\":1}\n\ndata: [DONE]\n\n\r\n"),
		{name: "chunked wins over Content-Length, connection closed after",
			resp:   "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
			events: "head,body,end", status: 200, reason: "OK", cl: -1, chunked: true, body: "hello"},
		{name: "HTTP/1.0 chunked is read, connection closed after",
			resp:   "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
			events: "head,body,end", status: 200, reason: "OK", cl: -1, chunked: true, body: "hello"},
		{name: "coding names are case-insensitive",
			resp:   "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n",
			events: "head,end", status: 200, reason: "OK", cl: -1, chunked: true, ka: true},
		failing("malformed size", "zz\r\nhello\r\n", `malformed chunk size "zz"`),
		failing("empty size", "\r\nhello\r\n", `malformed chunk size ""`),
		failing("size then garbage", "5x\r\nhello\r\n", `malformed chunk size "5x"`),
		failing("negative size", "-5\r\nhello\r\n", `malformed chunk size "-5"`),
		failing("CR inside size line", "5\r5\r\nhello\r\n", `malformed chunk size "5\r5"`),
		failing("CR inside extension", "5;a\rb\r\nhello\r\n", `malformed chunk size "5;a\rb"`),
		failing("size overflow", "8000000000000000\r\n", `chunk size "8000000000000000" too large`),
		failing("size overflow with leading zeros", "0018000000000000000\r\n", `chunk size "0018000000000000000" too large`),
		{name: "largest size", resp: te + "7fffffffffffffff\r\nabc", close: true,
			events: "head,body", status: 200, reason: "OK", cl: -1, chunked: true, body: "abc", ka: true,
			err: "connection closed in chunked body: unexpected EOF"},
		failingAfter("missing CRLF after data", "5\r\nhelloX\r\n0\r\n\r\n", "hello",
			`missing CRLF after chunk data (found 'X')`),
		failingAfter("CR without LF after data", "5\r\nhello\rX\r\n0\r\n\r\n", "hello",
			`missing CRLF after chunk data (found 'X')`),
		failingAfter("two CRs after data", "5\r\nhello\r\r\n0\r\n\r\n", "hello",
			`missing CRLF after chunk data (found '\r')`),
		failingAfter("chunk longer than its size", "3\r\nhello\r\n0\r\n\r\n", "hel",
			`missing CRLF after chunk data (found 'l')`),
		failingAfter("malformed trailer", "5\r\nhello\r\n0\r\nnot a field\r\n\r\n", "hello",
			`malformed header line "not a field": no colon`),
		{name: "folded trailer", resp: te + "0\r\nX-T: a\r\n b\r\n\r\n",
			events: "head", status: 200, reason: "OK", cl: -1, chunked: true, ka: true,
			err: `obsolete line folding is not supported (line " b")`},
	}
	runParseCases(t, cases)
}

func TestParseTransferEncoding(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "gzip", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
			err: `unsupported Transfer-Encoding "gzip" (only chunked is accepted)`},
		{name: "gzip, chunked", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
			err: `unsupported Transfer-Encoding "gzip, chunked" (only chunked is accepted)`},
		{name: "chunked then gzip on another line", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n",
			err: `unsupported Transfer-Encoding "gzip" (only chunked is accepted)`},
		{name: "identity", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n",
			err: `unsupported Transfer-Encoding "identity" (only chunked is accepted)`},
		{name: "chunked twice", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
			err: `Transfer-Encoding "chunked, chunked" applies chunked more than once`},
		{name: "chunked twice on two lines", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
			err: `Transfer-Encoding "chunked" applies chunked more than once`},
		{name: "empty", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n\r\n",
			err: `unsupported Transfer-Encoding "" (only chunked is accepted)`},
		{name: "empty list elements", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: , chunked,\r\n\r\n0\r\n\r\n",
			events: "head,end", status: 200, reason: "OK", cl: -1, chunked: true, ka: true},
	})
}

func TestParseCloseDelimited(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "body until close", resp: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello, world", close: true,
			events: "head,body,end", status: 200, reason: "OK", ctype: "text/plain", cl: -1, body: "hello, world"},
		{name: "empty body", resp: "HTTP/1.0 200 OK\r\n\r\n", close: true,
			events: "head,end", status: 200, reason: "OK", cl: -1},
		{name: "never done before close", resp: "HTTP/1.1 200 OK\r\n\r\nhello",
			events: "head,body", status: 200, reason: "OK", cl: -1, body: "hello"},
	})
}

func TestParseKeepAlive(t *testing.T) {
	resp := func(version, fields string) string {
		return "HTTP/" + version + " 200 OK\r\n" + fields + "Content-Length: 0\r\n\r\n"
	}
	cases := []struct {
		name, resp string
		ka         bool
	}{
		{"1.1 default", resp("1.1", ""), true},
		{"1.1 close", resp("1.1", "Connection: close\r\n"), false},
		{"1.1 close among options", resp("1.1", "Connection: Upgrade, CLOSE\r\n"), false},
		{"1.1 close on a second line", resp("1.1", "Connection: keep-alive\r\nConnection: close\r\n"), false},
		{"1.1 keep-alive", resp("1.1", "Connection: keep-alive\r\n"), true},
		{"1.1 close-ish token", resp("1.1", "Connection: closed\r\n"), true},
		{"1.0 default", resp("1.0", ""), false},
		{"1.0 keep-alive", resp("1.0", "Connection: Keep-Alive\r\n"), true},
		{"1.0 keep-alive and close", resp("1.0", "Connection: keep-alive, close\r\n"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := checkSplitInvariance(t, []byte(c.resp), false, false)
			if got.Err != "" || !got.Done {
				t.Fatalf("not done (error %q)", got.Err)
			}
			if got.KeepAlive != c.ka || got.Heads[0].KeepAlive != c.ka {
				t.Errorf("keep-alive: parser %v, head %v; want %v", got.KeepAlive, got.Heads[0].KeepAlive, c.ka)
			}
		})
	}
}

// The Keep-Alive header's max parameter is the most responses a server
// will send on the connection; anything else in the header, or a max that
// is not a positive decimal, leaves it 0 (not given).
func TestParseKeepAliveMax(t *testing.T) {
	cases := []struct {
		name, field string
		max         int64
	}{
		{"absent", "", 0},
		{"llama-server", "Keep-Alive: timeout=5, max=100\r\n", 100},
		{"max first, any case", "keep-alive: MAX=3 , timeout=5\r\n", 3},
		{"one", "Keep-Alive: max=1\r\n", 1},
		{"the smaller of two", "Keep-Alive: max=7\r\nKeep-Alive: max=2\r\n", 2},
		{"timeout only", "Keep-Alive: timeout=5\r\n", 0},
		{"zero", "Keep-Alive: max=0\r\n", 0},
		{"negative", "Keep-Alive: max=-4\r\n", 0},
		{"not a number", "Keep-Alive: max=lots\r\n", 0},
		{"too large", "Keep-Alive: max=99999999999999999999\r\n", 0},
		{"no value", "Keep-Alive: max\r\n", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := checkSplitInvariance(t, []byte("HTTP/1.1 200 OK\r\n"+c.field+"Content-Length: 0\r\n\r\n"), false, false)
			if got.Err != "" || !got.Done {
				t.Fatalf("not done (error %q)", got.Err)
			}
			if got.Heads[0].KeepAliveMax != c.max {
				t.Errorf("KeepAliveMax = %d, want %d", got.Heads[0].KeepAliveMax, c.max)
			}
		})
	}
}

func TestParseResponsesWithoutBody(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "204 ignores Content-Length", resp: "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", extra: next,
			events: "head,end", status: 204, reason: "No Content", cl: 10, ka: true},
		{name: "304 ignores Transfer-Encoding", resp: "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", extra: next,
			events: "head,end", status: 304, reason: "Not Modified", cl: -1, chunked: true, ka: true},
		{name: "204 without framing stays reusable", resp: "HTTP/1.1 204 No Content\r\n\r\n", extra: next,
			events: "head,end", status: 204, reason: "No Content", cl: -1, ka: true},
		{name: "HEAD", resp: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", extra: next, head: true,
			events: "head,end", status: 200, reason: "OK", cl: 100, ka: true},
		{name: "HEAD, chunked", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", extra: next, head: true,
			events: "head,end", status: 200, reason: "OK", cl: -1, chunked: true, ka: true},
	})
}

func TestCloseRead(t *testing.T) {
	runParseCases(t, []parseCase{
		{name: "before the head", resp: "", close: true, err: "connection closed before the response head: unexpected EOF"},
		{name: "in the status line", resp: "HTTP/1.1 2", close: true,
			err: "connection closed before the end of the response head: unexpected EOF"},
		{name: "before the blank line", resp: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", close: true,
			err: "connection closed before the end of the response head: unexpected EOF"},
		{name: "after an interim response", resp: "HTTP/1.1 100 Continue\r\n\r\n", close: true,
			err: "connection closed before the response head: unexpected EOF"},
		{name: "in a Content-Length body", resp: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", close: true,
			events: "head,body", status: 200, reason: "OK", cl: 5, body: "hel", ka: true,
			err: "connection closed after 3 of 5 body bytes: unexpected EOF"},
		{name: "right after the head", resp: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", close: true,
			events: "head", status: 200, reason: "OK", cl: 5, ka: true,
			err: "connection closed after 0 of 5 body bytes: unexpected EOF"},
		{name: "in a chunk-size line", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1", close: true,
			events: "head,body", status: 200, reason: "OK", cl: -1, chunked: true, body: "hello", ka: true,
			err: "connection closed in chunked body: unexpected EOF"},
		{name: "in chunk data", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", close: true,
			events: "head,body", status: 200, reason: "OK", cl: -1, chunked: true, body: "hel", ka: true,
			err: "connection closed in chunked body: unexpected EOF"},
		{name: "before the CRLF after data", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r", close: true,
			events: "head,body", status: 200, reason: "OK", cl: -1, chunked: true, body: "hello", ka: true,
			err: "connection closed in chunked body: unexpected EOF"},
		{name: "in the trailer", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n", close: true,
			events: "head", status: 200, reason: "OK", cl: -1, chunked: true, ka: true,
			err: "connection closed in chunked body trailer: unexpected EOF"},
		{name: "after a complete response", resp: ok5, close: true,
			events: "head,body,end", status: 200, reason: "OK", cl: 5, body: "hello", ka: true},
		{name: "ends a close-delimited body", resp: "HTTP/1.1 200 OK\r\n\r\nhello", close: true,
			events: "head,body,end", status: 200, reason: "OK", cl: -1, body: "hello"},
		{name: "after an error keeps the error", resp: "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", close: true,
			err: `malformed Content-Length "x"`},
	})
}

func TestCloseReadWrapsUnexpectedEOF(t *testing.T) {
	var p Parser
	err := p.CloseRead(1, &recorder{now: 1})
	var pe *ProtocolError
	if !errors.Is(err, io.ErrUnexpectedEOF) || !errors.As(err, &pe) || pe.Part != PartHead {
		t.Fatalf("CloseRead = %#v, want a *ProtocolError in the response head wrapping io.ErrUnexpectedEOF", err)
	}
}

func TestLimits(t *testing.T) {
	// field returns a field line of n bytes, counting its CR but not its LF.
	field := func(n int) string { return "X-F: " + strings.Repeat("v", n-len("X-F: \r")) + "\r\n" }
	fields := func(count int) string { return strings.Repeat("X-F: v\r\n", count) }
	const status = "HTTP/1.1 200 OK\r\n"
	const end = "Content-Length: 0\r\n\r\n"
	okHead := func(name, resp string) parseCase {
		return parseCase{name: name, resp: resp, events: "head,end", status: 200, reason: "OK", cl: 0, ka: true}
	}
	var longHead strings.Builder
	longHead.WriteString(status)
	for {
		rest := MaxHeadBytes - len(end) - longHead.Len() // bytes left for field lines, LFs included
		if rest <= MaxLineBytes+1 {
			longHead.WriteString(field(rest - 1))
			break
		}
		longHead.WriteString(field(min(MaxLineBytes, rest-1-16)))
	}
	longHead.WriteString(end)
	if longHead.Len() != MaxHeadBytes {
		t.Fatalf("test head is %d bytes, want %d", longHead.Len(), MaxHeadBytes)
	}
	te := status + "Transfer-Encoding: chunked\r\n\r\n"
	chunkedErr := func(name, body, err string) parseCase {
		return parseCase{name: name, resp: te + body, events: "head", status: 200, reason: "OK", cl: -1, chunked: true, ka: true, err: err}
	}
	runParseCases(t, []parseCase{
		okHead("longest header line", status+field(MaxLineBytes)+end),
		// A CR counts towards the line; the LF does not.
		okHead("longest line with bare LF", status+strings.TrimSuffix(field(MaxLineBytes+1), "\r\n")+"\n"+end),
		{name: "line too long by its CR", resp: status + strings.TrimSuffix(field(MaxLineBytes), "\r\n") + "v\r\n" + end,
			err: "header line longer than 8192 bytes"},
		{name: "header line too long", resp: status + field(MaxLineBytes+1) + end,
			err: "header line longer than 8192 bytes"},
		{name: "status line too long", resp: "HTTP/1.1 200 " + strings.Repeat("k", MaxLineBytes) + "\r\n" + end,
			err: "header line longer than 8192 bytes"},
		okHead("largest head", longHead.String()),
		{name: "head too large", resp: longHead.String()[:MaxHeadBytes-len(end)] + "X: 1\r\n" + end,
			err: "response head larger than 65536 bytes"},
		okHead("most fields", status+fields(MaxHeaderFields-1)+end),
		{name: "too many fields", resp: status + fields(MaxHeaderFields) + end,
			err: "response head has more than 256 header fields"},
		{name: "line limit checked before an earlier malformed line", resp: status + "bad\r\n" + field(MaxLineBytes+1) + end,
			err: "header line longer than 8192 bytes"},
		chunkedErr("chunk-size line too long", "5;"+strings.Repeat("e", MaxLineBytes)+"\r\nhello\r\n0\r\n\r\n",
			"chunk-size line longer than 8192 bytes"),
		chunkedErr("trailer line too long", "0\r\n"+field(MaxLineBytes+1)+"\r\n", "trailer line longer than 8192 bytes"),
		chunkedErr("trailer too large", "0\r\n"+strings.Repeat(field(MaxLineBytes), 8)+"\r\n", "trailer larger than 65536 bytes"),
		chunkedErr("too many trailer fields", "0\r\n"+fields(MaxHeaderFields+1)+"\r\n", "trailer has more than 256 fields"),
		{name: "most trailer fields", resp: te + "0\r\n" + fields(MaxHeaderFields) + "\r\n",
			events: "head,end", status: 200, reason: "OK", cl: -1, chunked: true, ka: true},
	})
}

func TestHeadHeader(t *testing.T) {
	const resp = "HTTP/1.1 200 OK\r\nX-Request-Id: bench-1-0\r\nmetadata: {\"usage\":{}}\r\nX-Empty:\r\nX-Dup: a\r\nX-Dup: b\r\nContent-Length: 0\r\n\r\n"
	cases := []struct {
		name string
		want string // "<nil>" if absent
	}{
		{"x-request-id", "bench-1-0"},
		{"METADATA", `{"usage":{}}`},
		{"X-Empty", ""},
		{"X-Dup", "a"},
		{"X-Missing", "<nil>"},
		{"X-Request", "<nil>"},
		{"Content-Length", "0"},
	}
	h := headerLookup{names: make([]string, len(cases))}
	for i, c := range cases {
		h.names[i] = c.name
	}
	var p Parser
	// Fed in two pieces so that the head is gathered in the parser's buffer.
	for i, piece := range []string{resp[:20], resp[20:]} {
		if _, err := p.Feed([]byte(piece), int64(i), &h); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cases {
		if h.values[i] != c.want {
			t.Errorf("Header(%q) = %q, want %q", c.name, h.values[i], c.want)
		}
	}
}

// headerLookup looks names up during OnHead.
type headerLookup struct {
	names, values []string
}

func (h *headerLookup) OnHead(hd *Head, _ int64) {
	for _, name := range h.names {
		v := "<nil>"
		if b := hd.Header(name); b != nil {
			v = string(b)
		}
		h.values = append(h.values, v)
	}
}
func (h *headerLookup) OnBody([]byte, int64) {}
func (h *headerLookup) OnEnd(int64)          {}

func TestParserReuse(t *testing.T) {
	var p Parser
	r := &recorder{now: 1}
	in := []byte(ok5 + next)
	n, err := p.Feed(in, 1, r)
	if err != nil || n != len(ok5) || !p.Done() || !p.KeepAlive() {
		t.Fatalf("first response: n=%d err=%v done=%v keep-alive=%v", n, err, p.Done(), p.KeepAlive())
	}
	if m, err := p.Feed(in[n:], 1, r); m != 0 || err != nil {
		t.Fatalf("Feed on a done parser consumed %d bytes, error %v; want 0, nil", m, err)
	}
	p.Reset(false)
	if p.Done() {
		t.Fatal("Done after Reset")
	}
	m, err := p.Feed(in[n:], 1, r)
	if err != nil || m != len(next) || !p.Done() {
		t.Fatalf("second response: n=%d err=%v done=%v", m, err, p.Done())
	}
	if got := string(r.body); got != "hellox" || r.events[len(r.events)-1] != "end" {
		t.Fatalf("body %q, events %v", got, r.events)
	}

	// A failed parser keeps failing until Reset.
	p.Reset(false)
	_, err1 := p.Feed([]byte("HTTP/9.9 200 OK\r\n\r\n"), 2, r)
	m, err2 := p.Feed([]byte(ok5), 2, r)
	if err1 == nil || err2 != err1 || m != 0 {
		t.Fatalf("after an error Feed returned %d, %v; want 0, %v", m, err2, err1)
	}
	if err := p.CloseRead(2, r); err != err1 {
		t.Fatalf("CloseRead after an error = %v, want %v", err, err1)
	}
	p.Reset(false)
	if n, err := p.Feed([]byte(ok5), 3, r); err != nil || n != len(ok5) || !p.Done() {
		t.Fatalf("after Reset: n=%d err=%v done=%v", n, err, p.Done())
	}
}
