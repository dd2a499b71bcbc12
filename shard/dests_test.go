package shard

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/shard/shardtest"
	"github.com/stampede-bench/stampede/sse"
	"golang.org/x/sys/unix"
)

// newDestsShard is a shard of two destinations with an idle connection to
// each, their sockets one end of a socket pair (nothing to read: open).
func newDestsShard(t *testing.T) (*Shard, [2]*conn) {
	t.Helper()
	s, err := New(Config{Slots: 2, Streaming: true, Kind: sse.Completions, Recorder: metrics.NewRecorder(metrics.Options{}),
		Queue: NewQueue(1, 0), Clock: NewClock(),
		Dests: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.closeAll)
	var cs [2]*conn
	for d := range cs {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
		cs[d] = &conn{fd: fds[0], heapIndex: -1, state: connBusy, dest: d}
		s.putIdle(cs[d])
	}
	return s, cs
}

// An idle connection carries requests to its own destination only.
func TestIdlePoolPerDestination(t *testing.T) {
	s, cs := newDestsShard(t)
	for _, d := range []int{1, 0} {
		if c := s.popIdle(d); c != cs[d] {
			t.Fatalf("popIdle(%d) = %p; want destination %d's connection %p", d, c, d, cs[d])
		}
		if c := s.popIdle(d); c != nil {
			t.Fatalf("popIdle(%d) again = %+v; want none (the other destination's stays)", d, c)
		}
	}
}

// Taking an idle connection for a destination and giving it back
// allocates nothing.
func TestIdlePoolPerDestinationAllocatesNothing(t *testing.T) {
	s, _ := newDestsShard(t)
	allocs := testing.AllocsPerRun(1000, func() {
		for d := range 2 {
			s.putIdle(s.popIdle(d))
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per reuse; want 0", allocs)
	}
}

// A failed connect names the front end it went to: a dead second one of
// --server-urls was reported as the first's address.
func TestConnectErrorNamesItsDestination(t *testing.T) {
	live, dead := shardtest.New(t), shardtest.New(t)
	dead.StopListening()
	reqs := make([]Request, 4)
	for i := range reqs {
		reqs[i] = Request{Wire: []byte("POST /ok/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"), Dest: i % 2}
	}
	results, _ := runShard(t, Config{CPU: -1, Dests: []netip.AddrPort{live.Addr, dead.Addr}, Streaming: true, Kind: sse.Completions,
		Queue: NewQueueOf(reqs, 0), Slots: len(reqs), ConnectTimeout: 5 * time.Second, RequestTimeout: 10 * time.Second,
		Clock: NewClock(), Recorder: metrics.NewRecorder(metrics.Options{})}, len(reqs))
	for _, r := range results {
		want := ""
		if reqs[r.Index].Dest == 1 {
			want = "connect " + dead.Addr.String() + ": connection refused"
		}
		if r.Error != want {
			t.Errorf("request %d to front end %d: error %q; want %q", r.Index, reqs[r.Index].Dest, r.Error, want)
		}
	}
}
