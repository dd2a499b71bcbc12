package engine

import (
	"context"
	"testing"

	"github.com/stampede-bench/stampede/shard/shardtest"
)

// TestTLSResumesSessions: connections the server closes after each
// response are reopened with a session ticket, not a full handshake, and
// the health counts both kinds; each request's handshake has its times.
func TestTLSResumesSessions(t *testing.T) {
	srv, client := shardtest.NewTLS(t)
	res, err := Run(context.Background(), Config{
		Address: srv.Addr.String(), TLS: client, Streaming: true,
		Requests: requests(repeat("/close/3", 6)...), MaxConcurrency: 1, KeepText: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res.Data.Results {
		if !r.Success || r.GeneratedText != "t0t1t2" {
			t.Errorf("request %d: %+v", i, r)
		}
	}
	h := res.Health.Shards[0]
	if h.TLSHandshakes != 6 || h.TLSResumed != 5 {
		t.Errorf("%d handshakes, %d resumed; want 6, 5 (the first is full)", h.TLSHandshakes, h.TLSResumed)
	}
	if h.TLSHandshakeCPU <= 0 || h.TLSHandshakeTime <= 0 || h.CPUTime < h.TLSHandshakeCPU {
		t.Errorf("handshake CPU %v, time %v, transport CPU %v", h.TLSHandshakeCPU, h.TLSHandshakeTime, h.CPUTime)
	}
}
