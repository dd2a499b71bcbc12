package shard

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cmsgExtErr builds the IP_RECVERR control message that comes with a
// transmit stamp: a sock_extended_err saying which stamp of which byte.
func cmsgExtErr(origin uint8, info, key uint32) []byte {
	size := int(unsafe.Sizeof(unix.SockExtendedErr{}))
	b := make([]byte, cmsgAlign(unix.SizeofCmsghdr+size))
	binary.NativeEndian.PutUint64(b[0:], uint64(unix.SizeofCmsghdr+size))
	binary.NativeEndian.PutUint32(b[8:], unix.SOL_IP)
	binary.NativeEndian.PutUint32(b[12:], unix.IP_RECVERR)
	e := (*unix.SockExtendedErr)(unsafe.Pointer(&b[unix.SizeofCmsghdr]))
	e.Errno = uint32(unix.ENOMSG)
	e.Origin = origin
	e.Info = info
	e.Data = key
	return b
}

func TestParseTxStamp(t *testing.T) {
	ok := append(cmsgTimestamp(1_700_000_000, 5), cmsgExtErr(unix.SO_EE_ORIGIN_TIMESTAMPING, unix.SCM_TSTAMP_SND, 41)...)
	if st := parseTxStamp(ok); st.key != 41 || st.realtimeNs != 1_700_000_000_000_000_005 {
		t.Errorf("parsed %+v", st)
	}
	// The stamp of another kind (here: acknowledged) is not a send stamp.
	ack := append(cmsgTimestamp(1, 2), cmsgExtErr(unix.SO_EE_ORIGIN_TIMESTAMPING, unix.SCM_TSTAMP_ACK, 41)...)
	if st := parseTxStamp(ack); st.realtimeNs != 0 {
		t.Errorf("ACK stamp taken for a send stamp: %+v", st)
	}
	if st := parseTxStamp(cmsgTimestamp(1, 2)); st.realtimeNs != 0 {
		t.Errorf("stamp without its extended error taken: %+v", st)
	}
}

// FuzzTxStamp parses arbitrary control-message buffers as error-queue
// messages: it must never read outside the buffer.
func FuzzTxStamp(f *testing.F) {
	f.Add(append(cmsgTimestamp(1_700_000_000, 5), cmsgExtErr(unix.SO_EE_ORIGIN_TIMESTAMPING, unix.SCM_TSTAMP_SND, 41)...))
	f.Add(cmsgExtErr(unix.SO_EE_ORIGIN_TIMESTAMPING, unix.SCM_TSTAMP_SND, 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, oob []byte) {
		buf := make([]byte, len(oob)+8)
		copy(buf, oob)
		parseTxStamp(buf[:len(oob)])
	})
}

// A real socket: each write's last byte comes back stamped, keyed by its
// offset in the stream, and reading the stamp allocates nothing.
func TestTxStampsFromKernel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			buf := make([]byte, 4096)
			for {
				if _, err := c.Read(buf); err != nil {
					c.Close()
					return
				}
			}
		}
	}()
	sa, family := sockaddr(netipAddrPort(t, ln.Addr()))
	fd, inProgress, txStamps, err := dial(sa, nil, family, true, false)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFD(fd)
	if !txStamps {
		t.Skip("the kernel refused transmit stamps")
	}
	if inProgress {
		var p [1]unix.PollFd
		p[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT}
		unix.Poll(p[:], 5000)
	}
	r := newStampReader()
	msg := []byte("0123456789")
	sent := uint32(0)
	// POLLERR reports a queued stamp; the kernel may queue it after write
	// returns (a deferred transmit).
	pfd := []unix.PollFd{{Fd: int32(fd)}}
	allocs := testing.AllocsPerRun(20, func() {
		n, err := write(fd, msg)
		if err != nil || n != len(msg) {
			t.Fatalf("write: %d, %v", n, err)
		}
		sent += uint32(n)
		for range 100 {
			st, ok := r.next(fd)
			if !ok {
				unix.Poll(pfd, 100)
				continue
			}
			if st.realtimeNs == 0 || st.key != sent-1 {
				t.Fatalf("stamp %+v, want key %d", st, sent-1)
			}
			return
		}
		t.Fatal("no transmit stamp")
	})
	if allocs != 0 {
		t.Errorf("%v allocations per write and stamp read", allocs)
	}
}

func netipAddrPort(t *testing.T, a net.Addr) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return ap
}
