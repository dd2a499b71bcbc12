package shard

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/metrics"
	"golang.org/x/sys/unix"
)

// blackhole listens with an accept backlog of one and never accepts: the
// first connection completes into the backlog, and the kernel drops the SYNs
// of later ones, whose connects then hang.
func blackhole(t *testing.T) netip.AddrPort {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa.(*unix.SockaddrInet4).Port))
}

func TestConnectAndRequestTimeouts(t *testing.T) {
	addr := blackhole(t)
	reqs := make([]Request, 3)
	for i := range reqs {
		reqs[i] = Request{Wire: []byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")}
	}
	results, _ := runShard(t, Config{CPU: -1, Addr: addr, Streaming: true, Queue: NewQueueOf(reqs, 0), Slots: 3,
		ConnectTimeout: 200 * time.Millisecond, RequestTimeout: 600 * time.Millisecond, Clock: NewClock(),
		Recorder: metrics.NewRecorder(metrics.Options{})}, len(reqs))
	var connectTimeouts, requestTimeouts int
	for _, r := range results {
		switch {
		case r.Error == "connect "+addr.String()+": timed out after 200ms":
			connectTimeouts++
		case r.Error == "request timed out after 600ms":
			requestTimeouts++
		default:
			t.Errorf("request %d: error %q", r.Index, r.Error)
		}
	}
	// The backlog takes one or two connections, depending on the kernel.
	if connectTimeouts == 0 || requestTimeouts == 0 {
		t.Errorf("%d connect and %d request timeouts; want both kinds", connectTimeouts, requestTimeouts)
	}
}
