package shardtest

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// HoldKernelStamps switches the kernel's software receive timestamps on and
// keeps them on until the test ends. Linux flips them on for everyone, by
// deferred work, when the first socket asks, and off when the last one
// closes; a shard waits a bounded time for the switch, which a loaded
// machine can outlast, and parallel test processes open and close such
// sockets at will. A test that asserts every read was stamped holds them
// first: this returns once a datagram sent to itself comes back stamped,
// however long that takes (a kernel that never stamps hangs until go test's
// -timeout).
func HoldKernelStamps(t testing.TB) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(os.NewSyscallError("socket", err))
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING_NEW,
		unix.SOF_TIMESTAMPING_RX_SOFTWARE|unix.SOF_TIMESTAMPING_SOFTWARE); err != nil {
		t.Fatal(os.NewSyscallError("setsockopt SO_TIMESTAMPING_NEW", err))
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(os.NewSyscallError("bind", err))
	}
	self, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(os.NewSyscallError("getsockname", err))
	}
	buf, oob := make([]byte, 1), make([]byte, 256)
	for {
		if err := unix.Sendto(fd, []byte{0}, 0, self); err != nil {
			t.Fatal(os.NewSyscallError("sendto", err))
		}
		_, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
		if err != nil {
			t.Fatal(os.NewSyscallError("recvmsg", err))
		}
		if stamped(oob[:oobn]) {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// stamped reports whether a control message carries a non-zero software
// receive stamp (the first of SCM_TIMESTAMPING's three timespecs).
func stamped(oob []byte) bool {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return false
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SO_TIMESTAMPING_NEW || len(m.Data) < 16 {
			continue
		}
		for _, b := range m.Data[:16] {
			if b != 0 {
				return true
			}
		}
	}
	return false
}
