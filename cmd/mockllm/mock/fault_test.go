package mock

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseFault(t *testing.T) {
	tests := []struct {
		in   string
		want Fault
		err  string
	}{
		{in: "http500:prob=0.25", want: Fault{Kind: FaultHTTP500, Prob: 0.25, At: -1}},
		{in: "http429:every=3", want: Fault{Kind: FaultHTTP429, Every: 3, At: -1}},
		{in: "stall:every=10,ms=250,at=3", want: Fault{Kind: FaultStall, Every: 10, At: 3, Delay: 250 * time.Millisecond}},
		{in: "stall:prob=1", want: Fault{Kind: FaultStall, Prob: 1, At: -1, Delay: time.Second}},
		{in: "slow-headers:every=1,ms=0", want: Fault{Kind: FaultSlowHeaders, Every: 1, At: -1}},
		{in: "reset-mid-stream:prob=0.001,at=0", want: Fault{Kind: FaultResetMidStream, Prob: 0.001, At: 0}},
		{in: "close:every=2", want: Fault{Kind: FaultConnectionClose, Every: 2, At: -1}},
		{in: "flood", want: Fault{Kind: FaultFlood, Every: 1, At: -1}},
		{in: "endless-line", want: Fault{Kind: FaultEndlessLine, Every: 1, At: -1}},
		{in: "huge-headers:prob=0.5", want: Fault{Kind: FaultHugeHeaders, Prob: 0.5, At: -1}},
		{in: "http500", err: "want KIND:prob=P"},
		{in: "boom:prob=1", err: `unknown kind "boom"`},
		{in: "http500:prob=0", err: "0 < prob <= 1"},
		{in: "http500:prob=1.5", err: "0 < prob <= 1"},
		{in: "http500:every=0", err: "every >= 1"},
		{in: "http500:prob=0.1,every=2", err: "exactly one of"},
		{in: "http500:ms=5", err: "ms= applies"},
		{in: "http503:at=2,every=1", err: "at= applies"},
		{in: "stall:every=1,ms=-1", err: "ms >= 0"},
		{in: "stall:every=1,x=1", err: "unknown parameter"},
		{in: "stall:every", err: "not key=value"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseFault(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "--fault") {
					t.Fatalf("ParseFault(%q) error %v, want one naming --fault and containing %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseFault(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			if again, err := ParseFault(got.String()); err != nil || again != got {
				t.Errorf("String() %q parses to %+v, %v", got.String(), again, err)
			}
		})
	}
}

// TestPickFaultSeeded checks that probability faults hit about the asked
// share of requests, and the same ones for the same seed and keys.
func TestPickFaultSeeded(t *testing.T) {
	faults := []Fault{{Kind: FaultHTTP503, Prob: 0.2, At: -1}}
	hits := func(seed uint64) []uint64 {
		var h []uint64
		for key := uint64(1); key <= 2000; key++ {
			if pickFault(faults, seed, key, key) != nil {
				h = append(h, key)
			}
		}
		return h
	}
	a, b, c := hits(7), hits(7), hits(8)
	if len(a) < 320 || len(a) > 480 {
		t.Errorf("prob=0.2 hit %d of 2000 requests", len(a))
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("the same seed selected different requests")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Error("different seeds selected the same requests")
	}
	every := []Fault{{Kind: FaultHTTP500, Every: 3, At: -1}}
	for seq := uint64(1); seq <= 9; seq++ {
		if got := pickFault(every, 0, 99, seq) != nil; got != (seq%3 == 0) {
			t.Errorf("every=3 at request %d: %v", seq, got)
		}
	}
}

// rawStream sends one streaming completions request on a fresh connection
// and returns the connection and a reader positioned at the response.
func rawStream(t *testing.T, addr string, maxTokens int) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return rawStreamOn(t, c, maxTokens)
}

// rawStreamOn is rawStream on connection c.
func rawStreamOn(t *testing.T, c net.Conn, maxTokens int) (net.Conn, *bufio.Reader) {
	t.Helper()
	t.Cleanup(func() { c.Close() })
	body := fmt.Sprintf(`{"prompt":"a","max_tokens":%d,"stream":true}`, maxTokens)
	fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return c, bufio.NewReader(c)
}

func TestFaultHTTPStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind   string
		status int
		typ    string
	}{
		{"http500", 500, "InternalServerError"},
		{"http429", 429, "TooManyRequestsError"},
		{"http503", 503, "ServiceUnavailableError"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			f, _ := ParseFault(tt.kind + ":every=2")
			srv, base := startServer(t, Config{Faults: []Fault{f}})
			for i := 1; i <= 4; i++ {
				resp := post(t, base+"/v1/completions", `{"prompt":"a","max_tokens":2}`)
				m := readJSON(t, resp)
				want := 200
				if i%2 == 0 {
					want = tt.status
					if e, _ := m["error"].(map[string]any); e["type"] != tt.typ || e["code"] != float64(tt.status) {
						t.Errorf("request %d error %v", i, m)
					}
				}
				if resp.StatusCode != want {
					t.Errorf("request %d status %d, want %d", i, resp.StatusCode, want)
				}
			}
			if got := srv.Stats().Faults; got != 2 {
				t.Errorf("Stats().Faults = %d, want 2", got)
			}
		})
	}
}

func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

func TestFaultResetBeforeHeaders(t *testing.T) {
	t.Parallel()
	f, _ := ParseFault("reset-before-headers:every=1")
	srv, _ := startServer(t, Config{Faults: []Fault{f}})
	_, r := rawStream(t, srv.Addr(), 3)
	b, err := io.ReadAll(r)
	if len(b) != 0 || !isReset(err) {
		t.Fatalf("read %q, %v; want nothing and ECONNRESET", b, err)
	}
}

func TestFaultResetMidStream(t *testing.T) {
	t.Parallel()
	f, _ := ParseFault("reset-mid-stream:every=1,at=2")
	srv, _ := startServer(t, Config{ITL: time.Millisecond, Faults: []Fault{f}})
	_, r := rawStream(t, srv.Addr(), 6)
	b, err := io.ReadAll(r)
	if !isReset(err) {
		t.Fatalf("read ended with %v, want ECONNRESET", err)
	}
	if !strings.HasPrefix(string(b), "HTTP/1.1 200 OK") || strings.Count(string(b), "text_completion") != 2 {
		t.Fatalf("before the reset: %q; want headers and tokens 0 and 1", b)
	}
}

func TestFaultStall(t *testing.T) {
	t.Parallel()
	f, _ := ParseFault("stall:every=1,at=2,ms=150")
	truth := filepath.Join(t.TempDir(), "truth.log")
	const itl = time.Millisecond
	srv, base := startServer(t, Config{ITL: itl, Faults: []Fault{f}, TruthLog: truth})
	resp := post(t, base+"/v1/completions", `{"prompt":"a","max_tokens":4,"stream":true}`)
	defer resp.Body.Close()
	s := readSSE(t, resp.Body)
	if s.tokenEvents != 4 {
		t.Fatalf("%d token events, want 4", s.tokenEvents)
	}
	// The truth log is exact where the client's clock is not (a late read
	// of token 0 shortens the gap it sees): the stall moves token 2's due
	// time, and no token leaves before it is due. A loaded machine may
	// write a token late, and a schedule that counts from that write would
	// widen the next gap, so the gaps are lower bounds: the stall's at token 2, the ITL elsewhere.
	r := closeAndRead(t, srv, truth)[0]
	checkCausal(t, r)
	toks := r.Tokens
	for k := 1; k < len(toks); k++ {
		want := int64(itl)
		if k == 2 {
			want += int64(150 * time.Millisecond)
		}
		if got := toks[k].IntendedNs - toks[k-1].IntendedNs; got < want {
			t.Errorf("intended gap before token %d: %v, want at least %v", k, time.Duration(got), time.Duration(want))
		}
	}
}

func TestFaultMalformedChunk(t *testing.T) {
	t.Parallel()
	f, _ := ParseFault("malformed-chunk:every=1,at=1")
	_, base := startServer(t, Config{ITL: time.Millisecond, Faults: []Fault{f}})
	resp := post(t, base+"/v1/completions", `{"prompt":"a","max_tokens":4,"stream":true}`)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil || !strings.Contains(err.Error(), "chunk") {
		t.Fatalf("body read ended with %v, want a chunked-encoding error", err)
	}
	if strings.Count(string(b), "text_completion") != 1 {
		t.Errorf("before the bad chunk: %q, want token 0", b)
	}
}

func TestFaultSlowHeaders(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{PerStream, DecodeStep} {
		t.Run(mode.String(), func(t *testing.T) {
			f, _ := ParseFault("slow-headers:every=1,ms=150")
			_, base := startServer(t, Config{Mode: mode, ITL: time.Millisecond, Faults: []Fault{f}})
			// A lower bound, so load cannot break it: the headers cannot
			// arrive before the delay has run out after the request left.
			start := time.Now()
			resp := post(t, base+"/v1/completions", `{"prompt":"a","max_tokens":2,"stream":true}`)
			defer resp.Body.Close()
			if d := time.Since(start); d < 150*time.Millisecond {
				t.Errorf("headers after %v, want >= 150ms", d)
			}
			if s := readSSE(t, resp.Body); s.tokenEvents != 2 {
				t.Errorf("%d token events after slow headers, want 2", s.tokenEvents)
			}
		})
	}
}

func TestFaultConnectionClose(t *testing.T) {
	t.Parallel()
	f, _ := ParseFault("close:every=1")
	srv, _ := startServer(t, Config{Faults: []Fault{f}})
	_, r := rawStream(t, srv.Addr(), 2)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Close {
		t.Errorf("response headers %v lack Connection: close", resp.Header)
	}
	if s := readSSE(t, resp.Body); s.tokenEvents != 2 || !s.done {
		t.Errorf("stream before close: %d tokens, done %v", s.tokenEvents, s.done)
	}
	if n, err := r.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("after the response: %d bytes, %v; want EOF", n, err)
	}
}

// The hostile answers never end: the mock writes as long as the client
// reads, and notes in the truth log when the client closed the connection.
// Over TLS too, every byte sealed.
func TestFaultHostileAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind  string
		check func(b string) string // what is wrong with the first bytes, or ""
	}{
		{"flood", func(b string) string {
			if !strings.HasPrefix(b, streamHeaders) || strings.Count(b, ": ping\n\n") < 1000 ||
				strings.Count(b, `"text_completion"`) < 1000 || strings.Contains(b, "[DONE]") {
				return "want stream headers, then comments and token events without end"
			}
			return ""
		}},
		{"endless-line", func(b string) string {
			body, ok := strings.CutPrefix(b, streamHeaders)
			if !ok || !strings.Contains(body, "data: {") || strings.Contains(body, "\n\n") || strings.Count(body, "\r\n") < 8 {
				return "want stream headers, then chunks of one line that never ends"
			}
			return ""
		}},
		{"huge-headers", func(b string) string {
			if !strings.HasPrefix(b, "HTTP/1.1 200 OK\r\n") || strings.Contains(b, "\r\n\r\n") || strings.Count(b, "x-filler: ") < 100 {
				return "want a head whose header fields never end"
			}
			return ""
		}},
	}
	for _, tt := range tests {
		for _, overTLS := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/tls=%v", tt.kind, overTLS), func(t *testing.T) {
				t.Parallel()
				hostileAnswer(t, tt.kind, overTLS, tt.check)
			})
		}
	}
}

// hostileAnswer reads the start of a kind answer, over TLS or not,
// checks it, closes, and looks for the close in the truth log.
func hostileAnswer(t *testing.T, kind string, overTLS bool, check func(string) string) {
	f, err := ParseFault(kind)
	if err != nil {
		t.Fatal(err)
	}
	truth := filepath.Join(t.TempDir(), "truth.log")
	cfg := Config{Faults: []Fault{f}, TruthLog: truth}
	var srv *Server
	var c net.Conn
	if overTLS {
		srv, _, _ = startTLSServer(t, cfg)
		c, err = tls.Dial("tcp", srv.Addr(), &tls.Config{InsecureSkipVerify: true})
	} else {
		srv, _ = startServer(t, cfg)
		c, err = net.Dial("tcp", srv.Addr())
	}
	if err != nil {
		t.Fatal(err)
	}
	c, r := rawStreamOn(t, c, 3)
	b := make([]byte, 4<<20)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatalf("reading 4 MiB of the answer: %v", err)
	}
	if msg := check(string(b)); msg != "" {
		t.Fatalf("%s: %q...", msg, b[:min(len(b), 300)])
	}
	c.Close()
	for srv.Stats().Finished < 1 {
		time.Sleep(time.Millisecond)
	}
	reqs := closeAndRead(t, srv, truth)
	if len(reqs) != 1 || reqs[0].ClosedNs <= reqs[0].ArrivalNs {
		t.Fatalf("truth log %+v; want one request with its close after its arrival", reqs)
	}
}
