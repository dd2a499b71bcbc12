package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
)

// testCoordinator listens on loopback for a cluster of size keyed by
// token, with digest "d"; what it logs is in the returned log.
func testCoordinator(t *testing.T, size int, token string, timeout time.Duration) (*coordinator, string, *syncLog) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", benchtest.FreePort(t))
	log := new(syncLog)
	c, err := listenCoordinator(context.Background(), addr, Auth{Token: token, Digest: "d", Statistics: "s"}, size, make([]int, size), timeout, log.logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, addr, log
}

// syncLog collects what the coordinator logs.
type syncLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *syncLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// shows waits until every one of want is in the log, and reports whether
// they came: the coordinator logs a dropped peer after it has told the
// peer why, so a test that saw the refusal may read the log before the
// line is there.
func (l *syncLog) shows(want ...string) bool {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		all := true
		for _, w := range want {
			all = all && strings.Contains(l.String(), w)
		}
		if all || time.Now().After(deadline) {
			return all
		}
	}
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// hello is agent index's hello of the test run.
func hello(size, index int) clusterHello {
	return clusterHello{Protocol: clusterProtocol, Size: size, Index: index, Digest: "d", Statistics: "s"}
}

// join runs joinCluster in the background; the channel gets its link
// (closed by the test's cleanup) or error.
func join(t *testing.T, addr, token string, h clusterHello) <-chan error {
	done := make(chan error, 1)
	go func() {
		l, _, err := joinCluster(context.Background(), addr, token, h, 5*time.Second)
		if l != nil {
			t.Cleanup(l.Close)
		}
		done <- err
	}()
	return done
}

// TestCoordinatorTimesOutMissingAgent: an agent that never comes fails
// the run after --cluster-timeout-sec, naming it.
func TestCoordinatorTimesOutMissingAgent(t *testing.T) {
	c, addr, _ := testCoordinator(t, 3, "k", 300*time.Millisecond)
	joined := join(t, addr, "k", hello(3, 2))
	err := c.register(context.Background())
	if err == nil || !strings.Contains(err.Error(), "agent(s) 1 of 3 did not register within --cluster-timeout-sec 0.3") {
		t.Fatalf("register: %v", err)
	}
	// The agent that did come is told why the run ended.
	if err := <-joined; err == nil || !strings.Contains(err.Error(), "did not register") {
		t.Errorf("agent 2 ended with %v, want agent 0's reason", err)
	}
}

// TestCoordinatorRefusesOtherRun: an authenticated agent with other
// settings, a wrong size or a taken index is refused with the reason on
// both sides, and the run ends.
func TestCoordinatorRefusesOtherRun(t *testing.T) {
	for _, tc := range []struct {
		hello clusterHello
		want  string
	}{
		{clusterHello{Protocol: clusterProtocol, Size: 2, Index: 1, Digest: "other", Statistics: "s"}, "builds other requests or another schedule"},
		{clusterHello{Protocol: clusterProtocol, Size: 2, Index: 1, Digest: "d", Statistics: "other"}, "computes other statistics"},
		{clusterHello{Protocol: clusterProtocol, Size: 3, Index: 1, Digest: "d", Statistics: "s"}, "--cluster-size 3, agent 0 has 2"},
		{clusterHello{Protocol: clusterProtocol, Size: 2, Index: 0, Digest: "d", Statistics: "s"}, "index 0: want 1 to 1"},
		{clusterHello{Protocol: 99, Size: 2, Index: 1, Digest: "d", Statistics: "s"}, "protocol 99"},
	} {
		c, addr, _ := testCoordinator(t, 2, "k", 5*time.Second)
		joined := join(t, addr, "k", tc.hello)
		err := c.register(context.Background())
		c.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: coordinator: %v, want %q", tc.hello, err, tc.want)
		}
		if err := <-joined; err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: agent: %v, want %q", tc.hello, err, tc.want)
		}
	}
}

// TestAgentRefusalStopsRun: an agent that cannot take part says why in
// a hello keyed by the token, and agent 0 stops the run at once with its
// text (the timeout is a minute: the error must be the refusal, not the
// timeout's), telling the agents that had registered; a refusal not
// keyed by the token is dropped, and the run goes on without it.
func TestAgentRefusalStopsRun(t *testing.T) {
	c, addr, log := testCoordinator(t, 3, "k", time.Minute)
	registered := join(t, addr, "k", hello(3, 2))
	refused := make(chan error, 1)
	go func() {
		forged := hello(3, 1)
		forged.Refusal = "forged"
		// Agent 0 answers a refusal it drops with its own reason, which
		// is no acknowledgement.
		err := refuseCluster(context.Background(), addr, "not the token", forged, 5*time.Second)
		var fail *FailError
		if !errors.As(err, &fail) || !strings.Contains(fail.Text, "not keyed by this run's cluster token") {
			refused <- fmt.Errorf("a forged refusal: %v, want agent 0's answer that it is not keyed by the token", err)
			return
		}
		// After the forged one was dropped, so that the run is still on.
		log.shows("not keyed by this run's cluster token")
		refusal := hello(3, 1)
		refusal.Refusal = "--cluster-size 3: agent 1 would hold 500 streams at once" + strings.Repeat(".", 3*maxRefusal)
		refused <- refuseCluster(context.Background(), addr, "k", refusal, 5*time.Second)
	}()
	err := c.register(context.Background())
	const want = "cluster: agent 1 cannot take part in the run: --cluster-size 3: agent 1 would hold 500 streams at once"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "forged") {
		t.Fatalf("register: %v, want %q", err, want)
	}
	if err := <-refused; err != nil {
		t.Errorf("the refusing agent heard no answer: %v", err)
	}
	if err := <-registered; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("agent 2 ended with %v, want agent 1's reason", err)
	}
}

// TestEscapedRefusalFits: a refusal of characters JSON escapes to six
// bytes is cut until its hello fits agent 0's frame limit, and agent 0
// stops the run with it (before, the hello exceeded maxHelloFrame, agent
// 0 dropped it and the run waited out its timeout).
func TestEscapedRefusalFits(t *testing.T) {
	c, addr, _ := testCoordinator(t, 2, "k", 5*time.Second)
	refused := make(chan error, 1)
	go func() {
		refusal := hello(2, 1)
		refusal.Refusal = "why: " + strings.Repeat(`<"x">&`+"\n\u2028é", maxRefusal/8)
		refused <- refuseCluster(context.Background(), addr, "k", refusal, 5*time.Second)
	}()
	err := c.register(context.Background())
	const want = "cluster: agent 1 cannot take part in the run: why: <\"x\">&"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.HasSuffix(err.Error(), " …") || !utf8.ValidString(err.Error()) {
		t.Fatalf("register: %v, want %q, cut and marked", err, want)
	}
	if err := <-refused; err != nil {
		t.Errorf("the refusing agent heard no acknowledgement: %v", err)
	}
	for _, n := range []int{0, 1, 100, maxRefusal, 3 * maxRefusal} {
		h := hello(2, 1)
		h.Refusal = strings.Repeat("<", n)
		sent, body := fitHello(h, func(clusterHello) string { return strings.Repeat("0", 64) })
		if len(body) > maxHelloFrame || (n <= 100) != (sent.Refusal == h.Refusal) {
			t.Errorf("%d escaped bytes: a hello of %d bytes (at most %d), refusal %d bytes", n, len(body), maxHelloFrame, len(sent.Refusal))
		}
	}
}

// TestRefusalUnheard: an agent 0 that closes after its challenge has not
// heard the refusal: refuseCluster says so, and it is no fail frame.
func TestRefusalUnheard(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			writeFrame(conn, frameChallenge, make([]byte, 2*nonceLen))
			readFrame(conn, frameLimits{frameHello: maxHelloFrame})
			conn.Close()
		}
	}()
	h := hello(2, 1)
	h.Refusal = "no"
	err = refuseCluster(context.Background(), ln.Addr().String(), "k", h, 5*time.Second)
	var fail *FailError
	if err == nil || errors.As(err, &fail) || !strings.Contains(err.Error(), "waiting for agent 0's answer") {
		t.Fatalf("refuseCluster: %v, want that agent 0 did not answer", err)
	}
	var stderr strings.Builder
	refuse(context.Background(), ln.Addr().String(), Auth{Token: "k"}, 2, 1, time.Second, errors.New("no"), &stderr)
	if !strings.Contains(stderr.String(), "could not tell agent 0 why it stops") {
		t.Errorf("stderr: %q", stderr.String())
	}
}

// TestRefusalReachesEveryAgent: when agent 0 refuses one agent of
// another run, every other agent exits with the same reason, whether it
// had registered, was registering or connects after the refusal; none
// waits for --cluster-timeout-sec.
func TestRefusalReachesEveryAgent(t *testing.T) {
	c, addr, _ := testCoordinator(t, 4, "k", time.Minute)
	regErr := make(chan error, 1)
	go func() { regErr <- c.register(context.Background()) }()
	bad := hello(4, 2)
	bad.Digest = "other"
	agents := map[string]<-chan error{"agent 1": join(t, addr, "k", hello(4, 1)), "agent 2": join(t, addr, "k", bad)}
	err := <-regErr
	const want = "builds other requests or another schedule"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("coordinator: %v", err)
	}
	for name, ch := range agents {
		if err := <-ch; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s ended with %v, want %q", name, err, want)
		}
	}
}

// TestClockProbesAndStart: the coordinator measures each agent's offset
// with a bound, and the agent gets the start with its own figures.
func TestClockProbesAndStart(t *testing.T) {
	c, addr, _ := testCoordinator(t, 2, "k", 5*time.Second)
	type joined struct {
		start clusterStart
		err   error
	}
	got := make(chan joined, 1)
	go func() {
		l, st, err := joinCluster(context.Background(), addr, "k", hello(2, 1), 5*time.Second)
		if l != nil {
			l.Close()
		}
		got <- joined{st, err}
	}()
	if err := c.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.probeClocks(); err != nil {
		t.Fatal(err)
	}
	if err := c.announce(12345); err != nil {
		t.Fatal(err)
	}
	j := <-got
	if j.err != nil {
		t.Fatal(j.err)
	}
	ck := j.start.Clock
	if j.start.StartUnixNs != 12345 || ck != c.agents[1].clock || ck.Probes != clockProbes || ck.MinRTTNs <= 0 {
		t.Fatalf("agent got %+v, coordinator measured %+v", j.start, c.agents[1].clock)
	}
	// One host, one clock: the true offset is 0, and must lie within the
	// bound of the estimate.
	if ck.OffsetNs > ck.ErrorBoundNs || -ck.OffsetNs > ck.ErrorBoundNs {
		t.Errorf("offset %d ns outside its own bound ±%d ns on a single clock", ck.OffsetNs, ck.ErrorBoundNs)
	}
}

// handOver is a listening socket on a free loopback port as the launcher
// hands it to agent 0: its address, and $STAMPEDE_COORDINATOR_FD naming
// a raw descriptor of it (this process's own, as if inherited).
func handOver(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(coordinatorFDEnv, strconv.Itoa(fd))
	return ln.Addr().String()
}

// TestInheritedListener: with a listening socket handed over, its port is
// held before agent 0 starts (no other process may listen on it), agent 0
// accepts on that very socket, an agent that connected before agent 0 was
// listening registers, and the variable is taken once.
func TestInheritedListener(t *testing.T) {
	addr := handOver(t)
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("another listener took %s, which agent 0's socket holds", addr)
	}
	// Agent 1 connects first: the held socket's backlog keeps it.
	done := join(t, addr, "k", hello(2, 1))
	c, err := listenCoordinator(context.Background(), addr, Auth{Token: "k", Digest: "d", Statistics: "s"}, 2, make([]int, 2), 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.ln.Addr().String(); got != addr {
		t.Fatalf("agent 0 listens on %s, want the handed-over %s", got, addr)
	}
	if _, ok := os.LookupEnv(coordinatorFDEnv); ok {
		t.Errorf("$%s is still set once taken", coordinatorFDEnv)
	}
	if err := c.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.probeClocks(); err != nil {
		t.Fatal(err)
	}
	if err := c.announce(1); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("agent 1: %v", err)
	}
}

// TestInheritedListenerRefused: a variable that names no socket, or a
// socket on another port than --coordinator's, is an error naming it.
func TestInheritedListenerRefused(t *testing.T) {
	listen := func(addr string) error {
		c, err := listenCoordinator(context.Background(), addr, Auth{}, 2, make([]int, 2), time.Second, nil)
		if err == nil {
			c.Close()
		}
		return err
	}
	t.Setenv(coordinatorFDEnv, "x")
	if err := listen("127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), `$STAMPEDE_COORDINATOR_FD="x": want the descriptor`) {
		t.Errorf("a variable of no number: %v", err)
	}
	f, err := os.CreateTemp(t.TempDir(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(coordinatorFDEnv, strconv.Itoa(fd))
	if err := listen("127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "is no listening socket") {
		t.Errorf("a plain file: %v", err)
	}
	addr := handOver(t)
	other := fmt.Sprintf("127.0.0.1:%d", benchtest.FreePort(t))
	if err := listen(other); err == nil || !strings.Contains(err.Error(), "is on "+addr+", not on "+other) {
		t.Errorf("a socket on another port: %v", err)
	}
}

// TestListenAddr: agent 0 binds the address of this host its
// --coordinator host resolves to, and refuses one that is not its own.
func TestListenAddr(t *testing.T) {
	for in, want := range map[string]string{"127.0.0.1:7070": "127.0.0.1:7070", "localhost:7070": "", "0.0.0.0:7070": "0.0.0.0:7070"} {
		got, err := listenAddr(context.Background(), in, time.Now())
		if err != nil || want != "" && got != want {
			t.Errorf("listenAddr(%s) = %s, %v; want %s", in, got, err, want)
		}
		if host, _, _ := net.SplitHostPort(got); want == "" && !net.ParseIP(host).IsLoopback() {
			t.Errorf("listenAddr(%s) = %s, want a loopback address", in, got)
		}
	}
	// 192.0.2.1 (TEST-NET-1) is no host's own address.
	if _, err := listenAddr(context.Background(), "192.0.2.1:7070", time.Now()); err == nil || !strings.Contains(err.Error(), "none of them an address of this host") {
		t.Errorf("a foreign address: %v", err)
	}
}

// FuzzReadFrame: frames come from the network; malformed ones are errors,
// a frame of a kind not due is refused on its header, and no payload
// exceeds its kind's bound.
func FuzzReadFrame(f *testing.F) {
	var b bytes.Buffer
	writeFrame(&b, frameHello, []byte(`{"protocol":2}`))
	writeFrame(&b, framePing, make([]byte, 8))
	f.Add(b.Bytes())
	f.Add([]byte{frameResult, 0x7f, 0xff, 0xff, 0xff, 1, 2})
	f.Add([]byte{frameHello, 0, 1, 0, 0})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte{'Z', 0, 0, 0, 0})
	limits := []frameLimits{
		{frameHello: maxHelloFrame},
		{framePing: 8, frameStart: maxStartFrame, frameFail: maxFailFrame},
		{frameResult: maxSectionFrame, frameFail: maxFailFrame},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, l := range limits {
			r := bytes.NewReader(data)
			for {
				kind, payload, err := readFrame(r, l)
				if err != nil {
					break
				}
				limit, ok := l[kind]
				if !ok || uint64(len(payload)) > uint64(limit) {
					t.Fatalf("a %c frame of %d bytes read under %v", kind, len(payload), l)
				}
			}
		}
	})
}

// TestMaxResultBytesGrowsWithTheShare: an agent's result stream is
// bounded by its share, and each frame by what a prelude or a section
// holds, the MAC included, within a frame's uint32 length.
func TestMaxResultBytesGrowsWithTheShare(t *testing.T) {
	for _, requests := range []int{0, 1, 4096, 100_000} {
		if got, want := maxResultBytes(requests), uint64(maxPreludeFrame+1<<20)+uint64(requests)*maxResultPerRequest; got != want {
			t.Errorf("maxResultBytes(%d) = %d, want %d", requests, got, want)
		}
	}
	if maxPreludeFrame < sha256.Size+maxPartialHeader || maxSectionFrame != sha256.Size+1+maxPartialSection || uint64(maxSectionFrame) > 1<<32-1 {
		t.Errorf("frame bounds %d and %d", maxPreludeFrame, maxSectionFrame)
	}
}

// TestUnreachableNamesItsSource: an agent that cannot reach agent 0 names
// where the address came from, --coordinator or the launcher's variable.
func TestUnreachableNamesItsSource(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", benchtest.FreePort(t))
	for from, want := range map[string]string{"": "at --coordinator " + addr, "$STAMPEDE_CLUSTER_LOCAL_COORDINATOR": "at $STAMPEDE_CLUSTER_LOCAL_COORDINATOR " + addr} {
		_, err := Join(context.Background(), addr, 2, 1, Auth{Token: "k", From: from}, 2, 1, 300*time.Millisecond, 0, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "cannot reach agent 0 "+want) {
			t.Errorf("from %q: %v, want %q", from, err, want)
		}
	}
}
