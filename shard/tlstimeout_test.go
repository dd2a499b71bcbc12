package shard

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/metrics/metricstest"
	"github.com/stampede-bench/stampede/shard/shardtest"
)

// hangingHandshakes are the ways a scripted server leaves a client's TLS
// handshake unfinished once it has read the ClientHello: silence, or the
// header of a handshake record declaring 16 KB and nothing of its body.
var hangingHandshakes = []struct {
	name  string
	after []byte // what the server writes after the ClientHello
}{
	{"silent", nil},
	{"16 KB record header", []byte{22, 3, 3, 0x40, 0x00}},
}

// hangingTLSServer is a TLS front whose first connection reaches good
// (a real TLS server: a full handshake, a session ticket, an answer)
// and whose later ones each read the ClientHello, write after, and hang
// until the test ends. hung counts those later connections, and own
// those of them whose hello offered TLS 1.3 alone: the loop's own
// resumption's (crypto/tls's offers TLS 1.2 too).
func hangingTLSServer(t *testing.T, good *shardtest.Server, after []byte) (front *shardtest.Server, hung, own *atomic.Int64) {
	t.Helper()
	hung, own = new(atomic.Int64), new(atomic.Int64)
	var accepted atomic.Int64
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	front, _ = rawServer(t, func(c net.Conn) {
		defer c.Close()
		if accepted.Add(1) == 1 {
			shardtest.Pipe(c, good.Addr, nil)
			return
		}
		hang := &tls.Config{GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			hung.Add(1)
			if slices.Equal(hello.SupportedVersions, []uint16{tls.VersionTLS13}) {
				own.Add(1)
			}
			c.Write(after)
			<-done
			return nil, errors.New("the test ended")
		}}
		tls.Server(c, hang).Handshake()
	})
	return front, hung, own
}

// TestTLSHandshakeTimeout: a server that takes the ClientHello and never
// finishes the handshake (silent, or stopping inside a record it
// declared) holds no request past the connect timeout, which covers the
// connect and the handshake: on the loop's own resumption and on
// crypto/tls's handshakers (STAMPEDE_TLS_OWN_RESUME=0) alike, each such
// request fails as a connect failure naming the handshake, the health
// counts them, and the run ends, long before the request timeout.
func TestTLSHandshakeTimeout(t *testing.T) {
	const n = 3
	for _, own := range []bool{true, false} {
		for _, hs := range hangingHandshakes {
			name := hs.name + ", crypto/tls"
			if own {
				name = hs.name + ", own resumption"
			}
			t.Run(name, func(t *testing.T) {
				if !own {
					t.Setenv(OwnResumeEnv, "0")
				}
				good, client := shardtest.NewTLS(t)
				front, hung, ownHellos := hangingTLSServer(t, good, hs.after)
				// One request at a time: the first brings the ticket
				// and its connection closes, so each later one opens a
				// connection and resumes.
				paths := strings.Fields("/close/2" + strings.Repeat(" /ok/2", n-1))
				data, health := runPaths(t, front, paths, run{slots: 1, limit: 1, streaming: true,
					connect: 500 * time.Millisecond, timeout: 5 * time.Second, tls: withTicketStore(PrepareTLS(client, 1))})
				if r := data.Results[0]; !r.Success {
					t.Fatalf("request 0, on the good connection: %q", r.Error)
				}
				want := "connect " + front.Addr.String() + ": TLS handshake timed out after 500ms"
				for _, r := range data.Results[1:] {
					if r.Success || r.Error != want {
						t.Errorf("request %d: success %v, error %q; want %q", r.Index, r.Success, r.Error, want)
					}
				}
				if h := health[0]; h.TLSHandshakeTimeouts != n-1 {
					t.Errorf("%d handshakes timed out; want %d", h.TLSHandshakeTimeouts, n-1)
				}
				// The hellos the server read (a loaded machine may keep
				// it from reading one in time) were the loop's own with
				// own resumption on, crypto/tls's without.
				if got := ownHellos.Load(); own && got == 0 || !own && got != 0 || hung.Load() == 0 {
					t.Errorf("%d of the %d hellos read on hung connections were the loop's own (own resumption %v)", got, hung.Load(), own)
				}
			})
		}
	}
}

// TestClientHandshakeTimeout: the goroutine transport's connections (the
// fallback for TLS 1.2 servers, and the side probes) bound their
// handshake by the connect timeout too.
func TestClientHandshakeTimeout(t *testing.T) {
	for _, hs := range hangingHandshakes {
		t.Run(hs.name, func(t *testing.T) {
			good, client := shardtest.NewTLS(t)
			front, _, _ := hangingTLSServer(t, good, hs.after)
			cfg := &Config{Addr: front.Addr, Streaming: true, ConnectTimeout: 300 * time.Millisecond, RequestTimeout: 5 * time.Second, Clock: NewClock()}
			stats := &ClientStats{}
			rec := metrics.NewRecorder(metrics.Options{})
			reqs := []Request{{Wire: shardtest.Wire("/ok/1")}, {Wire: shardtest.Wire("/ok/1")}}
			for i := range reqs {
				cl := NewClient(cfg, PrepareTLS(client, 1), stats)
				var times HandshakeTimes
				cl.Do(rec, nil, i, &reqs[i], -1, &times)
				cl.Close()
			}
			results := metricstest.Merge(len(reqs), rec).Results
			if !results[0].Success {
				t.Fatalf("request 0, on the good connection: %q", results[0].Error)
			}
			want := "connect " + front.Addr.String() + ": TLS handshake timed out after 300ms"
			if r := results[1]; r.Success || r.Error != want {
				t.Errorf("request 1: success %v, error %q; want %q", r.Success, r.Error, want)
			}
			if got := (&Client{stats: stats}).Stats().TLSHandshakeTimeouts; got != 1 {
				t.Errorf("%d handshakes timed out, want 1", got)
			}
		})
	}
}

// TestProbeEndsOnCancelAndTimeout: the probing handshake before a run
// ends when the run is cancelled, and a probe the server left hanging is
// not made again with the other key exchange offer.
func TestProbeEndsOnCancelAndTimeout(t *testing.T) {
	var accepted atomic.Int64
	srv, conns := rawServer(t, func(c net.Conn) {
		accepted.Add(1)
		io.Copy(io.Discard, c)
	})
	cfg := PrepareTLS(&tls.Config{InsecureSkipVerify: true}, 1)
	if ok, why := probeRun(t.Context(), srv.Addr.String(), cfg, true, 200*time.Millisecond); !ok || why == "" {
		t.Errorf("probe of a silent server: ok %v, %q; want ok (the run's connections will tell) with the reason", ok, why)
	}
	<-conns
	if n := accepted.Load(); n != 1 {
		t.Errorf("%d probing connections; want 1 (no second offer after a timeout)", n)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ended := make(chan struct{})
	go func() {
		probeRun(ctx, srv.Addr.String(), cfg.Clone(), true, time.Hour)
		close(ended)
	}()
	<-conns // the probe is connected and waits for the server
	cancel()
	select {
	case <-ended:
	case <-time.After(time.Minute):
		t.Fatal("a cancelled probe still waits for the server")
	}
}
