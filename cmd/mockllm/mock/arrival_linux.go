package mock

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The arrival tap gives the truth log the kernel's receive stamp of each
// request's arrival (A records), where the event loop's clock says only
// when the loop got round to reading it: under load that is milliseconds
// later, and a client's "server time to first byte" is judged against the
// server's own view from arrival to first write.
//
// gnet reads sockets with read(2), which drops receive stamps, so the tap
// watches the packets instead: a packet socket (AF_PACKET, which needs
// CAP_NET_RAW; without it the log has no A records) with a classic BPF
// filter that keeps only IPv4 TCP segments to the server's port carrying
// payload or a SYN, truncated to their headers. A packet socket sees the
// very sk_buff the TCP socket receives, stamped once when the kernel took
// it in (on loopback, in netif_rx), so its stamp is the one the server's
// socket would have given. Each kept segment is noted (peer, sequence
// number, length, stamp); at the end each request is matched to the
// segment that carried its first byte: the connection is its peer's
// address and port, its byte offset the sequence number past the SYN's.
// TLS connections have no plaintext offsets and get no A record.

// tapSegment is one segment the tap kept.
type tapSegment struct {
	peer uint64 // IPv4 address << 16 | port
	seq  uint32
	n    uint32 // payload bytes; 0 for a SYN
	syn  bool
	rxNs int64 // CLOCK_REALTIME
}

// arrivalKey is what the truth log keeps of a request to find its stamp.
type arrivalKey struct {
	seq    uint64
	peer   uint64
	offset int64 // the request's first byte in the connection's bytes
	loopNs int64 // when the event loop saw it (CLOCK_MONOTONIC)
}

type arrivalTap struct {
	fd       int
	segs     []tapSegment
	stopping atomic.Bool
	done     chan struct{}
	// realOffNs is CLOCK_REALTIME − CLOCK_MONOTONIC, sampled at open.
	realOffNs int64
}

// tapSnap is how much of each packet the filter keeps: the IPv4 and TCP
// headers with their options.
const tapSnap = 128

// tapPoll is how often a waiting tap looks at its stop flag.
const tapPoll = 50 * time.Millisecond

// peerKey packs an IPv4 address and port; 0 for anything else.
func peerKey(a net.Addr) uint64 {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return 0
	}
	ip4 := ta.IP.To4()
	if ip4 == nil {
		return 0
	}
	return uint64(binary.BigEndian.Uint32(ip4))<<16 | uint64(uint16(ta.Port))
}

// tapFilter keeps IPv4 TCP segments to port that carry payload or a SYN,
// truncated to tapSnap bytes. The packet socket is SOCK_DGRAM: offset 0 is
// the IP header.
func tapFilter(port uint16) []unix.SockFilter {
	const (
		ldB  = unix.BPF_LD | unix.BPF_B | unix.BPF_ABS
		ldH  = unix.BPF_LD | unix.BPF_H | unix.BPF_ABS
		ldHX = unix.BPF_LD | unix.BPF_H | unix.BPF_IND
		ldBX = unix.BPF_LD | unix.BPF_B | unix.BPF_IND
		ldxM = unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		jgt  = unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K
		and  = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		rsh  = unix.BPF_ALU | unix.BPF_RSH | unix.BPF_K
		addX = unix.BPF_ALU | unix.BPF_ADD | unix.BPF_X
		subX = unix.BPF_ALU | unix.BPF_SUB | unix.BPF_X
		tax  = unix.BPF_MISC | unix.BPF_TAX
		ret  = unix.BPF_RET | unix.BPF_K
	)
	// Jump offsets count from the next instruction; keep (19) and drop
	// (20) are the last two.
	return []unix.SockFilter{
		{Code: ldB, K: 0},                   // 0: version and IHL
		{Code: and, K: 0xf0},                // 1
		{Code: jeq, K: 0x40, Jf: 20 - 3},    // 2: IPv4
		{Code: ldB, K: 9},                   // 3: protocol
		{Code: jeq, K: 6, Jf: 20 - 5},       // 4: TCP
		{Code: ldH, K: 6},                   // 5: fragment offset
		{Code: jset, K: 0x1fff, Jt: 20 - 7}, // 6: not a first fragment
		{Code: ldxM, K: 0},                  // 7: X = IP header length
		{Code: ldHX, K: 2},                  // 8: destination port
		{Code: jeq, K: uint32(port), Jf: 20 - 10},
		{Code: ldBX, K: 13},                // 10: TCP flags
		{Code: jset, K: 0x02, Jt: 19 - 12}, // 11: SYN
		{Code: ldBX, K: 12},                // 12: data offset
		{Code: and, K: 0xf0},               // 13
		{Code: rsh, K: 2},                  // 14: TCP header length
		{Code: addX},                       // 15: + IP header length
		{Code: tax},                        // 16
		{Code: ldH, K: 2},                  // 17: total length
		{Code: subX},                       // 18: payload bytes
		{Code: jgt, K: 0, Jt: 0, Jf: 1},    // 19 → keep / drop
		{Code: ret, K: tapSnap},            // 20: keep
		{Code: ret, K: 0},                  // 21: drop
	}
}

// openArrivalTap starts a tap for port's segments; it fails without
// CAP_NET_RAW.
func openArrivalTap(port int) (*arrivalTap, error) {
	// Protocol 0 receives nothing until bind: the filter is in place first.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("arrival tap: packet socket: %w", err)
	}
	filter := tapFilter(uint16(port))
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	for _, err := range []error{
		unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog),
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1),
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: int64(tapPoll / time.Microsecond)}),
	} {
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("arrival tap: socket options: %w", err)
		}
	}
	// A burst of 10,000 requests must not overflow the queue, though
	// each queued segment is charged its whole buffer (kilobytes), not
	// the headers kept, and the tap shares the server's CPU.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 256<<20) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 256<<20)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_IP)}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("arrival tap: bind: %w", err)
	}
	t := &arrivalTap{fd: fd, done: make(chan struct{}), realOffNs: RealtimeOffset(5)}
	go t.run()
	return t, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// RealtimeOffset samples CLOCK_REALTIME − CLOCK_MONOTONIC in ns: of n
// bracketed readings (the realtime read between two monotonic ones), the
// narrowest bracket's, so that a vCPU stall inside one does not bias it.
// The tap and cmd/clusterbench put wall-clock times on the monotonic clock
// of the truth log with it.
func RealtimeOffset(n int) int64 {
	var best, bestWidth int64 = 0, -1
	for range n {
		var m1, r, m2 unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &m1)
		_ = unix.ClockGettime(unix.CLOCK_REALTIME, &r)
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &m2)
		if w := m2.Nano() - m1.Nano(); bestWidth < 0 || w < bestWidth {
			best, bestWidth = r.Nano()-(m1.Nano()+w/2), w
		}
	}
	return best
}

// run notes segments until stop; then it reads what is queued and ends.
func (t *arrivalTap) run() {
	defer close(t.done)
	buf := make([]byte, tapSnap)
	oob := make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))
	for {
		flags := 0
		stopping := t.stopping.Load()
		if stopping {
			flags = unix.MSG_DONTWAIT
		}
		n, oobn, _, _, err := unix.Recvmsg(t.fd, buf, oob, flags)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN && !stopping:
			continue
		case err != nil:
			return
		}
		if seg, ok := parseSegment(buf[:n], oob[:oobn]); ok {
			t.segs = append(t.segs, seg)
		}
	}
}

// parseSegment reads a kept packet's headers and its receive stamp.
func parseSegment(pkt, oob []byte) (tapSegment, bool) {
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		return tapSegment{}, false
	}
	ihl := int(pkt[0]&15) * 4
	if len(pkt) < ihl+14 {
		return tapSegment{}, false
	}
	tcp := pkt[ihl:]
	payload := int(binary.BigEndian.Uint16(pkt[2:])) - ihl - int(tcp[12]>>4)*4
	seg := tapSegment{
		peer: uint64(binary.BigEndian.Uint32(pkt[12:]))<<16 | uint64(binary.BigEndian.Uint16(tcp)),
		seq:  binary.BigEndian.Uint32(tcp[4:]),
		n:    uint32(max(payload, 0)),
		syn:  tcp[13]&0x02 != 0,
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return tapSegment{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			seg.rxNs = ts.Nano()
		}
	}
	return seg, seg.rxNs != 0
}

// stop ends the tap once it has read every segment queued, and returns
// the index of what it saw. Call it once, after the last request arrived.
// A tap that dropped segments (its queue overflowed) returns nil: a
// missed SYN would place a reused port's bytes against the wrong
// connection, so no stamp is trusted.
func (t *arrivalTap) stop() *arrivalIndex {
	t.stopping.Store(true)
	<-t.done
	st, err := unix.GetsockoptTpacketStats(t.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	unix.Close(t.fd)
	if err != nil || st.Drops > 0 {
		return nil
	}
	return newArrivalIndex(t.segs, t.realOffNs)
}

// tapData is a data segment placed in its connection's bytes.
type tapData struct {
	offset uint32 // first payload byte, counted from the byte after the SYN
	n      uint32
	monoNs int64
}

// arrivalIndex finds the segment that carried a request's first byte.
type arrivalIndex struct {
	byPeer map[uint64][]tapData
}

func newArrivalIndex(segs []tapSegment, realOffNs int64) *arrivalIndex {
	x := &arrivalIndex{byPeer: make(map[uint64][]tapData)}
	isn := make(map[uint64]uint32)
	for _, s := range segs {
		if s.syn {
			isn[s.peer] = s.seq
			continue
		}
		base, ok := isn[s.peer]
		if !ok {
			continue // the connection's SYN came before the tap
		}
		x.byPeer[s.peer] = append(x.byPeer[s.peer], tapData{offset: s.seq - base - 1, n: s.n, monoNs: s.rxNs - realOffNs})
	}
	return x
}

// stampSlack absorbs the sampling error of the realtime offset: a
// segment stamped up to this long after the loop read its bytes is still
// taken as theirs.
const stampSlack = int64(time.Millisecond)

// lookup returns the receive stamp (CLOCK_MONOTONIC) of the segment that
// carried k's first byte, or 0 if the tap saw none. Of several (a port
// used again by a later connection, a retransmission), it takes the
// latest received before the loop read the request: the copy the server
// took in.
func (x *arrivalIndex) lookup(k arrivalKey) int64 {
	if x == nil || k.peer == 0 || k.offset < 0 {
		return 0
	}
	off := uint32(k.offset)
	data := x.byPeer[k.peer]
	for _, d := range slices.Backward(data) {
		if off-d.offset < d.n && d.monoNs <= k.loopNs+stampSlack {
			return d.monoNs
		}
	}
	return 0
}
