package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/stampede-bench/stampede/bench/report"
)

// The cluster protocol runs between stampede's own processes over one TCP
// connection per agent, on goroutines of its own (never on a shard). Every
// message is a frame:
//
//	kind    1 byte (frameHello, …)
//	length  4 bytes, big-endian
//	payload length bytes
//
// An agent connects to agent 0, which sends challenge (the run's nonce,
// then one fresh for this connection, nonceLen bytes each); the agent
// answers hello (JSON clusterHello, its MAC over both nonces and its own
// fields keyed by the cluster token, see auth.go). An agent that cannot
// take part (a check of its own failed before it registered) says why in
// its hello's refusal instead, and agent 0 stops the run with that text.
// Agent 0 then sends clock
// probes, ping (8 bytes: its wall clock in Unix ns) each answered by pong
// (16 bytes: the ping's time, then the agent's wall clock when it read the
// ping), then start (JSON clusterStart, with agent 0's own MAC). After its
// share of the run the agent streams its partial as result frames: the
// partial's prelude, then each of its sections (partial_stream.go), each
// frame its MAC (over the run's nonce, the agent's index, the frame's
// number in the stream and its bytes) and then its bytes, so that agent 0
// checks each chunk of records before it appends them to its spool, and
// no frame can be dropped, repeated or moved. Either side may send fail
// (text) instead, and close. A reader names the kinds it accepts next, each with its bound, so
// no peer makes it read a frame it does not expect or buffer more than the
// bound.
const (
	frameChallenge = 'C'
	frameHello     = 'H'
	framePing      = 'P'
	framePong      = 'Q'
	frameStart     = 'S'
	frameResult    = 'R'
	frameFail      = 'E'
)

// clusterProtocol is the version hello carries; agents of another refuse.
// Version 3 added the hello's refusal; version 4 streams the partial.
const clusterProtocol = 4

// Frame bounds. A hello, a start and a fail are small JSON or text; a
// result frame holds a partial's prelude or one of its sections, and all
// of an agent's result frames together are bounded by its share
// (maxResultBytes).
const (
	maxHelloFrame   = 4 << 10
	maxStartFrame   = 4 << 10
	maxFailFrame    = 16 << 10
	maxPreludeFrame = sha256.Size + 64 + maxPartialHeader
	maxSectionFrame = sha256.Size + 1 + maxPartialSection
)

// maxResultBytes bounds what an agent that sends requests of a run
// delivers, its frames' MACs and all: its header, and maxResultPerRequest
// per request (a record with every token gap and, with --save-detailed,
// the generated text).
func maxResultBytes(requests int) uint64 {
	return maxPreludeFrame + 1<<20 + uint64(max(requests, 0))*maxResultPerRequest
}

// maxResultPerRequest is a record's allowance: 1 MiB holds about 300,000
// token gaps, or a long text.
const maxResultPerRequest = 1 << 20

// clockProbes is how many ping/pong exchanges measure an agent's clock;
// the one with the smallest round trip is kept (its delays are the
// smallest, so its midpoint is the least skewed).
const clockProbes = 16

// clusterHello registers an agent.
type clusterHello struct {
	Protocol int `json:"protocol"`
	Size     int `json:"size"`
	Index    int `json:"index"`
	// Digest identifies the run: what changes the requests and the
	// schedule (RunDigest); every agent must have the same.
	Digest string `json:"digest"`
	// Statistics identifies what the merge computes (StatisticsDigest).
	Statistics string `json:"statistics"`
	// Refusal, when set, is why this agent cannot take part in the run:
	// it does not register, and agent 0 stops the run with this text.
	Refusal string `json:"refusal,omitempty"`
	// MAC proves the agent holds the cluster token (helloMAC).
	MAC string `json:"mac"`
}

// maxRefusal bounds a refusal's text, so that its hello fits
// maxHelloFrame.
const maxRefusal = 2 << 10

// clusterStart tells an agent when the run starts and what its clock
// probes found.
type clusterStart struct {
	// StartUnixNs is the start on agent 0's clock.
	StartUnixNs int64                    `json:"start_unix_ns"`
	Clock       report.SidecarAgentClock `json:"clock"`
	// MAC proves agent 0 holds the cluster token (startMAC).
	MAC string `json:"mac"`
}

// writeFrame sends one frame.
func writeFrame(w io.Writer, kind byte, payload []byte) error {
	if uint64(len(payload)) > 1<<32-1 {
		return fmt.Errorf("cluster: a %c frame of %d bytes is too large", kind, len(payload))
	}
	head := [5]byte{kind}
	binary.BigEndian.PutUint32(head[1:], uint32(len(payload)))
	if _, err := w.Write(head[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// FrameError names a protocol violation in the cluster's frames.
type FrameError struct{ What string }

func (e *FrameError) Error() string { return "cluster protocol: " + e.What }

// frameLimits are the kinds of frame a reader accepts next, each with the
// largest payload it takes.
type frameLimits map[byte]uint32

// readFrame reads one frame of a kind in limits, checking its declared
// length against that kind's bound before reading it; the payload is read
// as it arrives, never allocated ahead of the bytes.
func readFrame(r io.Reader, limits frameLimits) (kind byte, payload []byte, err error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	kind, n := head[0], binary.BigEndian.Uint32(head[1:])
	limit, ok := limits[kind]
	switch {
	case !ok:
		return 0, nil, &FrameError{fmt.Sprintf("a frame of kind %q where %s was due", kind, limits)}
	case n > limit:
		return 0, nil, &FrameError{fmt.Sprintf("a %c frame of %d bytes (at most %d)", kind, n, limit)}
	}
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return kind, buf.Bytes(), nil
}

// String lists the kinds, for errors.
func (l frameLimits) String() string {
	kinds := make([]string, 0, len(l))
	for k := range l {
		kinds = append(kinds, string(rune(k)))
	}
	slices.Sort(kinds)
	return strings.Join(kinds, " or ")
}

// FailError is a fail frame's text: agent 0's reason the run, or this
// connection, ends.
type FailError struct{ Text string }

func (e *FailError) Error() string { return e.Text }

// expectFrame reads a frame of kind want (at most limit bytes); a fail
// frame becomes a *FailError.
func expectFrame(r io.Reader, want byte, limit uint32) ([]byte, error) {
	kind, payload, err := readFrame(r, frameLimits{want: limit, frameFail: maxFailFrame})
	switch {
	case err != nil:
		return nil, err
	case kind == frameFail:
		return nil, &FailError{string(payload)}
	}
	return payload, nil
}

// coordinator is agent 0's side: it listens, registers the other agents,
// measures their clocks, announces the start and collects the partials.
type coordinator struct {
	ln         net.Listener
	size       int
	digest     string
	statistics string
	token      string
	nonce      []byte // the run's
	timeout    time.Duration
	// shares[k] is how many requests agent k sends (its result's bound).
	shares []int
	agents []*agentConn // by index; [0] unused
	// logf reports a connection dropped during registration.
	logf func(format string, args ...any)
}

type agentConn struct {
	index     int
	conn      net.Conn
	r         *bufio.Reader
	challenge []byte
	clock     report.SidecarAgentClock
}

// handshakeTimeout bounds a connection's time from its accept to its
// hello: a peer that says nothing (a port scan, a TCP probe) is dropped
// then. An agent sends its hello as soon as it reads the challenge.
const handshakeTimeout = 10 * time.Second

// refusalLinger is how long agent 0, having refused the run, still
// answers agents that connect with the reason, so that one started a
// little later exits with it too instead of waiting for
// --cluster-timeout-sec.
const refusalLinger = 3 * time.Second

// listenAddr is the address agent 0 listens on for --coordinator addr:
// the address among those HOST resolves to that this host holds (in
// Kubernetes, the pod's own), never every interface unless HOST is the
// unspecified address (0.0.0.0, ::) itself. A name that does not resolve
// to this host yet (a DNS record not yet published) is looked up again
// until the deadline.
func listenAddr(ctx context.Context, addr string, deadline time.Time) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--coordinator %s: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return addr, nil
	}
	for {
		ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		var resolved []string
		if err == nil {
			local := localAddrs()
			for _, ip := range ips {
				resolved = append(resolved, ip.IP.String())
				if local[ip.IP.String()] || ip.IP.IsLoopback() {
					return net.JoinHostPort(ip.IP.String(), port), nil
				}
			}
			err = fmt.Errorf("%s resolves to %s, none of them an address of this host", host, strings.Join(resolved, ", "))
		}
		if ctx.Err() != nil || !time.Now().Add(joinRetry).Before(deadline) {
			return "", fmt.Errorf("cluster: agent 0 listens where --coordinator %s points, on this host: %w", addr, err)
		}
		select {
		case <-time.After(joinRetry):
		case <-ctx.Done():
		}
	}
}

// localAddrs are this host's interface addresses.
func localAddrs() map[string]bool {
	out := map[string]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			out[n.IP.String()] = true
		}
	}
	return out
}

// listenCoordinator listens where addr (--coordinator) points on this
// host (listenAddr).
func listenCoordinator(ctx context.Context, addr string, a Auth, size int, shares []int, timeout time.Duration, logf func(string, ...any)) (*coordinator, error) {
	bind, err := listenAddr(ctx, addr, time.Now().Add(timeout))
	if err != nil {
		return nil, err
	}
	ln, err := inheritedListener(bind)
	if err != nil {
		return nil, err
	}
	if ln == nil {
		if ln, err = net.Listen("tcp", bind); err != nil {
			return nil, fmt.Errorf("cluster: agent 0 cannot listen on %s (--coordinator %s): %w", bind, addr, err)
		}
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &coordinator{ln: ln, size: size, digest: a.Digest, statistics: a.Statistics, token: a.Token, nonce: newNonce(),
		timeout: timeout, shares: shares, agents: make([]*agentConn, size), logf: logf}, nil
}

// inheritedListener is the listening socket --cluster-local's launcher
// opened on bind and passed down (coordinatorFDEnv); nil when none was.
// It is taken once: the variable is cleared, so that a later run of this
// process listens anew and a child started from here inherits nothing.
func inheritedListener(bind string) (net.Listener, error) {
	value, ok := os.LookupEnv(coordinatorFDEnv)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(coordinatorFDEnv)
	fd, err := strconv.Atoi(value)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("cluster: $%s=%q: want the descriptor of agent 0's listening socket, 3 or more", coordinatorFDEnv, value)
	}
	f := os.NewFile(uintptr(fd), "coordinator listener")
	ln, err := net.FileListener(f)
	f.Close() // the listener holds a descriptor of its own
	if err != nil {
		return nil, fmt.Errorf("cluster: $%s=%d is no listening socket: %w", coordinatorFDEnv, fd, err)
	}
	if got := ln.Addr().String(); got != bind {
		ln.Close()
		return nil, fmt.Errorf("cluster: the listening socket of $%s=%d is on %s, not on %s where --coordinator points", coordinatorFDEnv, fd, got, bind)
	}
	return ln, nil
}

// Close closes the listener and every agent's connection.
func (c *coordinator) Close() {
	c.ln.Close()
	for _, a := range c.agents {
		if a != nil {
			a.conn.Close()
		}
	}
}

// fail tells every registered agent why the run ends, and returns err.
func (c *coordinator) fail(err error) error {
	for _, a := range c.agents {
		if a != nil {
			tell(a.conn, err)
		}
	}
	return err
}

// tell sends conn a fail frame with err, briefly.
func tell(conn net.Conn, err error) { tellText(conn, "agent 0: "+err.Error()) }

// tellText sends conn a fail frame with text, briefly.
func tellText(conn net.Conn, text string) {
	conn.SetWriteDeadline(time.Now().Add(time.Second))
	writeFrame(conn, frameFail, []byte(text))
}

// greeting is a connection that sent an authenticated hello.
type greeting struct {
	hello clusterHello
	agent *agentConn
}

// register accepts agents until each index 1..size-1 has one, or the
// timeout. Connections are taken concurrently, each with
// handshakeTimeout to send its hello; one that sends anything but a
// hello keyed by the cluster token is logged and dropped, and the run
// goes on. An authenticated agent of another run (other digest, size,
// index) fails the run: every registered agent is told why, and so is
// every agent that connects within refusalLinger.
func (c *coordinator) register(ctx context.Context) error {
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	greetings := make(chan greeting)
	done := make(chan struct{})
	var refusal error // set before done closes
	// The accept loop ends with the listener, which closes before this
	// returns; a handshake under way ends within its deadline, and is
	// dropped (told why on a refusal) once done is closed.
	var accepting sync.WaitGroup
	defer accepting.Wait()
	accepting.Go(func() {
		for {
			conn, err := c.ln.Accept()
			if err != nil {
				return
			}
			go func() {
				select {
				case <-done:
					if refusal != nil {
						tell(conn, refusal)
					}
					conn.Close()
					return
				default:
				}
				a, h, err := c.handshake(conn)
				if err != nil {
					c.logf("stampede: agent 0 dropped a connection from %s: %v", conn.RemoteAddr(), err)
					conn.Close()
					return
				}
				select {
				case greetings <- greeting{h, a}:
				case <-done:
					if refusal != nil {
						tell(conn, refusal)
					}
					conn.Close()
				}
			}()
		}
	})
	end := func(err error) error {
		refusal = err
		close(done)
		c.fail(err)
		if err != nil && ctx.Err() == nil {
			// Agents still connecting hear the reason too.
			select {
			case <-time.After(min(refusalLinger, c.timeout)):
			case <-ctx.Done():
			}
		}
		c.ln.Close()
		return err
	}
	for c.registered() < c.size-1 {
		select {
		case <-ctx.Done():
			return end(ctx.Err())
		case <-timer.C:
			return end(fmt.Errorf("cluster: agent(s) %s of %d did not register within --cluster-timeout-sec %v (agent 0 listens on %s)",
				strings.Join(c.missing(), ", "), c.size, c.timeout.Seconds(), c.ln.Addr()))
		case g := <-greetings:
			if err := c.admit(g); err != nil {
				tellText(g.agent.conn, refusedAgent(err))
				g.agent.conn.Close()
				return end(err)
			}
		}
	}
	// Registration is over: later connections are refused by the system.
	close(done)
	c.ln.Close()
	return nil
}

func (c *coordinator) registered() int {
	n := 0
	for _, a := range c.agents[1:] {
		if a != nil {
			n++
		}
	}
	return n
}

func (c *coordinator) missing() []string {
	var out []string
	for i, a := range c.agents {
		if i > 0 && a == nil {
			out = append(out, fmt.Sprint(i))
		}
	}
	return out
}

// handshake challenges a new connection and reads its hello, within
// handshakeTimeout; an error means the peer is no agent of this run's
// token (it is dropped, the run goes on). A peer that holds the token but
// the wrong one is told so before it is dropped.
func (c *coordinator) handshake(conn net.Conn) (*agentConn, clusterHello, error) {
	conn.SetDeadline(time.Now().Add(min(handshakeTimeout, c.timeout)))
	challenge := newNonce()
	if err := writeFrame(conn, frameChallenge, append(slices.Clip(c.nonce), challenge...)); err != nil {
		return nil, clusterHello{}, err
	}
	r := bufio.NewReader(conn)
	payload, err := expectFrame(r, frameHello, maxHelloFrame)
	if err != nil {
		return nil, clusterHello{}, err
	}
	var h clusterHello
	if err := json.Unmarshal(payload, &h); err != nil {
		return nil, clusterHello{}, &FrameError{"malformed hello: " + err.Error()}
	}
	if !equalMAC(h.MAC, helloMAC(c.token, c.nonce, challenge, h)) {
		err := errors.New("its hello is not keyed by this run's cluster token (--cluster-token, --cluster-token-file or $STAMPEDE_CLUSTER_TOKEN must be the same on every agent), or answers another challenge")
		tell(conn, fmt.Errorf("refused this connection: %w", err))
		return nil, clusterHello{}, err
	}
	conn.SetDeadline(time.Time{})
	return &agentConn{index: h.Index, conn: conn, r: r, challenge: challenge}, h, nil
}

// admit checks an authenticated agent's hello against this run and
// registers it; an error fails the run.
func (c *coordinator) admit(g greeting) error {
	h := g.hello
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("cluster: agent at %s: "+format, append([]any{g.agent.conn.RemoteAddr()}, args...)...)
	}
	switch {
	case h.Protocol != clusterProtocol:
		return refuse("protocol %d, agent 0 speaks %d (run the same stampede everywhere)", h.Protocol, clusterProtocol)
	case h.Size != c.size:
		return refuse("--cluster-size %d, agent 0 has %d", h.Size, c.size)
	case h.Index < 1 || h.Index >= c.size:
		return refuse("index %d: want 1 to %d", h.Index, c.size-1)
	case h.Refusal != "":
		return refusalError(h.Index, h.Refusal)
	case c.agents[h.Index] != nil:
		return refuse("index %d is already registered from %s", h.Index, c.agents[h.Index].conn.RemoteAddr())
	case h.Digest != c.digest:
		return refuse("agent %d builds other requests or another schedule than agent 0 (flags among %s, the seed or the dataset differ)", h.Index, digestFlags)
	case h.Statistics != c.statistics:
		return refuse("agent %d computes other statistics than agent 0 (flags among %s differ)", h.Index, statisticsFlags)
	}
	c.agents[h.Index] = g.agent
	return nil
}

// probeClocks measures every agent's clock offset against this host's,
// agents in parallel.
func (c *coordinator) probeClocks() error {
	var wg sync.WaitGroup
	errs := make([]error, c.size)
	for _, a := range c.agents[1:] {
		wg.Go(func() { errs[a.index] = a.probe(time.Now().Add(c.timeout)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return c.fail(err)
	}
	return nil
}

// probe exchanges clockProbes pings with the agent. For a ping sent at t1
// (this clock) and answered with the agent's t2, received at t3:
//
//	offset = t2 − (t1 + t3)/2,   |true offset − offset| ≤ (t3 − t1)/2
//
// whatever the split of the round trip between the two directions; the
// exchange with the smallest round trip gives the tightest bound.
func (a *agentConn) probe(deadline time.Time) error {
	a.conn.SetDeadline(deadline)
	best := int64(-1)
	for range clockProbes {
		sent := time.Now()
		var ping [8]byte
		binary.BigEndian.PutUint64(ping[:], uint64(sent.UnixNano()))
		if err := writeFrame(a.conn, framePing, ping[:]); err != nil {
			return fmt.Errorf("cluster: agent %d: clock probe: %w", a.index, err)
		}
		payload, err := expectFrame(a.r, framePong, 16)
		rtt := time.Since(sent).Nanoseconds() // monotonic
		if err != nil {
			return fmt.Errorf("cluster: agent %d: clock probe: %w", a.index, err)
		}
		if len(payload) != 16 || binary.BigEndian.Uint64(payload) != uint64(sent.UnixNano()) {
			return fmt.Errorf("cluster: agent %d: clock probe: %w", a.index, &FrameError{"a pong that answers no ping"})
		}
		t2 := int64(binary.BigEndian.Uint64(payload[8:]))
		if best < 0 || rtt < best {
			best = rtt
			a.clock = report.SidecarAgentClock{OffsetNs: t2 - (sent.UnixNano() + rtt/2), ErrorBoundNs: (rtt + 1) / 2, MinRTTNs: rtt}
		}
	}
	a.clock.Probes = clockProbes
	return nil
}

// announce sends every agent the start, on this host's clock.
func (c *coordinator) announce(startUnixNs int64) error {
	for _, a := range c.agents[1:] {
		st := clusterStart{StartUnixNs: startUnixNs, Clock: a.clock}
		st.MAC = startMAC(c.token, c.nonce, a.challenge, st)
		body, _ := json.Marshal(st)
		a.conn.SetWriteDeadline(time.Now().Add(c.timeout))
		if err := writeFrame(a.conn, frameStart, body); err != nil {
			return c.fail(fmt.Errorf("cluster: agent %d: announcing the start: %w", a.index, err))
		}
	}
	return nil
}

// maxRTT is the largest of the agents' smallest round trips.
func (c *coordinator) maxRTT() time.Duration {
	var m int64
	for _, a := range c.agents[1:] {
		m = max(m, a.clock.MinRTTNs)
	}
	return time.Duration(m)
}

// collect streams every agent's partial into m, each agent's on a
// goroutine of its own, and returns why each agent that did not deliver
// its partial whole failed to, by index (none: every agent delivered).
// An agent has the timeout from now for its first frame (its share
// started with agent 0's, so it should end about when agent 0's did),
// and the timeout again for each next one. An agent whose delivery
// failed is told why and dropped.
func (c *coordinator) collect(ctx context.Context, m *merger) map[int]error {
	var mu sync.Mutex
	missing := map[int]error{}
	stop := context.AfterFunc(ctx, func() {
		for _, a := range c.agents[1:] {
			a.conn.SetDeadline(time.Now())
		}
	})
	defer stop()
	var wg sync.WaitGroup
	for _, a := range c.agents[1:] {
		wg.Go(func() {
			src := &frameSource{conn: a.conn, r: a.r, token: c.token, nonce: c.nonce, index: a.index,
				budget: maxResultBytes(c.shares[a.index]), timeout: c.timeout}
			got, err := c.receive(src, m)
			if err == nil {
				return
			}
			err = deliveryError(a.index, got, c.shares[a.index], c.timeout, err)
			tell(a.conn, err)
			a.conn.Close()
			mu.Lock()
			missing[a.index] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	return missing
}

// receive reads one agent's partial from src into m, and returns how
// many of its records arrived.
func (c *coordinator) receive(src *frameSource, m *merger) (int, error) {
	body, err := src.frame(maxPreludeFrame)
	if err != nil {
		return 0, err
	}
	p, err := readPrelude(bytes.NewReader(body))
	switch {
	case err != nil:
		return 0, err
	case p.Version != PartialVersion:
		return 0, &PartialError{Part: "version", What: fmt.Sprintf("version %d over the cluster's connection, which carries %d", p.Version, PartialVersion)}
	case p.Header.ClusterIndex != src.index:
		return 0, fmt.Errorf("it holds agent %d's partial", p.Header.ClusterIndex)
	}
	p.src = src
	sh, err := m.admit(&p.Header)
	if err != nil {
		return 0, err
	}
	err = sh.readFrom(p)
	return sh.count, err
}

// deliveryError says why agent index's partial did not arrive whole, got
// of its share's records having arrived: a connection that closed (the
// agent ended or was killed), one silent past the timeout, frames not
// keyed by this run, or what the agent or its partial said.
func deliveryError(index, got, share int, timeout time.Duration, err error) error {
	arrived := fmt.Sprintf("%d of its %d requests' records had arrived", got, share)
	within := fmt.Sprintf("cluster: agent %d delivered no whole partial result within --cluster-timeout-sec %v", index, timeout.Seconds())
	var fail *FailError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%s: it stayed silent that long after agent 0's end or its last frame (%s)", within, arrived)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("%s: its connection closed before the end of its partial result (%s): the agent ended or was killed", within, arrived)
	case errors.Is(err, errNotThisRun):
		return fmt.Errorf("cluster: agent %d's partial result is not keyed by this run's nonce and cluster token (a partial of another run, or altered on the way); %s", index, arrived)
	case errors.As(err, &fail):
		return fmt.Errorf("cluster: agent %d sent no partial result: %s", index, fail.Text)
	}
	return fmt.Errorf("cluster: agent %d delivered no partial result of this run (%s): %w", index, arrived, err)
}

// errNotThisRun is a result frame whose MAC does not verify.
var errNotThisRun = errors.New("a result frame not keyed by this run's nonce and cluster token")

// frameSource reads an agent's result frames on agent 0, checking each
// one's MAC and number, and the agent's budget; it gives the partial's
// sections to a PartialReader.
type frameSource struct {
	conn    net.Conn
	r       io.Reader
	token   string
	nonce   []byte
	index   int
	seq     uint64
	budget  uint64
	timeout time.Duration
}

// frame reads the next result frame of at most limit bytes and returns
// its body once its MAC verifies.
func (s *frameSource) frame(limit uint32) ([]byte, error) {
	s.conn.SetReadDeadline(time.Now().Add(s.timeout))
	if uint64(limit) > s.budget {
		limit = uint32(s.budget)
	}
	payload, err := expectFrame(s.r, frameResult, limit)
	if err != nil {
		return nil, err
	}
	s.budget -= uint64(len(payload))
	if len(payload) < sha256.Size {
		return nil, &FrameError{"a result frame without its MAC"}
	}
	sum, body := payload[:sha256.Size], payload[sha256.Size:]
	if !hmac.Equal(sum, resultMAC(s.token, s.nonce, s.index, s.seq, body)) {
		return nil, errNotThisRun
	}
	s.seq++
	return body, nil
}

func (s *frameSource) next() (byte, []byte, error) {
	body, err := s.frame(maxSectionFrame)
	if err == io.EOF {
		// Only the end section ends a partial: a connection that closes
		// before it cut the partial short.
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return 0, nil, err
	}
	if len(body) == 0 {
		return 0, nil, &FrameError{"an empty result frame"}
	}
	return body[0], body[1:], nil
}

// frameSink sends a partial as result frames (agentLink.sendPartial).
type frameSink struct {
	conn    net.Conn
	token   string
	nonce   []byte
	index   int
	seq     uint64
	timeout time.Duration
	kind    [1]byte
}

func (s *frameSink) prelude(b []byte) error { return s.send(nil, b) }

func (s *frameSink) section(kind byte, payload []byte) error {
	s.kind[0] = kind
	return s.send(s.kind[:], payload)
}

// send writes one frame whose body is head then rest, its MAC first.
func (s *frameSink) send(head, rest []byte) error {
	mac := resultMAC(s.token, s.nonce, s.index, s.seq, head, rest)
	s.seq++
	n := uint64(len(mac) + len(head) + len(rest))
	if n > 1<<32-1 {
		return fmt.Errorf("cluster: a result frame of %d bytes is too large", n)
	}
	frame := [5]byte{frameResult}
	binary.BigEndian.PutUint32(frame[1:], uint32(n))
	s.conn.SetWriteDeadline(time.Now().Add(s.timeout))
	bufs := net.Buffers{frame[:], mac, head, rest}
	_, err := bufs.WriteTo(s.conn)
	return err
}

// agentLink is an agent's connection to agent 0.
type agentLink struct {
	conn  net.Conn
	r     *bufio.Reader
	token string
	nonce []byte // the run's
}

// joinCluster connects to agent 0 (retrying until the timeout: agent 0
// may not be listening yet), registers, answers the clock probes and
// returns the announced start.
func joinCluster(ctx context.Context, addr, token string, hello clusterHello, timeout time.Duration) (*agentLink, clusterStart, error) {
	conn, err := dialCoordinator(ctx, addr, hello.Index, timeout)
	if err != nil {
		return nil, clusterStart{}, err
	}
	link := &agentLink{conn: conn, r: bufio.NewReader(conn), token: token}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	start, err := link.register(hello, timeout)
	if err != nil {
		conn.Close()
		return nil, clusterStart{}, fmt.Errorf("cluster: agent %d: %w", hello.Index, err)
	}
	return link, start, nil
}

// dialCoordinator connects agent index to agent 0 at addr, trying again
// until agent 0 listens or timeout.
func dialCoordinator(ctx context.Context, addr string, index int, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	for {
		d := net.Dialer{Deadline: deadline}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn, nil
		}
		if ctx.Err() != nil || !time.Now().Add(joinRetry).Before(deadline) {
			return nil, &UnreachableError{Index: index, Addr: addr, Timeout: timeout, Err: err}
		}
		select {
		case <-time.After(joinRetry):
		case <-ctx.Done():
		}
	}
}

// UnreachableError is an agent that could not connect to agent 0 within
// its timeout.
type UnreachableError struct {
	Index   int
	Addr    string
	Timeout time.Duration
	// From names where Addr came from: "" is --coordinator (Auth.From).
	From string
	Err  error
}

func (e *UnreachableError) Error() string {
	from := e.From
	if from == "" {
		from = "--coordinator"
	}
	return fmt.Sprintf("cluster: agent %d cannot reach agent 0 at %s %s within --cluster-timeout-sec %v: %v",
		e.Index, from, e.Addr, e.Timeout.Seconds(), e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// namedFrom names from as the source of the coordinator in err's
// UnreachableError, if any.
func namedFrom(err error, from string) error {
	if u, ok := errors.AsType[*UnreachableError](err); ok && from != "" {
		u.From = from
	}
	return err
}

// joinRetry is the pause between two connection attempts to agent 0.
const joinRetry = 250 * time.Millisecond

// refuseCluster tells agent 0 at addr why agent hello.Index cannot take
// part (hello.Refusal), in a hello keyed by token, and waits for agent 0
// to answer, so that the agent ends only once agent 0 knows: it returns
// nil only when agent 0 answers that it stops the run with this refusal.
// Any other answer of agent 0 comes back as a *FailError (the run had
// already ended, or agent 0 refused the hello itself); an error of
// another type means agent 0 could not be told.
func refuseCluster(ctx context.Context, addr, token string, hello clusterHello, timeout time.Duration) error {
	conn, err := dialCoordinator(ctx, addr, hello.Index, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	conn.SetDeadline(time.Now().Add(timeout))
	r := bufio.NewReader(conn)
	nonces, err := expectFrame(r, frameChallenge, 2*nonceLen)
	if err != nil {
		return fmt.Errorf("waiting for agent 0's challenge: %w", err)
	}
	if len(nonces) != 2*nonceLen {
		return &FrameError{fmt.Sprintf("a challenge of %d bytes, want %d", len(nonces), 2*nonceLen)}
	}
	hello, body := fitHello(hello, func(h clusterHello) string {
		return helloMAC(token, nonces[:nonceLen], nonces[nonceLen:], h)
	})
	if err := writeFrame(conn, frameHello, body); err != nil {
		return err
	}
	// Agent 0 answers with the run's end (a fail frame) and closes; a
	// start frame never comes, since a refusing agent does not register.
	_, err = expectFrame(r, frameStart, maxStartFrame)
	var fail *FailError
	switch {
	case errors.As(err, &fail) && fail.Text == refusedAgent(refusalError(hello.Index, hello.Refusal)):
		return nil
	case errors.As(err, &fail):
		return fmt.Errorf("agent 0 answered the refusal with: %w", err)
	case err == nil:
		return &FrameError{"a start frame answered a refusal"}
	}
	return fmt.Errorf("waiting for agent 0's answer: %w", err)
}

// fitHello marshals hello with its MAC (mac of the hello without one),
// cutting its refusal on a rune boundary, marked with " …", until the
// frame fits maxHelloFrame: JSON escapes <, > and & to six bytes and
// quotes or newlines to two, so the raw text's bound alone (maxRefusal)
// does not keep the frame within agent 0's limit. It returns the hello
// as sent.
func fitHello(hello clusterHello, mac func(clusterHello) string) (clusterHello, []byte) {
	marshal := func(h clusterHello) []byte {
		h.MAC = mac(h)
		body, _ := json.Marshal(h)
		return body
	}
	full := hello.Refusal
	if len(full) > maxRefusal {
		full = full[:maxRefusal]
	} else if body := marshal(hello); len(body) <= maxHelloFrame {
		return hello, body
	}
	// The longest prefix whose hello fits: the marshalled length grows
	// with the prefix, so a binary search over byte counts finds it.
	cut := func(n int) clusterHello {
		h := hello
		h.Refusal = strings.ToValidUTF8(full[:n], "") + " …"
		return h
	}
	n := sort.Search(len(full)+1, func(n int) bool { return len(marshal(cut(n))) > maxHelloFrame }) - 1
	h := cut(max(n, 0))
	return h, marshal(h)
}

// refusalError is how agent 0 stops the run for agent index's refusal.
func refusalError(index int, refusal string) error {
	return fmt.Errorf("cluster: agent %d cannot take part in the run: %s", index, refusal)
}

// refusedAgent is the fail frame's text agent 0 sends an agent whose
// hello it refused with err.
func refusedAgent(err error) string { return "agent 0: refused this agent: " + err.Error() }

func (l *agentLink) register(hello clusterHello, timeout time.Duration) (clusterStart, error) {
	// Agent 0 waits up to the timeout for the last agent, then probes:
	// twice the timeout covers both.
	l.conn.SetDeadline(time.Now().Add(2 * timeout))
	nonces, err := expectFrame(l.r, frameChallenge, 2*nonceLen)
	if err != nil {
		return clusterStart{}, fmt.Errorf("waiting for agent 0's challenge: %w", err)
	}
	if len(nonces) != 2*nonceLen {
		return clusterStart{}, &FrameError{fmt.Sprintf("a challenge of %d bytes, want %d", len(nonces), 2*nonceLen)}
	}
	l.nonce = nonces[:nonceLen]
	challenge := nonces[nonceLen:]
	hello.MAC = helloMAC(l.token, l.nonce, challenge, hello)
	body, _ := json.Marshal(hello)
	if err := writeFrame(l.conn, frameHello, body); err != nil {
		return clusterStart{}, err
	}
	limits := frameLimits{framePing: 8, frameStart: maxStartFrame, frameFail: maxFailFrame}
	for {
		kind, payload, err := readFrame(l.r, limits)
		switch {
		case err != nil:
			return clusterStart{}, fmt.Errorf("waiting for agent 0's start: %w", err)
		case kind == framePing:
			if len(payload) != 8 {
				return clusterStart{}, &FrameError{fmt.Sprintf("a ping of %d bytes", len(payload))}
			}
			pong := make([]byte, 16)
			t2 := time.Now().UnixNano()
			copy(pong, payload)
			binary.BigEndian.PutUint64(pong[8:], uint64(t2))
			if err := writeFrame(l.conn, framePong, pong); err != nil {
				return clusterStart{}, err
			}
		case kind == frameStart:
			var st clusterStart
			if err := json.Unmarshal(payload, &st); err != nil {
				return clusterStart{}, &FrameError{"malformed start: " + err.Error()}
			}
			if !equalMAC(st.MAC, startMAC(l.token, l.nonce, challenge, st)) {
				return clusterStart{}, fmt.Errorf("the start from %s is not keyed by this agent's cluster token: it is not this run's agent 0", l.conn.RemoteAddr())
			}
			l.conn.SetDeadline(time.Time{})
			return st, nil
		default: // frameFail
			return clusterStart{}, &FailError{string(payload)}
		}
	}
}

// sendPartial streams this agent's partial to agent 0, a section of
// records at a time, and returns how many records it sent.
func (l *agentLink) sendPartial(p *Partial, timeout time.Duration) (int, error) {
	sink := &frameSink{conn: l.conn, token: l.token, nonce: l.nonce, index: p.Header.ClusterIndex, timeout: timeout}
	records, err := writePartialStream(sink, p)
	if err != nil {
		return records, fmt.Errorf("cluster: sending the partial result to agent 0: %w", err)
	}
	return records, nil
}

// Close closes the connection.
func (l *agentLink) Close() { l.conn.Close() }
