package engine

import (
	"cmp"
	"context"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/shard"
	"github.com/stampede-bench/stampede/shard/shardtest"
)

// TestTLSResumesSessions: connections the server closes after each
// response are reopened with a session ticket, not a full handshake, and
// the health counts both kinds; each request's handshake has its times.
func TestTLSResumesSessions(t *testing.T) {
	bothTLSPaths(t, testTLSResumesSessions)
}

// bothTLSPaths runs test on the shard loops' TLS path and on the
// goroutine path.
func bothTLSPaths(t *testing.T, test func(t *testing.T)) {
	t.Run("loops", test)
	t.Run("goroutines", func(t *testing.T) {
		tlsOnLoops = false
		defer func() { tlsOnLoops = true }()
		test(t)
	})
}

// tlsHealth sums the TLS figures over the shards.
func tlsHealth(hs []ShardHealth) (h ShardHealth) {
	for _, s := range hs {
		h.TLSHandshakes += s.TLSHandshakes
		h.TLSResumed += s.TLSResumed
		h.TLSHandshakeCPU += s.TLSHandshakeCPU
		h.TLSHandshakeTime += s.TLSHandshakeTime
		h.CPUTime += s.CPUTime
		h.TLSPath = cmp.Or(h.TLSPath, s.TLSPath)
	}
	return h
}

func testTLSResumesSessions(t *testing.T) {
	srv, client := shardtest.NewTLS(t)
	res, err := Run(context.Background(), Config{
		Address: srv.Addr.String(), TLS: client, Streaming: true,
		Requests: requests(repeat("/close/3", 6)...), MaxConcurrency: 1, KeepText: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res.Data.Log.Collect() {
		if !r.Success || r.GeneratedText != "t0t1t2" {
			t.Errorf("request %d: %+v", i, r)
		}
	}
	h := tlsHealth(res.Health.Shards)
	if h.TLSHandshakes != 6 || h.TLSResumed != 5 {
		t.Errorf("%d handshakes, %d resumed; want 6, 5 (the first is full)", h.TLSHandshakes, h.TLSResumed)
	}
	if h.TLSHandshakeCPU <= 0 || h.TLSHandshakeTime <= 0 || h.CPUTime < h.TLSHandshakeCPU {
		t.Errorf("handshake CPU %v, time %v, transport CPU %v", h.TLSHandshakeCPU, h.TLSHandshakeTime, h.CPUTime)
	}
}

// TestTLSPathChoice: a TLS 1.3 AES-GCM server is served on the shard
// loops; a TLS 1.2 one, or one that picks ChaCha20, on the goroutine path,
// and the health's TLS path says which and why.
func TestTLSPathChoice(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(*tls.Config)
		suite uint16 // the client's only TLS 1.3 suite preference, if any
		want  string
	}{
		{"tls13", nil, 0, shard.TLSPathLoop},
		{"tls12", func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }, 0, "goroutine per connection (the server negotiated TLS 1.2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, client := shardtest.NewTLSWith(t, c.edit)
			res, err := Run(context.Background(), Config{
				Address: srv.Addr.String(), TLS: client, Streaming: true,
				Requests: requests(repeat("/ok/3", 4)...), MaxConcurrency: 2, KeepText: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res.Data.Log.Collect() {
				if !r.Success || r.GeneratedText != "t0t1t2" {
					t.Errorf("request %d: %+v", i, r)
				}
			}
			if h := tlsHealth(res.Health.Shards); !strings.HasPrefix(h.TLSPath, c.want) {
				t.Errorf("TLS path %q; want it to begin %q", h.TLSPath, c.want)
			}
		})
	}
}

// TestCancelDuringHangingHandshakes: after a cancellation the run ends
// within its grace however the server leaves the TLS handshakes in
// flight (it read their ClientHellos and says nothing, with a connect
// timeout far longer than the test): every request that was not answered
// is failed "cancelled". On the shard loops and on the goroutine path.
func TestCancelDuringHangingHandshakes(t *testing.T) {
	bothTLSPaths(t, testCancelDuringHangingHandshakes)
}

func testCancelDuringHangingHandshakes(t *testing.T) {
	good, client := shardtest.NewTLS(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hellos := make(chan struct{}, 16)
	go func() {
		for first := true; ; first = false {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if first { // the probe, or the goroutine path's first request
				go func() {
					defer c.Close()
					shardtest.Pipe(c, good.Addr, nil)
				}()
				continue
			}
			go func() {
				defer c.Close()
				c.Read(make([]byte, 16<<10))
				hellos <- struct{}{}
				io.Copy(io.Discard, c)
			}()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runner, err := Start(ctx, Config{
		Address: ln.Addr().String(), TLS: client, Streaming: true, Shards: 1,
		Requests: requests(repeat("/ok/1", 4)...), ConnectTimeout: time.Hour, CancelGrace: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		<-hellos
	}
	cancel()
	ended := make(chan struct{})
	var res *Result
	go func() { res, _ = runner.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(time.Minute):
		t.Fatal("the run still waits on its hanging handshakes a minute after the cancellation")
	}
	cancelled := 0
	for _, r := range res.Data.Log.All() {
		switch {
		case r.Error == "cancelled":
			cancelled++
		case !r.Success:
			t.Errorf("request %d: %q; want it answered or cancelled", r.Index, r.Error)
		}
	}
	if cancelled < 3 {
		t.Errorf("%d requests cancelled; want the 3 or more whose handshakes hung", cancelled)
	}
}
