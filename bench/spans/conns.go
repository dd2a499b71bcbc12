package spans

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// ConnCounts are what the receiver's listener saw of connections: how
// many it took, turned away at its cap or closed to make room, how many
// were closed at the header deadline without having sent a request, and
// the accepts that failed (for the open-files limit, the run's own
// sockets having taken the process's file descriptors, among them).
type ConnCounts struct {
	Accepted int64
	// AtCap were closed at once: every open connection had a request in
	// hand. Evicted were open but waiting (for their first request head,
	// or idle between two) and closed to make room for a new one.
	AtCap   int64
	Evicted int64
	// NoRequest were closed at the header deadline, never having sent a
	// whole request head.
	NoRequest int64
	// AcceptErrors counts the failed accepts, OpenFiles those that failed
	// for the open-files limit (EMFILE, ENFILE), OpenFilesLimit the
	// process's limit then, AcceptError the last error.
	AcceptErrors   int64
	OpenFiles      int64
	OpenFilesLimit uint64
	AcceptError    string
}

// connLimit is the receiver's listener: it keeps at most max connections
// open. A connection past the cap takes the place of the one that has
// waited longest without a request in hand (one that has not sent a whole
// request head yet, or is idle between two), so that senders which open
// connections and say nothing, or dribble a head byte by byte, cannot
// keep an exporter out; only when every connection has a request in hand
// is the new one closed. The server tells it when a connection closes
// (http.Server.ConnState) and the handler when a request starts and ends
// on it (serving).
type connLimit struct {
	net.Listener
	max           int
	headerTimeout time.Duration

	mu     sync.Mutex
	open   map[net.Conn]*connEntry
	counts ConnCounts
}

// connEntry is one open connection: when it was accepted, how many
// requests it has carried and has in hand, and since when it has been
// waiting without one.
type connEntry struct {
	opened, since     time.Time
	requests, serving int
}

func newConnLimit(ln net.Listener, max int, headerTimeout time.Duration) *connLimit {
	return &connLimit{Listener: ln, max: max, headerTimeout: headerTimeout, open: make(map[net.Conn]*connEntry, max)}
}

// Accept returns the next connection within the cap.
func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.failed(err)
			return nil, err
		}
		victim, ok := l.admit(c)
		if victim != nil {
			_ = victim.Close()
		}
		if ok {
			return c, nil
		}
		_ = c.Close()
	}
}

// admit makes room for c, naming the connection to close for it, and
// reports whether c may stay.
func (l *connLimit) admit(c net.Conn) (victim net.Conn, ok bool) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts.Accepted++
	if len(l.open) >= l.max {
		var oldest *connEntry
		for vc, e := range l.open {
			if e.serving == 0 && (oldest == nil || e.since.Before(oldest.since)) {
				victim, oldest = vc, e
			}
		}
		if victim == nil {
			l.counts.AtCap++
			return nil, false
		}
		l.forget(victim, oldest, now)
		l.counts.Evicted++
	}
	l.open[c] = &connEntry{opened: now, since: now}
	return victim, true
}

// forget drops c, counting it when it never carried a request and lived
// until the header deadline.
func (l *connLimit) forget(c net.Conn, e *connEntry, now time.Time) {
	if e.requests == 0 && now.Sub(e.opened) >= l.headerTimeout {
		l.counts.NoRequest++
	}
	delete(l.open, c)
}

// connState is the server's word on c's state: the listener forgets a
// closed connection.
func (l *connLimit) connState(c net.Conn, s http.ConnState) {
	if s != http.StateClosed && s != http.StateHijacked {
		return
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.open[c]; e != nil {
		l.forget(c, e, now)
	}
}

// serving marks a request in hand on c, whose head has been read; the
// function it returns marks its end.
func (l *connLimit) serving(c net.Conn) (done func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.open[c]
	if e == nil {
		return func() {}
	}
	e.requests++
	e.serving++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		e.serving--
		e.since = time.Now()
	}
}

// failed counts a failed accept; the server retries it after a pause.
func (l *connLimit) failed(err error) {
	if errors.Is(err, net.ErrClosed) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts.AcceptErrors++
	l.counts.AcceptError = err.Error()
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		l.counts.OpenFiles++
		l.counts.OpenFilesLimit = openFilesLimit()
	}
}

// Counts are the listener's counts so far.
func (l *connLimit) Counts() ConnCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts
}
