package engine

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/shard"
	"github.com/stampede-bench/stampede/shard/shardtest"
	"github.com/stampede-bench/stampede/sse"
)

// The connections of a run with source addresses come from those
// addresses, round-robin: each of them opens some, no other does.
func TestSourceAddressesBindConnections(t *testing.T) {
	srv := shardtest.New(t)
	srcs := []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")}
	res, err := Run(context.Background(), Config{
		Address: srv.Addr.String(), Kind: sse.Completions, Streaming: true,
		SourceAddresses: srcs,
		// Every request at once on fresh connections: one connection each.
		Requests: requests(repeat("/slow/20", 8)...), MaxConcurrency: 8,
		Shards: 2, CPUs: []int{-1},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res.Data.Log.Collect() {
		if !r.Success {
			t.Fatalf("request %d failed: %s", i, r.Error)
		}
	}
	peers := srv.Peers()
	total := 0
	for a, n := range peers {
		total += n
		if a != srcs[0] && a != srcs[1] {
			t.Errorf("the server accepted %d connections from %v; want only %v", n, a, srcs)
		}
	}
	for _, a := range srcs {
		if peers[a] == 0 {
			t.Errorf("no connection came from %v (peers %v)", a, peers)
		}
	}
	if int64(total) != srv.Accepted.Load() {
		t.Errorf("peers count %d connections, the server accepted %d", total, srv.Accepted.Load())
	}
}

// An address this host does not have is refused before the run, by name.
func TestSourceAddressNotOnHost(t *testing.T) {
	srv := shardtest.New(t)
	const absent = "192.0.2.77" // TEST-NET-1: on no interface
	_, err := Run(context.Background(), Config{
		Address: srv.Addr.String(), Kind: sse.Completions, Streaming: true,
		SourceAddresses: []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr(absent)},
		Requests:        requests(repeat("/ok/1", 2)...), Shards: 1, CPUs: []int{-1},
	})
	var se *shard.SourceError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), absent) {
		t.Fatalf("err = %v; want a source address error naming %s", err, absent)
	}
	if got := srv.Accepted.Load(); got != 0 {
		t.Errorf("the server accepted %d connections; the run should not have started", got)
	}
}

// An IPv6 source for an IPv4 server is refused by name too.
func TestSourceAddressOtherFamily(t *testing.T) {
	srv := shardtest.New(t)
	_, err := Run(context.Background(), Config{
		Address: srv.Addr.String(), Kind: sse.Completions, Streaming: true,
		SourceAddresses: []netip.Addr{netip.MustParseAddr("::1")},
		Requests:        requests(repeat("/ok/1", 1)...), Shards: 1, CPUs: []int{-1},
	})
	if err == nil || !strings.Contains(err.Error(), "::1") || !strings.Contains(err.Error(), "family") {
		t.Fatalf("err = %v; want the address and its family named", err)
	}
}
