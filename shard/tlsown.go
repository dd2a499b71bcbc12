package shard

import (
	"crypto/tls"
	"errors"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/stampede-bench/stampede/internal/tls13"
)

// The loop's own resumed handshakes. A connection whose run holds a usable
// session ticket for the server does its handshake on the shard's thread,
// no goroutine: tls13.Resumer builds the ClientHello (the ticket, one key
// share), the loop writes it as the connect completes, and the turn that
// reads the server's flight (ServerHello, EncryptedExtensions, Finished)
// verifies it, derives the traffic keys and writes the client's Finished
// with the request's first record. Full handshakes, TLS 1.2 and every
// attempt the server does not take (a declined ticket, a
// HelloRetryRequest, an alert, a close) go through crypto/tls: an
// abandoned attempt closes its socket and the request starts again on a
// fresh connection with crypto/tls's handshake (Health.TLSOwnRedone, with
// the reason); the request fails only if that connection cannot be opened
// (a connect failure, as any request's).
//
// Tickets: one store per run (ticketStore), shared by its loops, which
// all talk to the one server. crypto/tls's handshakes fill it through the
// session cache that wraps the configuration's (ticketCache: every ticket
// crypto/tls puts is parsed from its SessionState encoding); the loop's
// own connections put the ticket the server sends after the handshake,
// one connection in ticketEvery. Thread contract: put from any goroutine
// (handshakers, loops), get from the loops, under the store's mutex; a
// Ticket is immutable once stored, so a loop uses the one it got without
// copying it.

// OwnResumeEnv switches the loops' own resumed handshakes off when set to
// 0 (then every handshake goes through crypto/tls, as before).
const OwnResumeEnv = "STAMPEDE_TLS_OWN_RESUME"

// ticketStore holds a run's newest ticket for its server.
type ticketStore struct {
	mu sync.Mutex
	t  *tls13.Ticket
	// key is crypto/tls's session cache key of the server the tickets are
	// for (its name, or its address), set by the first session put: a
	// session for another key is not stored.
	key string
	// had: the run has had a ticket (its ramp is over, see awaitTicket).
	had bool
	// unread: why crypto/tls's latest session could not be read (its
	// resumption stays crypto/tls's).
	unread string
}

// PutTicket implements tls13.TicketSink. Any goroutine.
func (st *ticketStore) PutTicket(t *tls13.Ticket) {
	st.mu.Lock()
	st.t, st.had = t, true
	st.mu.Unlock()
}

// putSession stores t, a ticket of crypto/tls's session for key, unless
// the store is another server's; a nil t forgets the ticket (crypto/tls
// deletes key's session).
func (st *ticketStore) putSession(key string, t *tls13.Ticket) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.key == "" && t != nil {
		st.key = key
	}
	switch {
	case st.key == "":
		// A deletion before any session: nothing to forget.
	case key != st.key:
		st.unread = "crypto/tls session not read: for another server (" + key + ")"
	case t == nil:
		st.t = nil
	default:
		st.t, st.had = t, true
	}
}

// hadTicket reports whether the run has had a ticket.
func (st *ticketStore) hadTicket() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.had
}

// get returns the ticket to offer at nowMs (Unix milliseconds), or nil.
func (st *ticketStore) get(nowMs int64) *tls13.Ticket {
	st.mu.Lock()
	t := st.t
	st.mu.Unlock()
	if t == nil || !t.Usable(nowMs) {
		return nil
	}
	return t
}

// drop forgets t if it is still the newest: a resumption with it failed.
func (st *ticketStore) drop(t *tls13.Ticket) {
	st.mu.Lock()
	if st.t == t {
		st.t = nil
	}
	st.mu.Unlock()
}

func (st *ticketStore) unreadWhy() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.unread
}

// ticketCache is the session cache of a run whose loops resume on their
// own: crypto/tls's cache (next) as it was, and each session crypto/tls
// puts parsed into the store (sessions: the configuration's server name
// and verification, see tls13.SessionReader), each deletion (a nil put:
// a failed resumption, an expired certificate) forgetting the store's
// ticket. A session whose encoding does not parse (a Go release that
// changed it) or that crypto/tls would not resume leaves the store as it
// is, with the reason.
type ticketCache struct {
	next     tls.ClientSessionCache
	store    *ticketStore
	sessions tls13.SessionReader
}

func (c *ticketCache) Get(key string) (*tls.ClientSessionState, bool) { return c.next.Get(key) }

func (c *ticketCache) Put(key string, cs *tls.ClientSessionState) {
	c.next.Put(key, cs)
	if cs == nil {
		c.store.putSession(key, nil)
		return
	}
	ticket, state, err := cs.ResumptionState()
	if err == nil && state != nil {
		var t *tls13.Ticket
		if t, err = c.sessions.Read(ticket, state); err == nil {
			c.store.putSession(key, t)
			return
		}
	}
	if err != nil {
		c.store.mu.Lock()
		c.store.unread = "crypto/tls session not read: " + err.Error()
		c.store.mu.Unlock()
	}
}

// withTicketStore returns a copy of c whose session cache also fills a
// new ticket store; c without a cache is returned as it is.
func withTicketStore(c *tls.Config) *tls.Config {
	if c == nil || c.ClientSessionCache == nil {
		return c
	}
	if _, ok := c.ClientSessionCache.(*ticketCache); ok {
		return c
	}
	c = c.Clone()
	c.ClientSessionCache = &ticketCache{next: c.ClientSessionCache, store: &ticketStore{},
		sessions: tls13.SessionReader{ServerName: c.ServerName, CheckCert: !c.InsecureSkipVerify}}
	return c
}

// ownState is a shard's part in its own handshakes.
type ownState struct {
	tickets *ticketStore
	hello   tls13.HelloConfig
	// ownOff is why the shard does no handshake of its own ("" if it
	// does).
	ownOff string
	// ownStopped: the shard has stopped starting own handshakes (too many
	// redone); those in flight end as they would, and connections waiting
	// for a ticket go to crypto/tls (serveTicketWait). tickets stays, for
	// them.
	ownStopped bool
	free       []*ownHS
	ownCPU     time.Duration
	// ownSeen counts the own handshakes, for ticketEvery.
	ownSeen uint64
	// While the run has had no ticket yet, the first connection's handshake
	// goes to crypto/tls (ticketConn, whose server is to send the
	// tickets) and the connections after it wait, connected (waiting),
	// until a ticket comes, or until ticketConn's first answer or end
	// brought none, or ticketWaitMax passed since waitSinceNs: then they
	// go to crypto/tls, and so does every connection after them until a
	// ticket comes (waitOff). Once the run has had one, a connection with
	// no ticket to offer goes to crypto/tls at once: a wait there would
	// count in its request's latency.
	ticketConn  *conn
	waiting     []*tlsDial
	waitSinceNs int64
	waitOff     bool
	// ownSteps counts the own handshakes' steps (a hello, a flight)
	// serveOwn took this turn; outside serveOwn it is ownTurnSteps, so
	// that the events' steps wait: flights in ownReady, hellos in
	// helloReady (their connections waiting, as for a ticket), and the
	// connections waiting for the first ticket in waiting.
	ownSteps   int
	ownReady   []*tlsDial
	helloReady []*tlsDial
}

// ownTurnSteps is how many own handshake steps (a hello: about 40 µs; a
// flight: about 110 µs) a loop turn takes, all after the turn's reads
// (serveOwn); the events only queue them. One step between two looks at
// the sockets is what keeps the other streams' stamps exact: a segment
// still in its socket when the stream's next one arrives is read with it,
// and the read carries the newer segment's stamp (see readOnce). A server
// behind its schedule sends a stream's tokens a few hundred microseconds
// apart, so four steps a turn in the events and four after them (up to
// a millisecond) moved first tokens by as much; one step delays a read
// by at most its own length.
const ownTurnSteps = 1

// ticketWaitMax bounds how long connections wait for the run's first
// ticket.
const ticketWaitMax = time.Second

// ownHS is one own handshake in progress, kept for the next one after.
type ownHS struct {
	r       tls13.Resumer
	in      []byte // the server's bytes not yet taken
	ticket  *tls13.Ticket
	startNs int64
	cpu     time.Duration
}

// initOwn readies the shard's own handshakes, or says why it does none.
func (s *Shard) initOwn() {
	if os.Getenv(OwnResumeEnv) == "0" {
		s.ownOff = OwnResumeEnv + "=0"
		return
	}
	s.cfg.TLS = withTicketStore(s.cfg.TLS)
	tc, ok := s.cfg.TLS.ClientSessionCache.(*ticketCache)
	if !ok {
		s.ownOff = "no session cache"
		return
	}
	var err error
	if s.hello, err = tls13.NewHelloConfig(s.cfg.TLS); err != nil {
		s.ownOff = err.Error()
		return
	}
	s.tickets = tc.store
	s.ownSteps = ownTurnSteps
}

// ownHello starts c's handshake as the loop's own when the store has a
// ticket: the ClientHello goes out now. Without one, c waits for the
// first (see ticketConn), or, false, is left to crypto/tls.
func (s *Shard) ownHello(c *conn, nowNs int64) bool {
	if s.tickets == nil || c.req == nil || c.dial.noOwn {
		return false
	}
	cpu0 := threadCPU()
	now := time.Now().UnixMilli()
	t := s.tickets.get(now)
	if t == nil {
		return s.awaitTicket(c, nowNs)
	}
	if s.ownSteps >= ownTurnSteps {
		// The hello goes out after the turn's reads (serveOwn), or in a
		// turn after.
		c.dial.waiting = true
		c.state = connHandshaking
		s.helloReady = append(s.helloReady, c.dial)
		return true
	}
	return s.sendHello(c, t, now, nowNs, cpu0)
}

// awaitTicket makes c wait for the run's first ticket while a
// connection's handshake that is to bring one runs; false when none does
// (c is then that one, or waiting is off, or the run's ramp is over).
func (s *Shard) awaitTicket(c *conn, nowNs int64) bool {
	if s.waitOff || s.ownStopped || s.tickets.hadTicket() {
		return false
	}
	if s.ticketConn == nil {
		s.ticketConn = c
		return false
	}
	if len(s.waiting) == 0 {
		s.waitSinceNs = nowNs
	}
	c.dial.waiting = true
	c.state = connHandshaking
	s.waiting = append(s.waiting, c.dial)
	return true
}

// serveOwn runs, after each turn's events and reads, the own handshakes'
// steps the events left (ownReady's flights, then helloReady's hellos),
// then ends the connections' wait for the run's first ticket when it came
// (own handshakes, ownTurnSteps a turn) or will not (crypto/tls's, all at
// once).
func (s *Shard) serveOwn() {
	s.ownSteps = 0
	for len(s.ownReady) > 0 && s.ownSteps < ownTurnSteps {
		d := s.ownReady[0]
		s.ownReady[0] = nil
		s.ownReady = s.ownReady[1:]
		d.ownQueued = false
		if c := d.c; c.dial == d && d.own != nil && c.state == connHandshaking {
			s.ownRead(c)
		}
	}
	if len(s.ownReady) == 0 {
		s.ownReady = s.ownReady[:0:0]
	}
	if len(s.helloReady) > 0 {
		s.serveHellos()
	}
	if len(s.waiting) > 0 {
		s.serveTicketWait()
	}
	s.ownSteps = ownTurnSteps
}

// serveHellos sends the deferred hellos the turn has steps left for; a
// connection whose ticket is gone meanwhile goes to crypto/tls.
func (s *Shard) serveHellos() {
	now := time.Now().UnixMilli()
	var t *tls13.Ticket
	if s.tickets != nil {
		t = s.tickets.get(now)
	}
	s.helloReady = s.startQueued(s.helloReady, t, now)
}

// serveTicketWait ends the connections' wait for the run's first ticket
// once it came (their hellos, as the turns have steps for them) or will
// not come: the connection that was to bring it ended or answered without
// it, or ticketWaitMax passed (all of them to crypto/tls, and no more
// waiting in this run).
func (s *Shard) serveTicketWait() {
	now := time.Now().UnixMilli()
	var t *tls13.Ticket
	if !s.ownStopped {
		t = s.tickets.get(now)
	}
	tc := s.ticketConn
	nowNs := s.cfg.Clock.Now()
	gone := tc == nil || tc.state == connClosed || tc.state == connIdle || tc.state == connBusy && tc.gotBytes
	if t == nil && !gone && !s.ownStopped && nowNs-s.waitSinceNs < int64(ticketWaitMax) {
		return
	}
	if t == nil {
		s.waitOff = true
	}
	s.ticketConn = nil
	s.waiting = s.startQueued(s.waiting, t, now)
}

// startQueued takes q's connections, in order, out of their wait: each
// sends its hello resuming t while the turn has steps left, or, without a
// ticket (t nil), goes to crypto/tls, all of them at once. It returns
// what is left of q for the turns after (nil when nothing is).
func (s *Shard) startQueued(q []*tlsDial, t *tls13.Ticket, now int64) []*tlsDial {
	nowNs := s.cfg.Clock.Now()
	i := 0
	for ; i < len(q) && (t == nil || s.ownSteps < ownTurnSteps); i++ {
		d := q[i]
		q[i] = nil
		c := d.c
		if c.dial != d || c.state != connHandshaking || !d.waiting {
			continue // ended meanwhile
		}
		d.waiting = false
		c.state = connBusy
		if t == nil || !s.sendHello(c, t, now, nowNs, threadCPU()) {
			s.submitHandshake(c)
		}
	}
	if i == len(q) {
		return nil
	}
	return q[i:]
}

// deferOwn leaves d's flight for serveOwn: the turn's steps are taken.
func (s *Shard) deferOwn(d *tlsDial) {
	if !d.ownQueued {
		d.ownQueued = true
		s.ownReady = append(s.ownReady, d)
	}
}

// ownPending reports whether own handshake steps wait for the turns
// after: the loop neither sleeps nor naps meanwhile.
func (s *Shard) ownPending() bool {
	return len(s.ownReady) > 0 || len(s.helloReady) > 0 || len(s.waiting) > 0 && s.ticketConn == nil
}

// ticketWaitUntil is when the wait for the run's first ticket ends at the
// latest (-1: none waits), for the loop's epoll_wait.
func (s *Shard) ticketWaitUntil() int64 {
	switch {
	case s.ownPending():
		return 0 // steps left for the next turn
	case len(s.waiting) == 0:
		return -1
	}
	return s.waitSinceNs + int64(ticketWaitMax)
}

// sendHello writes c's ClientHello resuming t. False leaves c to
// crypto/tls.
func (s *Shard) sendHello(c *conn, t *tls13.Ticket, now, nowNs int64, cpu0 time.Duration) bool {
	if s.ownStopped {
		return false
	}
	s.ownSteps++
	o := s.takeOwn()
	hello, err := o.r.Hello(t, &s.hello, now)
	if err != nil {
		s.putOwn(o)
		s.health.TLSOwnRedone++
		s.health.TLSOwnWhy = err.Error()
		return false
	}
	o.ticket, o.startNs = t, nowNs
	c.dial.own = o
	c.state = connHandshaking
	n, err := write(c.fd, hello)
	o.cpu = threadCPU() - cpu0
	if err != nil || n < len(hello) {
		// A new connection's send buffer takes a hello: this one is
		// broken or congested, and crypto/tls's path waits it out.
		s.redoOwn(c, errHelloUnsent)
	}
	return true
}

var errHelloUnsent = errors.New("ClientHello not sent whole")

// maxOwnRedone is how many more own attempts than own handshakes a shard
// redoes through crypto/tls before it stops trying its own.
const maxOwnRedone = 16

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// ownRead reads the server's flight for c's own handshake, one read per
// edge (more only after a read that filled the buffer, or once the peer
// hung up), and finishes the handshake when the flight is whole.
func (s *Shard) ownRead(c *conn) {
	if s.ownSteps >= ownTurnSteps {
		s.deferOwn(c.dial)
		return
	}
	s.ownSteps++
	cpu0 := threadCPU()
	o := c.dial.own
	for {
		data, realtimeNs, err := s.rx.recv(c.fd)
		switch {
		case err == errWouldBlock:
			o.cpu += threadCPU() - cpu0
			return
		case err != nil:
			o.cpu += threadCPU() - cpu0
			s.redoOwn(c, err)
			return
		case len(data) == 0:
			o.cpu += threadCPU() - cpu0
			s.redoOwn(c, io.EOF)
			return
		}
		s.health.Reads++
		if realtimeNs != 0 {
			s.health.StampedReads++
		}
		s.turnBytes += len(data)
		o.in = append(o.in, data...)
		n, done, err := o.r.Read(o.in)
		if err != nil {
			o.cpu += threadCPU() - cpu0
			s.redoOwn(c, err)
			return
		}
		if done {
			s.ownDone(c, o, n, realtimeNs, cpu0)
			return
		}
		o.in = o.in[:copy(o.in, o.in[n:])]
		if len(o.in) > maxHandshakeBytes {
			s.redoOwn(c, tls13.ErrFlightTooLarge)
			return
		}
		if len(data) < len(s.rx.buf) && !c.hungUp {
			o.cpu += threadCPU() - cpu0
			return
		}
	}
}

// ownDone ends c's own handshake, whose server flight o took n bytes of
// (the records after them, session tickets, were read by the read stamped
// stampNs): c becomes a connection of the loop's record layer, and its
// Finished goes out with the request's first records.
func (s *Shard) ownDone(c *conn, o *ownHS, n int, stampNs int64, cpu0 time.Duration) {
	t := &loopTLS{}
	var err error
	if t.out, err = o.r.AppendFinished(t.out); err == nil {
		server, client, res := o.r.Secrets()
		if err = t.records.Init(tls.VersionTLS13, o.r.Suite(), server, client); err == nil {
			if s.ownSeen++; s.ownSeen%ticketEvery == 1 {
				t.records.TakeOwnTickets(s.tickets, res, o.ticket)
			}
		}
	}
	if err != nil {
		o.cpu += threadCPU() - cpu0
		s.redoOwn(c, err)
		return
	}
	nowNs := s.cfg.Clock.Now()
	h := &s.health
	h.TLSHandshakes++
	h.TLSResumed++
	h.TLSOwn++
	h.TLSHandshakeTime += time.Duration(nowNs - o.startNs)
	c.dial, c.tls, c.state = nil, t, connBusy
	if s.cfg.KernelTimestamps {
		c.txStamps, c.sentBytes = enableTxTimestampsFromNow(c.fd), 0
	}
	c.stream.Handshaken(nowNs)
	s.handshaken(c)
	s.writeRequest(c)
	if rest := o.in[n:]; c.state == connBusy && len(rest) > 0 {
		s.openRecords(c, rest, stampNs, nil)
	}
	if c.state == connBusy && c.hungUp {
		// The peer's close came with the flight: no edge reports what
		// follows it (see onReadable).
		s.deferRead(c)
	}
	o.cpu += threadCPU() - cpu0
	s.ownCPU += o.cpu
	s.putOwn(o)
}

// redoOwn abandons c's own handshake for why, before the client said
// anything it cannot take back: c closes, and its request starts again on
// a fresh connection whose handshake is crypto/tls's.
func (s *Shard) redoOwn(c *conn, why error) {
	o := c.dial.own
	s.health.TLSOwnRedone++
	s.health.TLSOwnWhy = why.Error()
	if why != errHelloUnsent {
		// As crypto/tls forgets a session whose resumption failed, however
		// it failed: the server may have declined, forgotten or garbled it.
		s.tickets.drop(o.ticket)
	}
	s.ownCPU += o.cpu
	if h := &s.health; h.TLSOwnRedone > h.TLSOwn+maxOwnRedone && !s.ownStopped {
		// A server that takes none of them: each costs a connection. The
		// ones in flight end as they would; the waiting ones go to
		// crypto/tls in serveTicketWait, not here, which may be in it.
		s.ownStopped, s.ticketConn = true, nil
		s.ownOff = "stopped after " + itoa(h.TLSOwnRedone) + " attempts redone (the latest: " + h.TLSOwnWhy + ")"
	}
	req := c.req
	s.endOwn(c)
	nc, err := s.open(c.dest)
	if err != nil {
		s.fail(c, s.connectErrorTo(c.dest, err))
		return
	}
	// The stream moves with the request, as on a resend (resend.go).
	nc.stream, c.stream = c.stream, nc.stream
	s.timers.clear(c)
	c.giveBack()
	c.req = nil
	s.closeConn(c)
	s.startTLSWith(nc, req, true)
}

// endOwn drops c's own handshake in progress, or its wait for a ticket:
// the socket, the loop's alone, closes with c as a connection of the
// loop's.
func (s *Shard) endOwn(c *conn) {
	if c.dial.own != nil {
		s.putOwn(c.dial.own)
	}
	c.dial.waiting = false
	c.dial, c.state = nil, connBusy
}

func (s *Shard) takeOwn() *ownHS {
	if n := len(s.free); n > 0 {
		o := s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
		return o
	}
	return &ownHS{}
}

// putOwn keeps o for the next handshake: a few are in flight at once on a
// near server, and each keeps its buffers.
func (s *Shard) putOwn(o *ownHS) {
	o.in, o.ticket, o.cpu = o.in[:0], nil, 0
	if cap(o.in) > 64<<10 {
		o.in = nil
	}
	if len(s.free) < 256 {
		s.free = append(s.free, o)
	}
}

// ownHealth completes the shard's account at its end: the own
// handshakes' CPU (spent on the loop's thread, so already in CPUTime) and
// why the shard did none of its own, if so.
func (s *Shard) ownHealth() {
	h := &s.health
	h.TLSHandshakeCPU += s.ownCPU
	switch {
	case s.ownOff != "":
		h.TLSOwnWhy = s.ownOff
	case s.tickets != nil && h.TLSOwnWhy == "":
		h.TLSOwnWhy = s.tickets.unreadWhy()
	}
}
