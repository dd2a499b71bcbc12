package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"time"
	"unsafe"

	"github.com/stampede-bench/stampede/engine"
	"golang.org/x/sys/unix"
)

// The floor is the least a client can do to receive what stampede
// receives: one goroutine locked to an OS thread pinned to the client's
// CPU, one edge-triggered epoll, non-blocking sockets with TCP_NODELAY
// (and software receive stamps when stampede's are on), each request
// written as soon as its connect allows, every read one recvmsg into one
// 64 KiB buffer with the stamp taken from its control message, and no
// parsing beyond counting the ends of SSE events ("\n\n") and of responses
// (the chunked body's last chunk). Where stampede's loop design is the
// cheap choice for any client the floor makes it too: one registration
// per socket, raw system calls, at most floorStartsPerTurn connects
// between two looks at the sockets, and the same pause after a light turn
// while reads carry stamps. So its thread's CPU time is the kernel's
// receive path and the wake-ups, and stampede's CPU over it is what
// stampede's parsing, recording and bookkeeping cost. The floor takes no
// transmit stamps, keeps no connection alive, and records nothing but the
// latest stamp of each connection.
//
// It reads the mock's framing only: chunks that end on whole SSE events,
// and a response that ends with responseEnd.

// floorResult is what the floor's loop counted and cost.
type floorResult struct {
	// user and sys are the loop thread's CPU time, first connect to last
	// close; cpu their sum.
	cpu, user, sys time.Duration
	events         int           // SSE events received (ends of events)
	done           int           // responses received to their end
	failed         int           // connections that failed or closed early
	reads          int           // reads that returned bytes
	stamped        int           // of those, reads that carried a kernel receive stamp
	naps           int           // pauses after a light turn
	duration       time.Duration // first connect to last close
}

const (
	// floorStartsPerTurn is stampede's maxStartsPerTurn.
	floorStartsPerTurn = 256
	// floorNap is stampede's coalesceNap, taken on the same condition.
	floorNap = 200 * time.Microsecond
	// floorMaxEvents is stampede's maxEvents.
	floorMaxEvents = 1024
	// floorIdleLimit ends a floor run in which nothing arrived this long.
	floorIdleLimit = time.Minute
)

// floorSource is the floor's own source address. Its connections go to
// the same mock port as stampede's, and a connect(2) must find a port
// whose 4-tuple is free: from stampede's address it would search past the
// 10,000 sockets stampede's run just left in TIME_WAIT (and stampede past
// the floor's, with -floor-first), a cost neither run should bear for the
// other. The bind is one system call more per connection for the floor.
var floorSource = unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 2}}

// responseEnd is the end of a chunked body: the line break of the chunk
// before, the last chunk, and the empty trailer.
const responseEnd = "\r\n0\r\n\r\n"

var eventEnd = []byte("\n\n")

// floorConn is one stream of the floor.
type floorConn struct {
	fd      int
	wire    []byte // the request
	written int
	// tail holds the last bytes read, so that an event's or a response's
	// end split over two reads is still seen.
	tail    [len(responseEnd)]byte
	tailLen int
	// lastStampNs keeps the latest read's stamp, as a recorder would.
	lastStampNs int64
}

// floor is the loop's state; one thread owns it.
type floor struct {
	ep     int
	sa     unix.Sockaddr
	stamps bool
	conns  []*floorConn // by fd
	events []unix.EpollEvent
	buf    []byte
	oob    [128]byte
	iov    unix.Iovec
	msg    unix.Msghdr
	open   int // connections not yet ended
	res    floorResult
}

// runFloor sends wires (one request each) to addr from one thread pinned
// to cpu (-1: not pinned) and reads every response to its end.
func runFloor(addr netip.AddrPort, wires [][]byte, cpu int, stamps bool) (floorResult, error) {
	if !addr.Addr().Unmap().Is4() {
		return floorResult{}, errors.New("floor: IPv4 mock addresses only")
	}
	type outcome struct {
		res floorResult
		err error
	}
	out := make(chan outcome, 1)
	go func() {
		// The thread stays locked: the runtime discards it with the
		// goroutine rather than reuse a thread pinned to one CPU.
		runtime.LockOSThread()
		res, err := floorRun(addr, wires, cpu, stamps)
		out <- outcome{res, err}
	}()
	o := <-out
	return o.res, o.err
}

func floorRun(addr netip.AddrPort, wires [][]byte, cpu int, stamps bool) (floorResult, error) {
	if cpu >= 0 {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return floorResult{}, fmt.Errorf("floor: sched_setaffinity: %w", err)
		}
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return floorResult{}, fmt.Errorf("floor: epoll_create1: %w", err)
	}
	defer unix.Close(ep)
	f := &floor{
		ep:     ep,
		sa:     &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().Unmap().As4()},
		stamps: stamps,
		conns:  make([]*floorConn, 0, len(wires)+64),
		events: make([]unix.EpollEvent, floorMaxEvents),
		buf:    make([]byte, 64<<10),
	}
	f.msg.Iov = &f.iov
	f.msg.Iovlen = 1
	begin := time.Now()
	user0, sys0 := threadCPU()
	err = f.loop(wires)
	user, sys := threadCPU()
	f.res.user, f.res.sys = user-user0, sys-sys0
	f.res.cpu = f.res.user + f.res.sys
	f.res.duration = time.Since(begin)
	return f.res, err
}

func (f *floor) loop(wires [][]byte) error {
	next, lastRead := 0, time.Now()
	for next < len(wires) || f.open > 0 {
		for n := 0; n < floorStartsPerTurn && next < len(wires); n++ {
			f.start(wires[next])
			next++
		}
		n, err := f.wait(next < len(wires))
		if err != nil {
			return err
		}
		if n == 0 {
			if time.Since(lastRead) > floorIdleLimit {
				return fmt.Errorf("floor: nothing arrived for %v with %d responses open", floorIdleLimit, f.open)
			}
			continue
		}
		lastRead = time.Now()
		stamped := false
		for i := range f.events[:n] {
			if f.handle(&f.events[i]) {
				stamped = true
			}
		}
		if stamped && n < len(f.events) {
			f.res.naps++
			ts := unix.NsecToTimespec(int64(floorNap))
			unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
		}
	}
	return nil
}

// wait returns how many events epoll has ready, looking without blocking
// first; it blocks (up to a second) only when nothing is ready and no
// start waits.
func (f *floor) wait(starting bool) (int, error) {
	r, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(f.ep), uintptr(unsafe.Pointer(&f.events[0])),
		uintptr(len(f.events)), 0, 0, 0)
	if errno == 0 && (r > 0 || starting) {
		return int(r), nil
	}
	for {
		n, err := unix.EpollWait(f.ep, f.events, 1000)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("floor: epoll_wait: %w", err)
		}
		return n, nil
	}
}

// start opens a connection for wire and writes it if the connect allows.
func (f *floor) start(wire []byte) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		f.res.failed++
		return
	}
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	// The kernel picks the port at connect(2), from the whole 4-tuple.
	unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
	if err := unix.Bind(fd, &floorSource); err != nil {
		unix.Close(fd)
		f.res.failed++
		return
	}
	if err := unix.Connect(fd, f.sa); err != nil && err != unix.EINPROGRESS {
		unix.Close(fd)
		f.res.failed++
		return
	}
	if f.stamps {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING_NEW,
			unix.SOF_TIMESTAMPING_RX_SOFTWARE|unix.SOF_TIMESTAMPING_SOFTWARE)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(fd)}
	if err := unix.EpollCtl(f.ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(fd)
		f.res.failed++
		return
	}
	c := &floorConn{fd: fd, wire: wire}
	for fd >= len(f.conns) {
		f.conns = append(f.conns, nil)
	}
	f.conns[fd] = c
	f.open++
	f.write(c)
}

// write sends what the socket takes of c's request; on a socket still
// connecting that is nothing, and EPOLLOUT brings the loop back.
func (f *floor) write(c *floorConn) {
	for c.written < len(c.wire) {
		b := c.wire[c.written:]
		n, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(c.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
			unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT, 0, 0)
		if errno == unix.EAGAIN {
			return
		}
		if errno != 0 {
			f.end(c, false)
			return
		}
		c.written += int(n)
	}
}

// handle serves one epoll event and reports whether a read carried a
// kernel stamp.
func (f *floor) handle(ev *unix.EpollEvent) (stamped bool) {
	fd := int(ev.Fd)
	if fd >= len(f.conns) || f.conns[fd] == nil {
		return false
	}
	c := f.conns[fd]
	if ev.Events&unix.EPOLLOUT != 0 && c.written < len(c.wire) {
		f.write(c)
		if f.conns[fd] != c {
			return false
		}
	}
	if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) == 0 {
		return false
	}
	// Edge-triggered: read until the socket is drained.
	for {
		f.iov.Base = &f.buf[0]
		f.iov.SetLen(len(f.buf))
		f.msg.Control = &f.oob[0]
		f.msg.SetControllen(len(f.oob))
		got, _, errno := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&f.msg)), 0)
		if errno == unix.EAGAIN {
			return stamped
		}
		if errno != 0 || got == 0 {
			f.end(c, false)
			return stamped
		}
		f.res.reads++
		if ts := rxStamp(f.oob[:f.msg.Controllen]); ts != 0 {
			c.lastStampNs = ts
			f.res.stamped++
			stamped = true
		} else {
			c.lastStampNs = monotonicNs()
		}
		if c.count(f.buf[:got], &f.res.events) {
			f.end(c, true)
			return stamped
		}
		if int(got) < len(f.buf) {
			return stamped
		}
	}
}

// end closes c: its response was received to its end, or not.
func (f *floor) end(c *floorConn, whole bool) {
	if whole {
		f.res.done++
	} else {
		f.res.failed++
	}
	f.conns[c.fd] = nil
	unix.RawSyscall(unix.SYS_CLOSE, uintptr(c.fd), 0, 0)
	f.open--
}

// count adds the SSE event ends in data to *events and reports whether
// data ends the response.
func (c *floorConn) count(data []byte, events *int) (ended bool) {
	*events += bytes.Count(data, eventEnd)
	if c.tailLen > 0 && c.tail[c.tailLen-1] == '\n' && data[0] == '\n' {
		*events++
	}
	// Keep the last len(tail) bytes of the stream.
	if len(data) >= len(c.tail) {
		copy(c.tail[:], data[len(data)-len(c.tail):])
		c.tailLen = len(c.tail)
	} else {
		keep := min(c.tailLen, len(c.tail)-len(data))
		copy(c.tail[:], c.tail[c.tailLen-keep:c.tailLen])
		copy(c.tail[keep:], data)
		c.tailLen = keep + len(data)
	}
	return c.tailLen == len(c.tail) && string(c.tail[:]) == responseEnd
}

// rxStamp is the software receive stamp (CLOCK_REALTIME ns) in a read's
// control messages, or 0.
func rxStamp(oob []byte) int64 {
	const hdr = unix.SizeofCmsghdr
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && (h.Type == unix.SO_TIMESTAMPING_NEW || h.Type == unix.SCM_TIMESTAMPING) && l >= hdr+16 {
			ts := (*[2]int64)(unsafe.Pointer(&oob[hdr]))
			return ts[0]*1e9 + ts[1]
		}
		l = (l + 7) &^ 7
		if l >= len(oob) {
			return 0
		}
		oob = oob[l:]
	}
	return 0
}

func monotonicNs() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// threadCPU is the calling thread's user and system CPU time.
func threadCPU() (user, sys time.Duration) {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// reportFloor prints the floor's run and stampede's CPU per token event
// beside it. Both divide by token events: the floor's SSE events less the
// two per response that carry no token (the usage chunk and [DONE]).
func reportFloor(o options, res *engine.Result, cost clientCost, fl floorResult) {
	cpu, user, sys, events := cost.cpu(), cost.user, cost.sys, cost.events
	var shardCPU time.Duration
	for _, s := range res.Health.Shards {
		shardCPU += s.CPUTime
	}
	flTokens := fl.events - o.api.framingEvents*fl.done
	stamps := "kernel receive stamps on (no transmit stamps)"
	if !o.kernelStamps {
		stamps = "kernel stamps off"
	}
	fmt.Printf("floor (one pinned thread: epoll + recvmsg, counting event ends; %s): %d of %d responses whole, %d failed, %d token events (%d SSE events), %d reads (%d stamped), %d naps, duration %v\n",
		stamps, fl.done, o.streams, fl.failed, flTokens, fl.events, fl.reads, fl.stamped, fl.naps, fl.duration.Round(time.Millisecond))
	if events == 0 || flTokens <= 0 {
		fmt.Println("CPU per token event: no events to divide by")
		return
	}
	perEvent := func(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
	client, thread, floor := perEvent(cpu, events), perEvent(shardCPU, events), perEvent(fl.cpu, flTokens)
	fmt.Printf("CPU per token event: stampede %.2f µs (user %.2f, system %.2f; its shard threads %.2f), floor %.2f µs (user %.2f, system %.2f); ratio %.2f× (shard threads %.2f×)\n",
		client, perEvent(user, events), perEvent(sys, events), thread,
		floor, perEvent(fl.user, flTokens), perEvent(fl.sys, flTokens), client/floor, thread/floor)
}
