package mock

import (
	"sync"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"
	"github.com/stampede-bench/stampede/httpwire"
	"golang.org/x/sys/unix"
)

// conn is one client connection. Its event loop owns in and reqs and
// parses requests from them; writes may come from the loop (immediate
// answers) or the writer (scheduled ones), never both for one response.
// All writes go straight to the socket with write(2) under mu, so their
// time is known exactly; gnet closes the descriptor only after OnClose,
// which marks the conn dead under mu, so a write never reaches a reused
// descriptor.
type conn struct {
	gc   gnet.Conn
	fd   int
	loop *loopState // scratch space of the conn's event loop
	in   []byte     // unparsed request bytes
	// inSinceNs is when the first of the bytes in in was seen.
	inSinceNs int64
	// reqs reads requests from in, remembering how far it got.
	reqs httpwire.RequestParser
	// continued: "100 Continue" went out for the request being received.
	continued bool
	// For the truth log's arrival stamps (see arrival_linux.go): the
	// peer's IPv4 address and port, the bytes received so far, and where
	// in them the request being served began (-1: unknown, as over TLS).
	peer      uint64
	rawIn     int64
	reqOffset int64

	mu sync.Mutex
	// dead: the connection is closed or closing; nothing more is written.
	// Set only under mu; read without it by isDead.
	dead atomic.Bool
	// slow: the socket once refused part of a write, so gnet's outbound
	// buffer holds bytes; later writes queue behind them via AsyncWrite.
	slow bool
	// busy: a response is on the writer's schedule; the loop parses no
	// further request until it ends.
	busy bool
	// pendingInput: bytes arrived while busy; wake the loop when done.
	pendingInput bool

	// tls is the connection's TLS state; nil for plain HTTP.
	tls *tlsConn
}

// send writes b to the socket and returns the CLOCK_MONOTONIC time read
// right before write(2). ok is false if the connection is gone. b may be
// reused as soon as send returns.
func (cn *conn) send(b []byte, clock *monoClock) (sentNs int64, ok bool) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.dead.Load() {
		return 0, false
	}
	if cn.tls != nil && cn.tls.wr != nil {
		b = cn.tls.seal(b, typeApplication)
	}
	return cn.writeLocked(b, clock)
}

// writeLocked writes b, or queues it behind bytes gnet holds. Called with
// mu held.
func (cn *conn) writeLocked(b []byte, clock *monoClock) (sentNs int64, ok bool) {
	if cn.slow {
		return clock.nowNs(), cn.queue(b)
	}
	for {
		sentNs = clock.nowNs()
		n, err := unix.Write(cn.fd, b)
		switch err {
		case nil:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			n = 0
		default:
			// EPIPE, ECONNRESET: the peer is gone; gnet sees it on read.
			cn.dead.Store(true)
			return sentNs, false
		}
		if n < len(b) {
			cn.slow = true
			return sentNs, cn.queue(b[n:])
		}
		return sentNs, true
	}
}

// queue hands a copy of b to gnet, which writes it when the socket drains.
// Called with mu held.
func (cn *conn) queue(b []byte) bool {
	if err := cn.gc.AsyncWrite(append([]byte(nil), b...), nil); err != nil {
		cn.dead.Store(true)
		return false
	}
	return true
}

// isDead reports whether the connection is gone, without taking mu.
func (cn *conn) isDead() bool { return cn.dead.Load() }

// close closes the connection after what has been written.
func (cn *conn) close() {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if !cn.dead.Load() {
		cn.dead.Store(true)
		_ = cn.gc.Close()
	}
}

// reset aborts the connection with a TCP RST (SO_LINGER 0).
func (cn *conn) reset() {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if !cn.dead.Load() {
		cn.dead.Store(true)
		_ = cn.gc.SetLinger(0)
		_ = cn.gc.Close()
	}
}

// beginResponse marks the conn busy before its request goes to the writer.
func (cn *conn) beginResponse() {
	cn.mu.Lock()
	cn.busy = true
	cn.mu.Unlock()
}

// endResponse is the writer giving the conn back: it closes it if asked,
// else lets the loop parse any request that arrived meanwhile.
func (cn *conn) endResponse(closeAfter bool) {
	if closeAfter {
		cn.close()
	}
	cn.mu.Lock()
	cn.busy = false
	wake := cn.pendingInput && !cn.dead.Load()
	cn.pendingInput = false
	cn.mu.Unlock()
	if wake {
		_ = cn.gc.Wake(nil)
	}
}

// acceptInput reports whether the loop may parse now; if a response is in
// progress it notes that input is waiting instead.
func (cn *conn) acceptInput() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.busy {
		cn.pendingInput = true
		return false
	}
	return !cn.dead.Load()
}

func (cn *conn) markDead() {
	cn.mu.Lock()
	cn.dead.Store(true)
	cn.mu.Unlock()
}
