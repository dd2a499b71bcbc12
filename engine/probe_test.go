package engine

import (
	"context"
	"crypto/tls"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/shard"
	"github.com/stampede-bench/stampede/shard/shardtest"
	"github.com/stampede-bench/stampede/sse"
)

// testProbeLoop is a probe loop posting to path on addr.
func testProbeLoop(addr netip.AddrPort, path string, streaming bool, interval time.Duration, tlsConfig *tls.Config) *probeLoop {
	base := shard.Config{
		Addr: addr, Kind: sse.Completions, Streaming: streaming,
		ConnectTimeout: time.Second, RequestTimeout: 5 * time.Second,
		KernelTimestamps: true, Clock: shard.NewClock(),
	}
	if tlsConfig != nil {
		tlsConfig = withServerName(tlsConfig, addr.String())
	}
	return newProbeLoop(&Probe{Request: Request{Wire: shardtest.Wire(path), PromptLen: 1}, Interval: interval}, base, tlsConfig)
}

// runProbes runs l until the server has seen n probes (seen counts them),
// then stops it as the end of a main run would, and returns its results.
// How long that takes is no concern of a test's: a stuck loop is caught by
// go test's -timeout.
func runProbes(l *probeLoop, seen func() int64, n int64) []metrics.RequestResult {
	l.start(context.Background())
	for seen() < n {
		time.Sleep(time.Millisecond)
	}
	return l.stop()
}

func TestProbeOutcomes(t *testing.T) {
	tests := []struct {
		path      string
		streaming bool
		wantOK    bool
		wantErr   string // substring of every failure's text
		// wantOneConn: every probe reused the first connection; otherwise
		// each probe needed its own.
		wantOneConn bool
	}{
		{path: "/ok/3", streaming: true, wantOK: true, wantOneConn: true},
		{path: "/close/2", streaming: true, wantOK: true},
		{path: "/drop/2", streaming: true, wantOK: true},
		{path: "/pool", wantOK: true, wantOneConn: true},
		{path: "/500", streaming: true, wantErr: "Internal Server Error"},
		{path: "/empty", streaming: true, wantErr: metrics.NoTokenError},
		{path: "/malformed", streaming: true, wantErr: "chunk"},
		{path: "/reset-mid", streaming: true, wantErr: "after 2 token events"},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.path, "/"), func(t *testing.T) {
			srv := shardtest.New(t)
			l := testProbeLoop(srv.Addr, tt.path, tt.streaming, 5*time.Millisecond, nil)
			if tt.path == "/drop/2" {
				// /drop closes an idle connection 20 ms after its answer:
				// each probe waits for that close, not a time, so every
				// probe after the first meets a closed keep-alive
				// connection and must redial without failing.
				l.pause = func(context.Context) {
					for srv.Dropped.Load() < int64(l.sent) {
						time.Sleep(time.Millisecond)
					}
				}
			}
			results := runProbes(l, srv.Requests.Load, 2)
			if len(results) < 2 {
				t.Fatalf("%d probes recorded after the server saw 2, want at least 2", len(results))
			}
			for i, res := range results {
				if res.Index != i {
					t.Errorf("probe %d has index %d", i, res.Index)
				}
				if res.Success != tt.wantOK {
					t.Fatalf("probe %d: success = %v (error %q), want %v", i, res.Success, res.Error, tt.wantOK)
				}
				if !tt.wantOK && !strings.Contains(res.Error, tt.wantErr) {
					t.Errorf("probe %d: error %q, want it to contain %q", i, res.Error, tt.wantErr)
				}
				if tt.wantOK && (res.LatencyNs <= 0 || res.TTFTNs <= 0 || res.TTFTNs > res.LatencyNs) {
					t.Errorf("probe %d: ttft %d ns, latency %d ns; want 0 < ttft <= latency", i, res.TTFTNs, res.LatencyNs)
				}
			}
			conns, reqs := srv.Accepted.Load(), srv.Requests.Load()
			if reqs != int64(len(results)) {
				t.Errorf("server saw %d requests for %d probes", reqs, len(results))
			}
			if tt.wantOneConn && conns != 1 {
				t.Errorf("%d connections for %d keep-alive probes, want 1", conns, len(results))
			}
			if tt.path == "/close/2" && conns != int64(len(results)) {
				t.Errorf("%d connections for %d probes answered with Connection: close", conns, len(results))
			}
		})
	}
}

// The probes' reads carry kernel receive stamps, as the main path's do.
func TestProbeKernelStamps(t *testing.T) {
	shardtest.HoldKernelStamps(t)
	srv := shardtest.New(t)
	l := testProbeLoop(srv.Addr, "/ok/3", true, time.Millisecond, nil)
	results := runProbes(l, srv.Requests.Load, 2)
	st := l.client.Stats()
	if len(results) < 2 || st.Reads == 0 || st.StampedReads != st.Reads {
		t.Errorf("%d probes, %d reads, %d stamped; want every read stamped", len(results), st.Reads, st.StampedReads)
	}
}

func TestProbeTLS(t *testing.T) {
	srv, clientTLS := shardtest.NewTLS(t)
	results := runProbes(testProbeLoop(srv.Addr, "/ok/2", true, 5*time.Millisecond, clientTLS), srv.Requests.Load, 2)
	if len(results) < 2 {
		t.Fatalf("%d probes over TLS recorded after the server saw 2, want at least 2", len(results))
	}
	for _, res := range results {
		if !res.Success {
			t.Errorf("probe %d over TLS failed: %s", res.Index, res.Error)
		}
	}
	if got := srv.Accepted.Load(); got != 1 {
		t.Errorf("%d TLS connections for %d keep-alive probes, want 1", got, len(results))
	}
}

// TestProbePacing checks Python's loop shape: each probe waits for the one
// before it to finish, then for the interval, and never overlaps another.
func TestProbePacing(t *testing.T) {
	srv := shardtest.New(t)
	const interval = 40 * time.Millisecond
	results := runProbes(testProbeLoop(srv.Addr, "/slow/30", true, interval, nil), srv.Requests.Load, 3)
	if len(results) < 3 {
		t.Fatalf("%d probes recorded after the server saw 3, want at least 3", len(results))
	}
	if got := srv.MaxActive.Load(); got != 1 {
		t.Errorf("server answered %d probes at once, want 1", got)
	}
	for i := 1; i < len(results); i++ {
		prev, cur := results[i-1], results[i]
		if !prev.Success {
			t.Fatalf("probe %d failed: %s", i-1, prev.Error)
		}
		// The sleep starts after the response ended, which is no earlier
		// than its last token, and timers never fire early.
		if gap, min := cur.StartNs-prev.StartNs, prev.LatencyNs+int64(interval); gap < min {
			t.Errorf("probe %d started %v after probe %d, want at least latency + interval = %v",
				i, time.Duration(gap), i-1, time.Duration(min))
		}
	}
}

func TestProbeFailuresCounted(t *testing.T) {
	srv := shardtest.New(t)
	results := runProbes(testProbeLoop(srv.Addr, "/alternate/2", true, time.Millisecond, nil), srv.Requests.Load, 4)
	stats := metrics.ComputeProbes(results)
	if stats == nil || stats.Completed == 0 || stats.Failed == 0 || stats.Completed+stats.Failed != len(results) {
		t.Fatalf("stats = %+v over %d probes, want both successes and failures", stats, len(results))
	}
	for _, res := range results {
		if !res.Success && res.Error != "Service Unavailable" {
			t.Errorf("probe %d failed with %q, want the reason phrase", res.Index, res.Error)
		}
	}
}

func TestProbeRefusedConnection(t *testing.T) {
	srv := shardtest.New(t)
	addr := srv.Addr
	srv.StopListening()
	l := testProbeLoop(addr, "/ok/1", true, time.Millisecond, nil)
	l.start(context.Background())
	for l.rec.Failed() < 2 {
		time.Sleep(time.Millisecond)
	}
	results := l.stop()
	if len(results) < 2 {
		t.Fatalf("%d probes; want at least 2", len(results))
	}
	for _, res := range results {
		if res.Success || !strings.HasPrefix(res.Error, "connect "+addr.String()+": ") {
			t.Errorf("probe %d: success %v, error %q; want a connect failure", res.Index, res.Success, res.Error)
		}
	}
	if stats := metrics.ComputeProbes(results); stats != nil {
		t.Errorf("stats = %+v for no successful probe, want nil (no block)", stats)
	}
}

// In a run, the probe loop's last sleep counts in the duration (Python
// awaits the loop before taking it), and the probes' times are on the run
// clock, after the schedule's start.
func TestProbesInRunExtendDuration(t *testing.T) {
	srv := shardtest.New(t)
	const interval = 300 * time.Millisecond
	res, err := Run(context.Background(), Config{
		Address: srv.Addr.String(), Streaming: true, Requests: requests("/ok/1"),
		Probe: &Probe{Request: Request{Wire: shardtest.Wire("/ok/2"), PromptLen: 1}, Interval: interval},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Probes) == 0 || !res.Probes[0].Success {
		t.Fatalf("probes %+v; want at least one, succeeded", res.Probes)
	}
	if res.Data.DurationNs < int64(interval) {
		t.Errorf("duration %v; want at least the probe's %v sleep", time.Duration(res.Data.DurationNs), interval)
	}
	if p := res.Probes[0]; p.StartNs < res.ScheduleStartNs || p.ArrivalNs != p.StartNs {
		t.Errorf("probe start %d, arrival %d; want on the run clock from the schedule start %d, no queue time",
			p.StartNs, p.ArrivalNs, res.ScheduleStartNs)
	}
}

// Cancelling a run fails the probe in flight "cancelled" after the grace.
func TestProbeCancelled(t *testing.T) {
	srv := shardtest.New(t)
	res, _ := cancelAfter(t, srv, 2, Config{
		Address: srv.Addr.String(), Streaming: true, Requests: requests("/stall"),
		CancelGrace: 50 * time.Millisecond,
		Probe:       &Probe{Request: Request{Wire: shardtest.Wire("/stall"), PromptLen: 1}, Interval: time.Millisecond},
	})
	// Both stall for good: the run returned only because the cancellation
	// ended them (a loop that ignored it would hang until go test's
	// -timeout).
	if len(res.Probes) != 1 || res.Probes[0].Success || res.Probes[0].Error != "cancelled" {
		t.Errorf("probes %+v; want one, failed \"cancelled\"", res.Probes)
	}
	if r := res.Data.Log.Collect()[0]; r.Success || r.Error != "cancelled" {
		t.Errorf("main request: %+v; want failed \"cancelled\"", r)
	}
}
