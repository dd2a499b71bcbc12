package engine

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/httpwire"
)

// TestHostileServers runs against the mock's answers that never end: the
// run ends, every request is one failed request with an error that says
// what the server did, and the mock saw each request once.
func TestHostileServers(t *testing.T) {
	tests := []struct {
		fault string
		cfg   Config
		want  string // prefix of every request's error
	}{
		{"flood", Config{RequestTimeout: time.Second}, "request timed out after 1s"},
		{"flood", Config{MaxResponseBytes: 1 << 20}, "response exceeded --max-response-bytes (1.0 MiB) after "},
		{"endless-line", Config{MaxBufferedBytes: 1 << 20},
			"response exceeded the memory budget for unparsed bytes (--max-buffered-bytes 1.0 MiB): it held "},
		{"huge-headers", Config{}, "response head larger than 65536 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			f, err := mock.ParseFault(tt.fault)
			if err != nil {
				t.Fatal(err)
			}
			truth := filepath.Join(t.TempDir(), "truth.log")
			srv, err := mock.Start(mock.Config{Port: 0, Faults: []mock.Fault{f}, TruthLog: truth})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()

			const n = 24
			cfg := tt.cfg
			cfg.Address, cfg.Streaming, cfg.Shards = srv.Addr(), true, 2
			cfg.MaxConcurrency = n / 2 // half the requests go on reused connections
			body := []byte(`{"model":"mock-llm","prompt":"a","max_tokens":5,"stream":true}`)
			for i := range n {
				wire := httpwire.AppendRequest(nil, &httpwire.Request{Method: "POST", Host: srv.Addr(), Path: "/v1/completions",
					ContentType: "application/json", RequestID: "hostile-" + strconv.Itoa(i), Body: body})
				cfg.Requests = append(cfg.Requests, Request{Index: i, Wire: wire, PromptLen: 1})
			}
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res.Data.Log.Collect() {
				if r.Success || !strings.HasPrefix(r.Error, tt.want) {
					t.Errorf("request %d: success %v, error %q; want a failure %q...", r.Index, r.Success, r.Error, tt.want)
				}
			}
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			reqs, err := mock.ReadTruthLog(truth)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, r := range reqs {
				seen[r.RequestID]++
				if r.ClosedNs == 0 {
					t.Errorf("request %s: the mock never saw its connection closed", r.RequestID)
				}
			}
			for i := range n {
				if id := "hostile-" + strconv.Itoa(i); seen[id] != 1 {
					t.Errorf("the mock saw %s %d times; want once", id, seen[id])
				}
			}
		})
	}
}

// A request whose reused connection is reset before any response byte is
// one failed request; the mock never sees it twice.
func TestResetOnReusedConnectionIsNotResent(t *testing.T) {
	f, err := mock.ParseFault("reset-before-headers:every=2")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mock.Start(mock.Config{Port: 0, Faults: []mock.Fault{f}, ITL: time.Millisecond, TTFT: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const n = 10
	cfg := Config{Address: srv.Addr(), Streaming: true, Shards: 1, MaxConcurrency: 1}
	body := []byte(`{"model":"mock-llm","prompt":"a","max_tokens":2,"stream":true}`)
	for i := range n {
		wire := httpwire.AppendRequest(nil, &httpwire.Request{Method: "POST", Host: srv.Addr(), Path: "/v1/completions",
			ContentType: "application/json", Body: body})
		cfg.Requests = append(cfg.Requests, Request{Index: i, Wire: wire, PromptLen: 1})
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// One at a time: every second request is reset. The first of them
	// reaches the mock on the connection its predecessor used; that reset
	// stops reuse (no reused connection was ever answered), so the later
	// ones go out on fresh connections.
	for i, r := range res.Data.Log.Collect() {
		want := ""
		switch {
		case i == 1:
			want = "connection reset by peer before the response head on a reused keep-alive connection (not sent again)"
		case i%2 == 1:
			want = "connection reset by peer before the response head"
		}
		if r.Error != want || r.Success != (want == "") {
			t.Errorf("request %d: success %v, error %q; want error %q", i, r.Success, r.Error, want)
		}
	}
	if res.Health.StoppedReuse != 1 {
		t.Errorf("%d shards stopped reusing connections; want 1", res.Health.StoppedReuse)
	}
	if got := srv.Stats().Requests; got != n {
		t.Errorf("the mock saw %d requests for %d sent", got, n)
	}
}
