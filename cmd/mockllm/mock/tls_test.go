package mock

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// tlsClient is an HTTPS client that trusts srv's self-signed certificate
// and keeps sessions for resumption.
func tlsClient(t *testing.T, cert tls.Certificate, maxConns int) *http.Client {
	t.Helper()
	cfg := &tls.Config{
		InsecureSkipVerify: true,
		ClientSessionCache: tls.NewLRUClientSessionCache(16),
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: cfg, MaxConnsPerHost: maxConns, ForceAttemptHTTP2: false,
	}}
}

func startTLSServer(t *testing.T, cfg Config) (*Server, string, tls.Certificate) {
	t.Helper()
	cert, err := SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv, _ := startServer(t, cfg)
	return srv, "https://" + srv.Addr(), cert
}

func TestTLSStreaming(t *testing.T) {
	t.Parallel()
	truth := t.TempDir() + "/truth.log"
	srv, base, cert := startTLSServer(t, Config{ITL: time.Millisecond, TruthLog: truth, MaxModelLen: 10000})
	client := tlsClient(t, cert, 1)
	// Two requests on one kept-alive connection, then one with a body big
	// enough to span several TLS records each way.
	bodies := []string{
		`{"prompt":"hello the world","max_tokens":7,"stream":true}`,
		`{"prompt":"hello","max_tokens":40,"stream":true}`,
		`{"prompt":"` + strings.Repeat("the ", 5000) + `","max_tokens":3,"stream":true}`,
	}
	want := []int{7, 40, 3}
	for i, body := range bodies {
		resp, err := client.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if resp.TLS == nil || resp.TLS.Version != tls.VersionTLS13 {
			t.Fatalf("request %d: not TLS 1.3: %+v", i, resp.TLS)
		}
		s := readSSE(t, resp.Body)
		resp.Body.Close()
		if !s.done || s.tokenEvents != want[i] {
			t.Errorf("request %d: done %v, %d token events, want %d", i, s.done, s.tokenEvents, want[i])
		}
	}
	if st := srv.Stats(); st.Tokens == 0 || st.Requests != 3 {
		t.Errorf("stats %+v: want 3 requests with tokens", st)
	}
	reqs := closeAndRead(t, srv, truth)
	events := 0
	for _, r := range reqs {
		events += len(r.Tokens)
	}
	if len(reqs) != 3 || events != 50 {
		t.Errorf("truth log: %d requests, %d token sends; want 3, 50", len(reqs), events)
	}
}

// TestTLSResumption: a second connection resumes the first's session
// from the ticket the server sent, and still works.
func TestTLSResumption(t *testing.T) {
	t.Parallel()
	_, base, _ := startTLSServer(t, Config{ITL: time.Millisecond})
	cfg := &tls.Config{InsecureSkipVerify: true, ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	for i := range 2 {
		tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
		resp, err := (&http.Client{Transport: tr}).Post(base+"/v1/completions", "application/json",
			strings.NewReader(`{"prompt":"hi","max_tokens":3,"stream":true}`))
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		s := readSSE(t, resp.Body)
		resp.Body.Close()
		if !s.done || s.tokenEvents != 3 {
			t.Errorf("connection %d: done %v, %d events", i, s.done, s.tokenEvents)
		}
		if resumed := resp.TLS.DidResume; resumed != (i == 1) {
			t.Errorf("connection %d: DidResume %v", i, resumed)
		}
		tr.CloseIdleConnections()
	}
}

// TestTLSRejectsGarbage: plaintext HTTP to a TLS server fails the
// connection and leaves the server serving.
func TestTLSRejectsGarbage(t *testing.T) {
	t.Parallel()
	srv, base, cert := startTLSServer(t, Config{ITL: time.Millisecond})
	resp, err := http.Post("http://"+srv.Addr()+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"hi"}`))
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		t.Fatalf("plain HTTP to the TLS server got status %d", resp.StatusCode)
	}
	resp, err = tlsClient(t, cert, 1).Post(base+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"hi","max_tokens":2}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status %d after a failed handshake", resp.StatusCode)
	}
}

// FuzzTLSReceive feeds the record layer arbitrary bytes, split in two
// receives, after records sealed with the connection's key: it must fail
// or pass them, never panic.
func FuzzTLSReceive(f *testing.F) {
	secret := make([]byte, 32)
	seal := func(typ byte, p string) []byte {
		k, _ := newRecordKey(tls.TLS_AES_128_GCM_SHA256, secret)
		return appendRecord(nil, k, []byte(p), typ)
	}
	f.Add(seal(typeApplication, "GET / HTTP/1.1\r\n\r\n"), 3)
	f.Add(seal(typeAlert, "\x01\x00"), 0)
	f.Add(seal(typeHandshake, "\x18\x00\x00\x01\x01"), 7)
	f.Add(seal(typeHandshake, "\x04\x00\x00\x00"), 7)
	f.Add([]byte{22, 3, 1, 0, 5, 1, 0, 0, 1, 0}, 2)
	f.Add([]byte{23, 3, 3, 0xff, 0xff}, 5)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		rd, _ := newRecordKey(tls.TLS_AES_128_GCM_SHA256, secret)
		wr, _ := newRecordKey(tls.TLS_AES_128_GCM_SHA256, secret)
		cn := &conn{fd: -1, tls: &tlsConn{rd: rd, wr: wr}}
		s := &Server{}
		split = min(max(split, 0), len(data))
		if _, err := s.receive(cn, data[:split]); err != nil {
			return
		}
		s.receive(cn, data[split:])
	})
}
