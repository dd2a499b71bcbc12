package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
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
// An agent connects to agent 0 and sends hello (JSON clusterHello);
// agent 0 answers with clock probes, ping (8 bytes: its wall clock in
// Unix ns) each answered by pong (16 bytes: the ping's time, then the
// agent's wall clock when it read the ping), then start (JSON
// clusterStart). After its share of the run the agent sends result (a
// partial, gzip-compressed as WritePartial writes it). Either side may
// send fail (text) instead, and close.
const (
	frameHello  = 'H'
	framePing   = 'P'
	framePong   = 'Q'
	frameStart  = 'S'
	frameResult = 'R'
	frameFail   = 'E'
)

// clusterProtocol is the version hello carries; agents of another refuse.
const clusterProtocol = 1

// maxControlFrame bounds every frame but a result: a control message is
// small, and a peer must not make the reader allocate at will.
const maxControlFrame = 1 << 16

// clockProbes is how many ping/pong exchanges measure an agent's clock;
// the one with the smallest round trip is kept (its delays are the
// smallest, so its midpoint is the least skewed).
const clockProbes = 16

// clusterHello registers an agent.
type clusterHello struct {
	Protocol int `json:"protocol"`
	Size     int `json:"size"`
	Index    int `json:"index"`
	// Digest identifies the run: the settings, the requests' lengths and
	// the global schedule; every agent must have the same.
	Digest string `json:"digest"`
}

// clusterStart tells an agent when the run starts and what its clock
// probes found.
type clusterStart struct {
	// StartUnixNs is the start on agent 0's clock.
	StartUnixNs int64                    `json:"start_unix_ns"`
	Clock       report.SidecarAgentClock `json:"clock"`
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

// readFrame reads one frame. Only a result frame may be longer than
// maxControlFrame; its payload is read as it arrives, never allocated
// ahead of the bytes.
func readFrame(r io.Reader) (kind byte, payload []byte, err error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	kind, n := head[0], binary.BigEndian.Uint32(head[1:])
	switch kind {
	case frameHello, framePing, framePong, frameStart, frameFail:
		if n > maxControlFrame {
			return 0, nil, &FrameError{fmt.Sprintf("a %c frame of %d bytes (at most %d)", kind, n, maxControlFrame)}
		}
	case frameResult:
	default:
		return 0, nil, &FrameError{fmt.Sprintf("unknown frame kind %#x", kind)}
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

// expectFrame reads a frame of kind want; a fail frame becomes its text
// as an error.
func expectFrame(r io.Reader, want byte) ([]byte, error) {
	kind, payload, err := readFrame(r)
	switch {
	case err != nil:
		return nil, err
	case kind == frameFail:
		return nil, errors.New(string(payload))
	case kind != want:
		return nil, &FrameError{fmt.Sprintf("a %c frame where %c was due", kind, want)}
	}
	return payload, nil
}

// coordinator is agent 0's side: it listens, registers the other agents,
// measures their clocks, announces the start and collects the partials.
type coordinator struct {
	ln      net.Listener
	size    int
	digest  string
	timeout time.Duration
	agents  []*agentConn // by index; [0] unused
}

type agentConn struct {
	index int
	conn  net.Conn
	r     *bufio.Reader
	clock report.SidecarAgentClock
}

// listenCoordinator listens on addr (HOST:PORT) when HOST is one of this
// host's addresses, else on PORT of every interface: HOST is how the
// other agents reach agent 0, which may be a name or an address this host
// does not hold (a NAT, a Service).
func listenCoordinator(addr string, size int, digest string, timeout time.Duration) (*coordinator, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--coordinator %s: %w", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		ln, err = net.Listen("tcp", ":"+port)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: agent 0 cannot listen on port %s (--coordinator %s): %w", port, addr, err)
	}
	return &coordinator{ln: ln, size: size, digest: digest, timeout: timeout, agents: make([]*agentConn, size)}, nil
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
			a.conn.SetWriteDeadline(time.Now().Add(time.Second))
			writeFrame(a.conn, frameFail, []byte("agent 0: "+err.Error()))
		}
	}
	return err
}

// register accepts agents until each index 1..size-1 has one, or the
// timeout; a wrong hello is refused with a fail frame and ends the run.
func (c *coordinator) register(ctx context.Context) error {
	deadline := time.Now().Add(c.timeout)
	stop := context.AfterFunc(ctx, func() { c.ln.Close() })
	defer stop()
	if tl, ok := c.ln.(*net.TCPListener); ok {
		tl.SetDeadline(deadline)
	}
	for c.registered() < c.size-1 {
		conn, err := c.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return c.fail(ctx.Err())
			}
			return c.fail(fmt.Errorf("cluster: agent(s) %s of %d did not register within --cluster-timeout-sec %v (agent 0 listens on %s): %w",
				strings.Join(c.missing(), ", "), c.size, c.timeout.Seconds(), c.ln.Addr(), err))
		}
		if err := c.hello(conn, deadline); err != nil {
			return c.fail(err)
		}
	}
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

// hello reads one agent's registration and checks it.
func (c *coordinator) hello(conn net.Conn, deadline time.Time) error {
	conn.SetDeadline(deadline)
	r := bufio.NewReader(conn)
	refuse := func(format string, args ...any) error {
		err := fmt.Errorf("cluster: agent at %s: "+format, append([]any{conn.RemoteAddr()}, args...)...)
		writeFrame(conn, frameFail, []byte("agent 0 refused this agent: "+err.Error()))
		conn.Close()
		return err
	}
	payload, err := expectFrame(r, frameHello)
	if err != nil {
		return refuse("%v", err)
	}
	var h clusterHello
	if err := json.Unmarshal(payload, &h); err != nil {
		return refuse("malformed hello: %v", err)
	}
	switch {
	case h.Protocol != clusterProtocol:
		return refuse("protocol %d, agent 0 speaks %d (run the same stampede everywhere)", h.Protocol, clusterProtocol)
	case h.Size != c.size:
		return refuse("--cluster-size %d, agent 0 has %d", h.Size, c.size)
	case h.Index < 1 || h.Index >= c.size:
		return refuse("index %d: want 1 to %d", h.Index, c.size-1)
	case c.agents[h.Index] != nil:
		return refuse("index %d is already registered from %s", h.Index, c.agents[h.Index].conn.RemoteAddr())
	case h.Digest != c.digest:
		return refuse("agent %d builds other requests or another schedule than agent 0 (its flags, seed or dataset differ)", h.Index)
	}
	c.agents[h.Index] = &agentConn{index: h.Index, conn: conn, r: r}
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
		payload, err := expectFrame(a.r, framePong)
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
		body, _ := json.Marshal(clusterStart{StartUnixNs: startUnixNs, Clock: a.clock})
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

// collect reads every agent's partial; an agent has the timeout from now
// to deliver it (its share started with agent 0's, so it should end about
// when agent 0's did).
func (c *coordinator) collect(ctx context.Context) ([]*Partial, error) {
	deadline := time.Now().Add(c.timeout)
	parts := make([]*Partial, c.size)
	errs := make([]error, c.size)
	stop := context.AfterFunc(ctx, func() {
		for _, a := range c.agents[1:] {
			a.conn.SetDeadline(time.Now())
		}
	})
	defer stop()
	var wg sync.WaitGroup
	for _, a := range c.agents[1:] {
		wg.Go(func() {
			a.conn.SetDeadline(deadline)
			payload, err := expectFrame(a.r, frameResult)
			if err == nil {
				parts[a.index], err = ReadPartial(bytes.NewReader(payload))
			}
			if err == nil && parts[a.index].Header.ClusterIndex != a.index {
				err = fmt.Errorf("it holds agent %d's partial", parts[a.index].Header.ClusterIndex)
			}
			if err != nil {
				errs[a.index] = fmt.Errorf("cluster: agent %d sent no partial result within --cluster-timeout-sec %v of agent 0's end: %w",
					a.index, c.timeout.Seconds(), err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, c.fail(err)
	}
	return slices.Delete(parts, 0, 1), nil
}

// agentLink is an agent's connection to agent 0.
type agentLink struct {
	conn net.Conn
	r    *bufio.Reader
}

// joinCluster connects to agent 0 (retrying until the timeout: agent 0
// may not be listening yet), registers, answers the clock probes and
// returns the announced start.
func joinCluster(ctx context.Context, addr string, hello clusterHello, timeout time.Duration) (*agentLink, clusterStart, error) {
	deadline := time.Now().Add(timeout)
	var conn net.Conn
	var err error
	for {
		d := net.Dialer{Deadline: deadline}
		if conn, err = d.DialContext(ctx, "tcp", addr); err == nil {
			break
		}
		if ctx.Err() != nil || !time.Now().Add(joinRetry).Before(deadline) {
			return nil, clusterStart{}, fmt.Errorf("cluster: agent %d cannot reach agent 0 at --coordinator %s within --cluster-timeout-sec %v: %w",
				hello.Index, addr, timeout.Seconds(), err)
		}
		select {
		case <-time.After(joinRetry):
		case <-ctx.Done():
		}
	}
	link := &agentLink{conn: conn, r: bufio.NewReader(conn)}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	start, err := link.register(hello, timeout)
	if err != nil {
		conn.Close()
		return nil, clusterStart{}, fmt.Errorf("cluster: agent %d: %w", hello.Index, err)
	}
	return link, start, nil
}

// joinRetry is the pause between two connection attempts to agent 0.
const joinRetry = 250 * time.Millisecond

func (l *agentLink) register(hello clusterHello, timeout time.Duration) (clusterStart, error) {
	// Agent 0 waits up to the timeout for the last agent, then probes:
	// twice the timeout covers both.
	l.conn.SetDeadline(time.Now().Add(2 * timeout))
	body, _ := json.Marshal(hello)
	if err := writeFrame(l.conn, frameHello, body); err != nil {
		return clusterStart{}, err
	}
	for {
		kind, payload, err := readFrame(l.r)
		switch {
		case err != nil:
			return clusterStart{}, fmt.Errorf("waiting for agent 0's start: %w", err)
		case kind == framePing && len(payload) == 8:
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
			l.conn.SetDeadline(time.Time{})
			return st, nil
		case kind == frameFail:
			return clusterStart{}, errors.New(string(payload))
		default:
			return clusterStart{}, &FrameError{fmt.Sprintf("a %c frame of %d bytes before the start", kind, len(payload))}
		}
	}
}

// sendPartial delivers this agent's partial to agent 0.
func (l *agentLink) sendPartial(p *Partial, timeout time.Duration) error {
	var buf bytes.Buffer
	if err := WritePartial(&buf, p); err != nil {
		return err
	}
	l.conn.SetDeadline(time.Now().Add(timeout))
	if err := writeFrame(l.conn, frameResult, buf.Bytes()); err != nil {
		return fmt.Errorf("cluster: sending the partial result to agent 0: %w", err)
	}
	return nil
}

// Close closes the connection.
func (l *agentLink) Close() { l.conn.Close() }
