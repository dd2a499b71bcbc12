package shard

import (
	"errors"
	"net/netip"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Every system call the shard makes lives in this file and in
// uring_linux.go (the io_uring ring): epoll, eventfd, sockets and their
// options, recvmsg with its control messages, CPU pinning and per-thread
// CPU time. The rest of the package is plain Go.
//
// The calls the loop makes per event or per request on non-blocking
// descriptors (recvmsg, send, epoll_ctl, epoll_wait that finds events,
// close) and its short pauses (nap) go through RawSyscall, which skips the
// runtime's entersyscall/exitsyscall. None of them can block for long, so
// the runtime loses nothing by not knowing, and the loop gains quiet. The
// runtime's monitor thread (sysmon) preempts a goroutine that has kept its
// P for 10 ms, which a shard working through a decode step's events does;
// if it finds the thread inside a system call it knows of, it takes the P
// away instead, and every such retake sets sysmon back to waking every
// 20 µs. Sharing the shard's CPU, those wake-ups cost about a tenth of the
// client's CPU in the 10,000-stream decode-step benchmark. Only an
// epoll_wait that must sleep goes through Syscall, so the P is handed off
// while the loop is idle.

// poller is one epoll instance. Only its shard's thread uses it.
type poller struct {
	fd     int
	events []unix.EpollEvent
}

// connEvents is every connection's one registration, made when it is
// opened and never modified: read, write and peer half-close interest,
// edge-triggered.
//
// Edge-triggered because a level-triggered socket costs the kernel a second
// readiness poll for every event: epoll puts a level-triggered item back on
// its ready list after reporting it, and the next epoll_wait polls it again
// only to find it drained; with 10,000 streams that second poll was a few
// percent of the loop's CPU. The price is the edge-triggered contract: a
// reader must drain the socket (onReadable reads until a read comes back
// short, or, once the peer hung up, until the EOF or the error), and a
// writer that filled the send buffer hears of free space through one
// EPOLLOUT edge (the kernel raises it only after a write hit EAGAIN), so
// write interest can stay registered throughout.
const connEvents = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET

func newPoller(maxEvents int) (*poller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	return &poller{fd: fd, events: make([]unix.EpollEvent, maxEvents)}, nil
}

// add registers fd with a tag that comes back with its events. A socket
// closed while its event waits in the current batch can have its number
// reused by a new socket in the same turn; the tag tells the two apart.
func (p *poller) add(fd int, tag uint32, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(fd), Pad: int32(tag)}
	_, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(p.fd), unix.EPOLL_CTL_ADD, uintptr(fd),
		uintptr(unsafe.Pointer(&ev)), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// eventTag returns the tag ev's fd was registered with.
func eventTag(ev *unix.EpollEvent) uint32 { return uint32(ev.Pad) }

// wait returns the ready events, blocking for at most timeoutMs (-1 =
// forever) when there are none; they stay valid until the next wait.
//
// It looks without blocking first, through RawSyscall: in a busy loop
// events are nearly always waiting (the loop pauses between turns, see
// coalesceNap), and only a call that may sleep is worth telling the runtime
// about.
func (p *poller) wait(timeoutMs int) ([]unix.EpollEvent, error) {
	for {
		r, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.fd),
			uintptr(unsafe.Pointer(&p.events[0])), uintptr(len(p.events)), 0, 0, 0)
		n, err := int(r), error(nil)
		if errno != 0 {
			n, err = 0, errno
		}
		if err == nil && n == 0 && timeoutMs != 0 {
			n, err = unix.EpollWait(p.fd, p.events, timeoutMs)
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, os.NewSyscallError("epoll_wait", err)
		}
		return p.events[:n], nil
	}
}

// del takes fd out of the set.
func (p *poller) del(fd int) error {
	return os.NewSyscallError("epoll_ctl", unix.EpollCtl(p.fd, unix.EPOLL_CTL_DEL, fd, nil))
}

func (p *poller) close() { unix.Close(p.fd) }

// wakeup is an eventfd other goroutines write to interrupt epoll_wait.
type wakeup struct{ fd int }

func newWakeup() (wakeup, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return wakeup{}, os.NewSyscallError("eventfd", err)
	}
	return wakeup{fd: fd}, nil
}

var one = [8]byte{1}

// signal may be called from any goroutine.
func (w wakeup) signal() {
	// EAGAIN means the counter is already non-zero: a wake-up is pending.
	unix.Write(w.fd, one[:])
}

// drain resets the counter after a wake-up was seen.
func (w wakeup) drain() {
	var b [8]byte
	unix.Read(w.fd, b[:])
}

func (w wakeup) close() { unix.Close(w.fd) }

// sockaddr converts a resolved address to the form connect(2) wants.
func sockaddr(ap netip.AddrPort) (unix.Sockaddr, int) {
	addr := ap.Addr().Unmap()
	if addr.Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: addr.As4()}, unix.AF_INET
	}
	sa := &unix.SockaddrInet6{Port: int(ap.Port()), Addr: addr.As16()}
	return sa, unix.AF_INET6
}

// SourceError is a source address the kernel would not bind: not on this
// host, or of the other family than the server's.
type SourceError struct {
	Addr netip.Addr
	Err  error
}

func (e *SourceError) Error() string {
	return "source address " + e.Addr.String() + " cannot be bound: " + e.Err.Error()
}

func (e *SourceError) Unwrap() error { return e.Err }

// bindSource binds fd to src with port 0 and IP_BIND_ADDRESS_NO_PORT: the
// kernel then picks the port at connect(2), from the whole 4-tuple, so one
// source address gives its ~28,000 ephemeral ports to each destination
// rather than to all of them together.
func bindSource(fd int, src unix.Sockaddr) error {
	// Kernels before 4.2 lack the option; the bind still works, only the
	// ports are then shared over destinations.
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
	if err := unix.Bind(fd, src); err != nil {
		return &SourceError{Addr: sockaddrAddr(src), Err: err}
	}
	return nil
}

// sockaddrAddr is sa's IP address.
func sockaddrAddr(sa unix.Sockaddr) netip.Addr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrFrom4(a.Addr)
	case *unix.SockaddrInet6:
		return netip.AddrFrom16(a.Addr)
	}
	return netip.Addr{}
}

// sourceSockaddrs are addrs as bind(2) takes them (port 0), for a server
// of family; an address of the other family is refused.
func sourceSockaddrs(addrs []netip.Addr, family int) ([]unix.Sockaddr, error) {
	out := make([]unix.Sockaddr, 0, len(addrs))
	for _, a := range addrs {
		a = a.Unmap()
		switch {
		case a.Is4() && family == unix.AF_INET:
			out = append(out, &unix.SockaddrInet4{Addr: a.As4()})
		case a.Is6() && family == unix.AF_INET6:
			out = append(out, &unix.SockaddrInet6{Addr: a.As16()})
		default:
			return nil, &SourceError{Addr: a, Err: errors.New("not of the server address's family")}
		}
	}
	return out, nil
}

// CheckSources binds a socket to each of addrs in turn (port 0, released
// at once), so that an address this host does not have is refused by name
// before the run, not as every request's failure. server is the address
// the connections will go to, for the family.
func CheckSources(addrs []netip.Addr, server netip.AddrPort) error {
	_, family := sockaddr(server)
	srcs, err := sourceSockaddrs(addrs, family)
	if err != nil {
		return err
	}
	for _, src := range srcs {
		fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
		if err != nil {
			return err
		}
		err = bindSource(fd, src)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// dial creates a non-blocking TCP socket with TCP_NODELAY (and, when asked,
// kernel software receive timestamps) and starts connecting it. inProgress
// reports that the connection completes later (wait for EPOLLOUT, then
// connectResult).
//
// With kernelStamps, the socket also stamps each write's last byte as it
// leaves (txStamps reports that it does; see enableTxTimestamps), unless
// rxOnly (a TLS connection, whose handshake writes first: see
// enableTxTimestampsFromNow).
//
// src, when not nil, is the local address to bind before connecting (see
// bindSource); a failure to bind is a *SourceError.
func dial(sa, src unix.Sockaddr, family int, kernelStamps, rxOnly bool) (fd int, inProgress, txStamps bool, err error) {
	fd, err = unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, false, false, err
	}
	if err = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		unix.Close(fd)
		return -1, false, false, err
	}
	if src != nil {
		if err = bindSource(fd, src); err != nil {
			unix.Close(fd)
			return -1, false, false, err
		}
	}
	err = unix.Connect(fd, sa)
	switch err {
	case nil:
	case unix.EINPROGRESS:
		inProgress = true
	default:
		unix.Close(fd)
		return -1, false, false, err
	}
	if kernelStamps {
		// Receive stamps matter from the response on, so one call after
		// connect(2) sets both.
		if txStamps = !rxOnly && enableTxTimestamps(fd); !txStamps {
			enableRxTimestamps(fd)
		}
	}
	return fd, inProgress, txStamps, nil
}

// enableTxTimestamps adds software transmit stamps to fd's receive stamps:
// the kernel stamps the last byte of each write as it hands the segment to
// the device, and queues the stamp on the socket's error queue (OPT_TSONLY:
// the stamp alone, no copy of the bytes) with the byte's offset in the
// stream as its key (OPT_ID). For TCP the offset counts from the first data
// byte only when the option is set after connect(2) started the handshake;
// before, the kernel refuses it. It reports whether the kernel took it.
func enableTxTimestamps(fd int) bool {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING_NEW,
		unix.SOF_TIMESTAMPING_RX_SOFTWARE|unix.SOF_TIMESTAMPING_TX_SOFTWARE|unix.SOF_TIMESTAMPING_SOFTWARE|
			unix.SOF_TIMESTAMPING_OPT_ID|unix.SOF_TIMESTAMPING_OPT_TSONLY) == nil
}

// enableTxTimestampsFromNow is enableTxTimestamps on an established
// connection, the stamps' keys counting from the next byte written
// (OPT_ID_TCP: from the write sequence, not from the last byte the peer
// acknowledged): a TLS connection's request bytes, after the handshake's
// that crypto/tls wrote. Kernels before 6.2 refuse it; the requests are
// then timed by the clock.
func enableTxTimestampsFromNow(fd int) bool {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING_NEW,
		unix.SOF_TIMESTAMPING_RX_SOFTWARE|unix.SOF_TIMESTAMPING_TX_SOFTWARE|unix.SOF_TIMESTAMPING_SOFTWARE|
			unix.SOF_TIMESTAMPING_OPT_ID|unix.SOF_TIMESTAMPING_OPT_ID_TCP|unix.SOF_TIMESTAMPING_OPT_TSONLY) == nil
}

// txStamp is one transmit stamp from a socket's error queue.
type txStamp struct {
	key        uint32 // offset of the stamped byte in the stream (OPT_ID)
	realtimeNs int64
}

// stampReader reads transmit stamps from sockets' error queues. Its msghdr
// is built once, so a read allocates nothing.
type stampReader struct {
	buf [1]byte
	oob [256]byte
	iov unix.Iovec
	msg unix.Msghdr
}

func newStampReader() *stampReader {
	r := &stampReader{}
	r.iov.Base = &r.buf[0]
	r.iov.SetLen(len(r.buf))
	r.msg.Iov = &r.iov
	r.msg.Iovlen = 1
	return r
}

// next takes the next message off fd's error queue. ok is false when the
// queue is empty (or the socket failed: the normal read path reports
// that). A message that is not a software transmit stamp comes back with
// stamp.realtimeNs 0.
func (r *stampReader) next(fd int) (stamp txStamp, ok bool) {
	r.msg.Control = &r.oob[0]
	r.msg.SetControllen(len(r.oob))
	_, _, errno := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&r.msg)),
		unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
	if errno != 0 {
		return txStamp{}, false
	}
	return parseTxStamp(r.oob[:r.msg.Controllen]), true
}

// parseTxStamp reads an error-queue message's control data: a
// SCM_TIMESTAMPING(_NEW) timespec and the sock_extended_err that says
// which stamp it is and of which byte. Anything but a software transmit
// stamp yields realtimeNs 0.
func parseTxStamp(oob []byte) txStamp {
	const hdr = unix.SizeofCmsghdr
	var st txStamp
	var ts int64
	isSend := false
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			break
		}
		switch {
		case h.Level == unix.SOL_SOCKET && (h.Type == unix.SO_TIMESTAMPING_NEW || h.Type == unix.SCM_TIMESTAMPING) && l >= hdr+16:
			t := (*[2]int64)(unsafe.Pointer(&oob[hdr]))
			ts = t[0]*1e9 + t[1]
		case (h.Level == unix.SOL_IP && h.Type == unix.IP_RECVERR || h.Level == unix.SOL_IPV6 && h.Type == unix.IPV6_RECVERR) &&
			l >= hdr+int(unsafe.Sizeof(unix.SockExtendedErr{})):
			e := (*unix.SockExtendedErr)(unsafe.Pointer(&oob[hdr]))
			isSend = e.Errno == uint32(unix.ENOMSG) && e.Origin == unix.SO_EE_ORIGIN_TIMESTAMPING && e.Info == unix.SCM_TSTAMP_SND
			st.key = e.Data
		}
		next := cmsgAlign(l)
		if next >= len(oob) {
			break
		}
		oob = oob[next:]
	}
	if isSend && ts > 0 {
		st.realtimeNs = ts
	}
	return st
}

// handshakeRetransmits returns how many times the kernel retransmitted on
// fd so far (TCP_INFO's total_retrans; during a handshake, SYNs), or -1.
func handshakeRetransmits(fd int) int {
	info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return -1
	}
	return int(info.Total_retrans)
}

// unackedBytes returns how many of the bytes written on fd the peer has
// not acknowledged, sent or still queued (SIOCOUTQ: the kernel's
// write_seq - snd_una). It stays readable after the connection ended, a
// reset included; ok is false when the kernel would not say. TCP_INFO's
// tcpi_bytes_acked would need the count at the request's start, one more
// system call per request; this is read only when a connection failed.
func unackedBytes(fd int) (n uint32, ok bool) {
	v, err := unix.IoctlGetInt(fd, unix.SIOCOUTQ)
	if err != nil || v < 0 {
		return 0, false
	}
	return uint32(v), true
}

// connRTT is the kernel's smoothed and minimum round-trip times of fd
// (TCP_INFO's tcpi_rtt and tcpi_min_rtt, µs); ok is false when it has
// none (the socket never exchanged a segment).
func connRTT(fd int) (rttUs, minRTTUs uint32, ok bool) {
	info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil || info.Rtt == 0 {
		return 0, 0, false
	}
	return info.Rtt, info.Min_rtt, true
}

// enableRxTimestamps asks for software receive timestamps on fd. Failure
// is not fatal: reads then carry no stamp and the reader falls back to its
// own clock.
func enableRxTimestamps(fd int) {
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING_NEW,
		unix.SOF_TIMESTAMPING_RX_SOFTWARE|unix.SOF_TIMESTAMPING_SOFTWARE)
}

// connectResult returns the outcome of a non-blocking connect once the
// socket became writable.
func connectResult(fd int) error {
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return err
	}
	if v != 0 {
		return unix.Errno(v)
	}
	return nil
}

// closeFD closes a socket; close(2) of a socket without SO_LINGER does not
// block.
func closeFD(fd int) { unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0) }

// write writes as much of b (non-empty) as the socket takes without
// blocking. It returns 0, nil when the send buffer is full. It uses send(2)
// with MSG_NOSIGNAL, so a peer that reset the connection yields EPIPE
// instead of a SIGPIPE.
func write(fd int, b []byte) (int, error) {
	n, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT, 0, 0)
	switch errno {
	case 0:
		return int(n), nil
	case unix.EAGAIN:
		return 0, nil
	}
	return 0, errno
}

// receiver reads with recvmsg into a buffer owned by the shard and extracts
// the kernel's software receive timestamp from the control message. The
// msghdr and iovec are built once, so a read allocates nothing.
type receiver struct {
	buf []byte
	oob [128]byte
	iov unix.Iovec
	msg unix.Msghdr
}

func newReceiver(size int) *receiver {
	r := &receiver{buf: make([]byte, size)}
	r.msg.Iov = &r.iov
	r.msg.Iovlen = 1
	return r
}

// errWouldBlock says the socket had nothing to read.
var errWouldBlock = errors.New("would block")

// recv reads once from fd. It returns the bytes read (0 at end of stream)
// and the kernel's receive time as CLOCK_REALTIME nanoseconds, or 0 when the
// read carried no timestamp.
func (r *receiver) recv(fd int) (data []byte, realtimeNs int64, err error) {
	return r.recvInto(fd, r.buf)
}

// recvInto is recv into a caller's buffer p (len(p) > 0).
func (r *receiver) recvInto(fd int, p []byte) (data []byte, realtimeNs int64, err error) {
	r.iov.Base = &p[0]
	r.iov.SetLen(len(p))
	r.msg.Control = &r.oob[0]
	r.msg.SetControllen(len(r.oob))
	n, _, errno := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&r.msg)), 0)
	if errno != 0 {
		if errno == unix.EAGAIN {
			return nil, 0, errWouldBlock
		}
		return nil, 0, errno
	}
	return p[:n], parseRxTimestamp(r.oob[:r.msg.Controllen]), nil
}

// parseRxTimestamp finds SCM_TIMESTAMPING(_NEW) in a control-message buffer
// and returns its first timespec (the software stamp) in nanoseconds, or 0.
// Both variants carry three 16-byte timespecs on 64-bit Linux.
func parseRxTimestamp(oob []byte) int64 {
	const hdr = unix.SizeofCmsghdr
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && (h.Type == unix.SO_TIMESTAMPING_NEW || h.Type == unix.SCM_TIMESTAMPING) && l >= hdr+16 {
			ts := (*[2]int64)(unsafe.Pointer(&oob[hdr]))
			if ts[0] == 0 && ts[1] == 0 {
				return 0
			}
			return ts[0]*1e9 + ts[1]
		}
		next := cmsgAlign(l)
		if next >= len(oob) {
			return 0
		}
		oob = oob[next:]
	}
	return 0
}

func cmsgAlign(n int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (n + a - 1) &^ (a - 1)
}

// pinToCPU locks the calling thread to cpu. The caller must have called
// runtime.LockOSThread.
func pinToCPU(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return os.NewSyscallError("sched_setaffinity", err)
	}
	return nil
}

// threadUsage returns the user+system CPU time the calling thread used and
// how often the kernel preempted it for another thread (involuntary context
// switches: time the loop wanted to run but another process had its CPU).
func threadUsage() (cpu time.Duration, preempted int64) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nivcsw
}

// nap pauses the calling thread for about d, keeping its P (see the top of
// this file): a stop-the-world that needs the goroutine signals the thread,
// which ends the nanosleep early with EINTR.
func nap(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// IsReset reports whether err is the peer resetting the connection.
func IsReset(err error) bool {
	return errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE)
}

// monotonicNs reads CLOCK_MONOTONIC directly.
func monotonicNs() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// stampKeeper holds a socket with receive timestamping on for as long as a
// shard runs. Linux turns software receive timestamps on globally (a static
// key) when the first socket asks for them, through deferred work, and off
// again when the last such socket closes; packets that arrive before the
// switch flips carry no stamp. Holding one socket open, and waiting until a
// datagram sent to itself comes back stamped, makes stamps present from
// the first response on.
type stampKeeper struct {
	fd   int
	self unix.Sockaddr // where the socket is bound, for stamping's datagrams
}

// openStampKeeper returns once the kernel stamps received packets, or after
// wait at the latest (stamps then start later in the run; reads without one
// fall back to the loop's clock).
func openStampKeeper(wait time.Duration) (stampKeeper, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return stampKeeper{fd: -1}, os.NewSyscallError("socket", err)
	}
	k := stampKeeper{fd: fd}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING_NEW,
		unix.SOF_TIMESTAMPING_RX_SOFTWARE|unix.SOF_TIMESTAMPING_SOFTWARE); err != nil {
		k.close()
		return stampKeeper{fd: -1}, os.NewSyscallError("setsockopt SO_TIMESTAMPING_NEW", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		k.close()
		return stampKeeper{fd: -1}, os.NewSyscallError("bind", err)
	}
	self, err := unix.Getsockname(fd)
	if err != nil {
		k.close()
		return stampKeeper{fd: -1}, os.NewSyscallError("getsockname", err)
	}
	k.self = self
	k.stamping(wait)
	return k, nil
}

// stamping reports whether the kernel stamps received packets, waiting
// up to wait for the switch: a datagram k sends itself comes back with a
// stamp. The switch is deferred work of the kernel's, which a loaded
// machine can hold back for longer than a shard's stampSwitchWait; a test
// that needs every read stamped waits here for it.
func (k stampKeeper) stamping(wait time.Duration) bool {
	if k.fd < 0 {
		return false
	}
	r := newReceiver(64)
	deadline := time.Now().Add(wait)
	for {
		if err := unix.Sendto(k.fd, []byte{0}, 0, k.self); err != nil {
			return false
		}
		time.Sleep(100 * time.Microsecond)
		for {
			_, ts, err := r.recv(k.fd)
			if err != nil {
				break
			}
			if ts != 0 {
				return true
			}
		}
		if !time.Now().Before(deadline) {
			return false
		}
	}
}

func (k stampKeeper) close() {
	if k.fd >= 0 {
		unix.Close(k.fd)
	}
}
