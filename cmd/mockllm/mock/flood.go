package mock

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/stampede-bench/stampede/httpwire"
	"golang.org/x/sys/unix"
)

// flooder answers the requests that drew a hostile fault (flood,
// endless-line, huge-headers): an answer that never ends, written as fast
// as the client reads it, until the client closes the connection. One
// goroutine serves them all from an epoll set of its own, in which every
// such connection is registered for writability (edge-triggered) beside
// its registration in gnet's loop, which keeps reading it and so notices
// the client's close.
//
// Each answer is a head followed by one unit of bytes repeated forever;
// units are built once per kind and shared. The flooder notes when it
// found each connection closed (a write failed, or gnet closed it), for
// the truth log's C records: that is when the client honoured its
// deadline or its Ctrl-C.
type flooder struct {
	s    *Server
	epfd int

	mu     sync.Mutex
	byFD   map[int32]*floodStream
	units  map[string][]byte // shared bodies by kind (see unitFor)
	closed []floodClose

	stopping atomic.Bool
	done     chan struct{}
	events   []unix.EpollEvent
	again    []*floodStream // wrote a whole burst: more may fit
}

// floodStream is one hostile answer in progress.
type floodStream struct {
	st     *stream
	cn     *conn
	head   []byte
	unit   []byte
	inHead bool
	off    int // next byte of head or unit (of sealed, over TLS)
	// sealed: over TLS, the records of the piece being written.
	sealed []byte
	ended  bool
}

// floodClose is when the client's close of a hostile answer was noticed.
type floodClose struct {
	seq      uint64
	closedNs int64
}

// floodUnitBytes is the size of a repeated body unit, and floodBurst the
// most one connection is given before the others get their turn.
const (
	floodUnitBytes = 64 << 10
	floodBurst     = 1 << 20
)

func newFlooder(s *Server) (*flooder, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("flooder: epoll_create1: %w", err)
	}
	f := &flooder{
		s: s, epfd: epfd,
		byFD:   make(map[int32]*floodStream),
		units:  make(map[string][]byte),
		done:   make(chan struct{}),
		events: make([]unix.EpollEvent, 256),
	}
	go f.run()
	return f, nil
}

// add starts st's hostile answer. Called by the writer goroutine.
func (f *flooder) add(st *stream) {
	fs := &floodStream{st: st, cn: st.conn, inHead: true}
	fs.head, fs.unit = f.answer(st)
	f.mu.Lock()
	defer f.mu.Unlock()
	if st.conn.isDead() {
		f.closed = append(f.closed, floodClose{st.seq, f.s.clock.nowNs()})
		fs.ended = true
		f.s.stats.running.Add(-1)
		f.s.stats.finished.Add(1)
		return
	}
	fd := int32(st.conn.fd)
	f.byFD[fd] = fs
	ev := unix.EpollEvent{Events: unix.EPOLLOUT | unix.EPOLLET, Fd: fd}
	if err := unix.EpollCtl(f.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev); err != nil {
		delete(f.byFD, fd)
		fs.ended = true
		f.s.stats.running.Add(-1)
		f.s.stats.finished.Add(1)
	}
}

// answer returns the head and the repeated unit of st's hostile answer.
func (f *flooder) answer(st *stream) (head, unit []byte) {
	switch st.fault.Kind {
	case FaultEndlessLine:
		head = append([]byte(streamHeaders), httpwire.AppendChunk(nil, []byte(`data: {"choices":[{"index":0,"text":"`))...)
		return head, f.unitFor("endless-line", func() []byte {
			return httpwire.AppendChunk(nil, []byte(strings.Repeat("x", floodUnitBytes-16)))
		})
	case FaultHugeHeaders:
		head = []byte("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n")
		return head, f.unitFor("huge-headers", func() []byte {
			line := "x-filler: " + strings.Repeat("h", 1000) + "\r\n"
			return []byte(strings.Repeat(line, floodUnitBytes/len(line)))
		})
	}
	// flood: comments and token events of the request's own format.
	name := "flood-completion"
	switch st.kind {
	case kindChat:
		name = "flood-chat"
	case kindResponses:
		name = "flood-responses"
	case kindMessages:
		name = "flood-messages"
	}
	return []byte(streamHeaders), f.unitFor(name, func() []byte {
		var enc encoder
		endless := *st
		endless.outTokens = 1 << 30
		endless.includeUsage, endless.continuousUsage = false, false
		var unit []byte
		for k := 1; len(unit) < floodUnitBytes; k++ {
			unit = httpwire.AppendChunk(unit, []byte(": ping\n\n"))
			endless.done = k // token k's word
			unit = enc.appendToken(unit, &endless, k)
		}
		return unit
	})
}

// unitFor returns the shared unit called name, building it once.
func (f *flooder) unitFor(name string, build func() []byte) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.units[name]
	if u == nil {
		u = build()
		f.units[name] = u
	}
	return u
}

// remove ends the hostile answer on cn, if it has one: gnet is closing
// the connection. It runs before gnet closes the descriptor, so the
// registration removed is this connection's.
func (f *flooder) remove(cn *conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fs := f.byFD[int32(cn.fd)]; fs != nil && fs.cn == cn {
		f.endLocked(fs)
	}
}

// endLocked unregisters fs and notes when its close was seen; f.mu held.
func (f *flooder) endLocked(fs *floodStream) {
	if fs.ended {
		return
	}
	fs.ended = true
	f.closed = append(f.closed, floodClose{fs.st.seq, f.s.clock.nowNs()})
	delete(f.byFD, int32(fs.cn.fd))
	_ = unix.EpollCtl(f.epfd, unix.EPOLL_CTL_DEL, fs.cn.fd, nil)
	f.s.stats.running.Add(-1)
	f.s.stats.finished.Add(1)
}

func (f *flooder) run() {
	defer close(f.done)
	for !f.stopping.Load() {
		timeout := 50
		if len(f.again) > 0 {
			timeout = 0
		}
		n, err := unix.EpollWait(f.epfd, f.events, timeout)
		if err != nil && err != unix.EINTR {
			return
		}
		// Connections that took a whole burst go first, then the new edges.
		ready := f.again
		f.again = nil
		for i := 0; i < n; i++ {
			f.mu.Lock()
			fs := f.byFD[f.events[i].Fd]
			f.mu.Unlock()
			if fs != nil {
				ready = append(ready, fs)
			}
		}
		for _, fs := range ready {
			if f.pump(fs) {
				f.again = append(f.again, fs)
			}
		}
	}
}

// pump writes fs's answer until the socket is full or a burst went out;
// it reports whether more may fit.
func (f *flooder) pump(fs *floodStream) (more bool) {
	cn := fs.cn
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.dead.Load() {
		f.mu.Lock()
		f.endLocked(fs)
		f.mu.Unlock()
		return false
	}
	for sent := 0; sent < floodBurst; {
		piece := fs.unit
		if fs.inHead {
			piece = fs.head
		}
		if cn.tls != nil {
			if len(fs.sealed) == 0 {
				fs.sealed = append(fs.sealed, cn.tls.seal(piece, typeApplication)...)
			}
			piece = fs.sealed
		}
		n, err := unix.Write(cn.fd, piece[fs.off:])
		switch err {
		case nil:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			// The client is gone; gnet will see it on read.
			cn.dead.Store(true)
			f.mu.Lock()
			f.endLocked(fs)
			f.mu.Unlock()
			return false
		}
		sent += n
		if fs.off += n; fs.off == len(piece) {
			fs.off = 0
			fs.inHead = false
			fs.sealed = fs.sealed[:0]
		}
	}
	return true
}

// stop ends the goroutine and returns the closes noticed, in order.
func (f *flooder) stop() []floodClose {
	f.stopping.Store(true)
	<-f.done
	unix.Close(f.epfd)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}
