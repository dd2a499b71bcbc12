package shard

import (
	"errors"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// An io_uring ring that reads the plain connections of one shard: every
// connection has one multishot recvmsg armed on it, which reads into
// buffers of a ring the shard provides, each read with its kernel receive
// stamp as a control message. The loop collects a turn's reads with one
// io_uring_enter instead of one recvmsg per read. On virtual machines a
// system call costs a microsecond or more (1.5 µs for getppid on the
// machines stampede is measured on), and that call was the largest part
// of the loop's CPU per token event; the kernel's receive work stays.
//
// The ring is set up with DEFER_TASKRUN: the reads run only inside the
// loop's io_uring_enter, on the loop's thread, so a read happens when the
// loop asks, as a recvmsg would, and reads the bytes (and the stamp) that
// arrived by then. The shard's wake-up eventfd is registered with it, so a
// sleeping epoll_wait hears of bytes to collect.
//
// The ring is off unless STAMPEDE_IO_URING=1 is in the environment: side
// by side with recvmsg in the 10,000-stream decode-step benchmark it saved
// about 6 % of the client's CPU per event on a loaded machine and 0-3 % on
// a quiet one, less than the system calls it removes, because the enter
// that runs the reads without waiting for them (min_complete with a zero
// timeout, see enter) still goes through the kernel's wait path and
// schedules. With it on, the shard falls back to its own recvmsg when the
// kernel cannot set the ring up (before 6.1, io_uring disabled or
// filtered), and TLS connections always use recvmsg.

const (
	sysIOUringSetup    = 425
	sysIOUringEnter    = 426
	sysIOUringRegister = 427

	uringSetupCQSize       = 1 << 3
	uringSetupSubmitAll    = 1 << 7
	uringSetupTaskrunFlag  = 1 << 9
	uringSetupSingleIssuer = 1 << 12
	uringSetupDeferTaskrun = 1 << 13

	uringFeatSingleMmap = 1 << 0

	uringOffSQRing = 0
	uringOffSQEs   = 0x10000000

	uringEnterGetEvents = 1 << 0
	uringEnterExtArg    = 1 << 3

	uringRegisterEventfd  = 4
	uringRegisterPbufRing = 22

	uringOpRecvmsg     = 10
	uringOpAsyncCancel = 14

	uringSqeBufferSelect = 1 << 5
	uringRecvMultishot   = 1 << 1

	uringCqeFBuffer = 1 << 0
	uringCqeFMore   = 1 << 1

	// uringCancelTag is the user_data of cancellations, whose own
	// completions say nothing the loop needs.
	uringCancelTag = ^uint64(0)
)

// uringBufSize and uringBufCount size the provided buffers: a read takes
// one buffer, whose first bytes hold the recvmsg header and the stamp, and
// the loop hands it back once parsed.
const (
	uringBufSize  = 4 << 10
	uringBufCount = 1024
	uringCtlLen   = 64 // one SCM_TIMESTAMPING_NEW: header + 3 timespecs
	uringOutLen   = 16 // struct io_uring_recvmsg_out
)

type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  uringSQOffsets
	cqOff                                                                  uringCQOffsets
}

type uringSQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32
	userData    uint64
	bufGroup    uint16
	personality uint16
	fileIndex   uint32
	addr3       uint64
	pad         uint64
}

type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

type uringBufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

type uringBuf struct {
	addr uint64
	len  uint32
	bid  uint16
	resv uint16 // of entry 0: the ring's tail
}

// uring is one shard's ring. Only the shard's thread uses it.
type uring struct {
	fd   int
	sqes []uringSQE

	sqHead, sqTail *uint32
	sqMask         uint32
	sqArray        []uint32
	toSubmit       uint32
	// closing holds the descriptors to close once the queued entries,
	// which may name them, are submitted (see closeAfterSubmit).
	closing []int

	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []uringCQE

	bufRing []uringBuf
	bufTail uint16
	bufs    []byte
	bufsMem []byte
	ringMem []byte
	sqesMem []byte
	msg     unix.Msghdr // the template every multishot recvmsg copies
}

// newUring sets up a ring for the calling thread, which alone may use it,
// with wake registered to hear of completed reads. It fails where the
// kernel lacks what it needs (io_uring off, older than 6.1).
func newUring(wake int) (*uring, error) {
	p := uringParams{cqEntries: 8192,
		flags: uringSetupCQSize | uringSetupSubmitAll | uringSetupTaskrunFlag | uringSetupSingleIssuer | uringSetupDeferTaskrun}
	fd, _, errno := unix.Syscall(sysIOUringSetup, 1024, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, os.NewSyscallError("io_uring_setup", errno)
	}
	u := &uring{fd: int(fd)}
	if p.features&uringFeatSingleMmap == 0 {
		u.close()
		return nil, errors.New("io_uring: no single mmap")
	}
	size := max(int(p.sqOff.array)+int(p.sqEntries)*4, int(p.cqOff.cqes)+int(p.cqEntries)*int(unsafe.Sizeof(uringCQE{})))
	var err error
	if u.ringMem, err = unix.Mmap(u.fd, uringOffSQRing, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		u.close()
		return nil, os.NewSyscallError("mmap", err)
	}
	if u.sqesMem, err = unix.Mmap(u.fd, uringOffSQEs, int(p.sqEntries)*int(unsafe.Sizeof(uringSQE{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		u.close()
		return nil, os.NewSyscallError("mmap", err)
	}
	r := u.ringMem
	u.sqHead = (*uint32)(unsafe.Pointer(&r[p.sqOff.head]))
	u.sqTail = (*uint32)(unsafe.Pointer(&r[p.sqOff.tail]))
	u.sqMask = *(*uint32)(unsafe.Pointer(&r[p.sqOff.ringMask]))
	u.sqArray = unsafe.Slice((*uint32)(unsafe.Pointer(&r[p.sqOff.array])), p.sqEntries)
	u.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&u.sqesMem[0])), p.sqEntries)
	u.cqHead = (*uint32)(unsafe.Pointer(&r[p.cqOff.head]))
	u.cqTail = (*uint32)(unsafe.Pointer(&r[p.cqOff.tail]))
	u.cqMask = *(*uint32)(unsafe.Pointer(&r[p.cqOff.ringMask]))
	u.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&r[p.cqOff.cqes])), p.cqEntries)

	ringBytes := uringBufCount * int(unsafe.Sizeof(uringBuf{}))
	if u.bufsMem, err = unix.Mmap(-1, 0, ringBytes+uringBufCount*uringBufSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		u.close()
		return nil, os.NewSyscallError("mmap", err)
	}
	u.bufRing = unsafe.Slice((*uringBuf)(unsafe.Pointer(&u.bufsMem[0])), uringBufCount)
	u.bufs = u.bufsMem[ringBytes:]
	reg := uringBufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&u.bufsMem[0]))), ringEntries: uringBufCount}
	if _, _, errno := unix.Syscall6(sysIOUringRegister, uintptr(u.fd), uringRegisterPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0); errno != 0 {
		u.close()
		return nil, os.NewSyscallError("io_uring_register PBUF_RING", errno)
	}
	for i := range uringBufCount {
		u.giveBack(uint16(i))
	}
	efd := int32(wake)
	if _, _, errno := unix.Syscall6(sysIOUringRegister, uintptr(u.fd), uringRegisterEventfd, uintptr(unsafe.Pointer(&efd)), 1, 0, 0); errno != 0 {
		u.close()
		return nil, os.NewSyscallError("io_uring_register EVENTFD", errno)
	}
	u.msg.SetControllen(uringCtlLen)
	return u, nil
}

func (u *uring) close() {
	if u.fd >= 0 {
		unix.Close(u.fd)
		u.fd = -1
	}
	for _, m := range [][]byte{u.ringMem, u.sqesMem, u.bufsMem} {
		if m != nil {
			unix.Munmap(m)
		}
	}
	u.ringMem, u.sqesMem, u.bufsMem = nil, nil, nil
}

// giveBack returns buffer bid to the kernel.
func (u *uring) giveBack(bid uint16) {
	b := &u.bufRing[u.bufTail&(uringBufCount-1)]
	b.addr = uint64(uintptr(unsafe.Pointer(&u.bufs[int(bid)*uringBufSize])))
	b.len = uringBufSize
	b.bid = bid
	u.bufTail++
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&u.bufRing[0].bid)), uint32(u.bufTail)<<16|uint32(u.bufRing[0].bid))
}

// sqe returns the next free submission entry, zeroed, submitting the
// queued ones first if the ring is full.
func (u *uring) sqe() *uringSQE {
	tail := *u.sqTail
	if tail-atomic.LoadUint32(u.sqHead) > u.sqMask {
		u.enter()
		tail = *u.sqTail
	}
	i := tail & u.sqMask
	u.sqArray[i] = i
	e := &u.sqes[i]
	*e = uringSQE{}
	atomic.StoreUint32(u.sqTail, tail+1)
	u.toSubmit++
	return e
}

// recv arms a multishot recvmsg on fd whose completions carry userData.
func (u *uring) recv(fd int, userData uint64) {
	e := u.sqe()
	e.opcode = uringOpRecvmsg
	e.flags = uringSqeBufferSelect
	e.ioprio = uringRecvMultishot
	e.fd = int32(fd)
	e.addr = uint64(uintptr(unsafe.Pointer(&u.msg)))
	e.len = 1
	e.userData = userData
}

// pending reports whether entries or closes wait for the next submission.
func (u *uring) pending() bool { return u.toSubmit > 0 || len(u.closing) > 0 }

// closeAfterSubmit closes fd once the entries queued so far are
// submitted. Closed now, its number could be reused by a socket opened
// before the next submission, and an entry queued for the old socket (a
// read armed again, say) would then read the new one.
func (u *uring) closeAfterSubmit(fd int) { u.closing = append(u.closing, fd) }

// cancel stops the recvmsg armed with userData.
func (u *uring) cancel(userData uint64) {
	e := u.sqe()
	e.opcode = uringOpAsyncCancel
	e.fd = -1
	e.addr = userData
	e.userData = uringCancelTag
}

// uringGetEventsArg is struct io_uring_getevents_arg.
type uringGetEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWait   uint32
	ts        uint64
}

// uringTurnReads bounds the reads one enter runs: the kernel runs at most
// max(20, min_complete) of the reads it was told of per call, and the
// loop asks for this many with a zero timeout, so that one call runs all
// of a turn's reads without waiting for any.
const uringTurnReads = 1024

// enter submits what is queued and runs up to uringTurnReads of the reads
// the kernel has been told of, without waiting.
func (u *uring) enter() {
	n := u.toSubmit
	u.toSubmit = 0
	var zero unix.Timespec
	arg := uringGetEventsArg{ts: uint64(uintptr(unsafe.Pointer(&zero)))}
	for {
		r, _, errno := unix.RawSyscall6(sysIOUringEnter, uintptr(u.fd), uintptr(n), uringTurnReads,
			uringEnterGetEvents|uringEnterExtArg, uintptr(unsafe.Pointer(&arg)), unsafe.Sizeof(arg))
		if errno == unix.EINTR || errno == unix.EAGAIN || errno == unix.EBUSY {
			continue
		}
		if uint32(r) < n && (errno == 0 || errno == unix.ETIME) {
			n -= uint32(r)
			continue
		}
		break
	}
	for _, fd := range u.closing {
		closeFD(fd)
	}
	u.closing = u.closing[:0]
}

// buffer returns the read a completion's buffer holds, its control data,
// and the buffer's id.
func (u *uring) buffer(cqe *uringCQE) (data, oob []byte, bid uint16) {
	bid = uint16(cqe.flags >> 16)
	b := u.bufs[int(bid)*uringBufSize : (int(bid)+1)*uringBufSize]
	ctl := *(*uint32)(unsafe.Pointer(&b[4]))
	payload := *(*uint32)(unsafe.Pointer(&b[8]))
	off := uringOutLen + uringCtlLen
	return b[off : off+int(payload)], b[uringOutLen : uringOutLen+int(min(ctl, uringCtlLen))], bid
}

// connEventsRing is the epoll registration of a connection the ring
// reads: as connEvents, but without EPOLLIN. The loop still hears of the
// connect, write space, hang-ups and transmit stamps (EPOLLERR) through
// epoll, and may still read such a connection itself (an event that
// reports a hang-up, the idle check): the ring reads only inside the
// loop's own io_uring_enter, and reap delivers all it read before the loop
// goes on, so the bytes reach the parsers in order either way.
const connEventsRing = unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET

// uringWanted says whether shards read through io_uring where the kernel
// offers it: STAMPEDE_IO_URING=1 in the environment.
func uringWanted() bool { return os.Getenv("STAMPEDE_IO_URING") == "1" }

// ringTag is the user_data of c's reads: its epoll tag and descriptor.
func (c *conn) ringTag() uint64 { return uint64(c.tag)<<32 | uint64(uint32(c.fd)) }

// reap runs the reads the kernel has queued for the ring and feeds what
// they read to their connections. It returns how many completed.
func (s *Shard) reap() int {
	if s.ur == nil {
		return 0
	}
	u := s.ur
	u.enter()
	n := 0
	// Arming a read can run the ring (a full submission queue), which may
	// complete more: take those too.
	for head := *u.cqHead; head != atomic.LoadUint32(u.cqTail); head++ {
		s.ringRead(&u.cqes[head&u.cqMask])
		atomic.StoreUint32(u.cqHead, head+1)
		n++
	}
	s.ringMore = n >= uringTurnReads
	return n
}

// ringRead handles one completion of a connection's multishot recvmsg: a
// read (its buffer holds the bytes and the receive stamp; no bytes is the
// end of the stream), or the error that ended the recvmsg. A recvmsg that
// ended without an error (out of buffers, its completions overflowed) is
// armed again.
func (s *Shard) ringRead(cqe *uringCQE) {
	if cqe.userData == uringCancelTag {
		return
	}
	var data, oob []byte
	if cqe.flags&uringCqeFBuffer != 0 {
		var bid uint16
		data, oob, bid = s.ur.buffer(cqe)
		// The parsers copy what they keep: the buffer is free once the
		// read was handled.
		defer s.ur.giveBack(bid)
	}
	c := s.conn(int(uint32(cqe.userData)))
	if c == nil || c.ringTag() != cqe.userData {
		return // a connection closed since
	}
	if cqe.res < 0 {
		switch errno := unix.Errno(-cqe.res); errno {
		case unix.ECANCELED:
		case unix.ENOBUFS:
			s.ur.recv(c.fd, c.ringTag())
		default:
			s.ringFailed(c, errno)
		}
		return
	}
	if c.state != connBusy {
		// Bytes or the end of the stream on an idle connection: the
		// server closed it, or broke protocol. Either way it cannot carry
		// a request (nor one still connecting, which sent nothing yet).
		err := ErrClosedByPeer
		if len(data) > 0 {
			err = errBytesBeforeRequest
		}
		s.ringFailed(c, err)
		return
	}
	if len(data) > 0 {
		s.health.RingReads++
	}
	s.consume(c, data, parseRxTimestamp(oob), false)
	if cqe.flags&uringCqeFMore == 0 && len(data) > 0 && c.state != connClosed {
		s.ur.recv(c.fd, c.ringTag())
	}
}

// errBytesBeforeRequest fails a request whose connection received bytes
// before the request went out.
var errBytesBeforeRequest = errors.New("server sent bytes before the request")

// ringFailed ends c after its read failed with err: the request it
// carries, if any, fails; an idle c is closed.
func (s *Shard) ringFailed(c *conn, err error) {
	if c.req != nil {
		s.connFailed(c, err)
		return
	}
	s.lost++
	s.closeConn(c)
}
