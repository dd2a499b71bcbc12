package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/metrics"
)

// The attacks of docs/cluster.md's threat model, each as a peer that can
// connect to agent 0 and knows the protocol, but not the cluster token.

// rawPeer connects to addr and reads agent 0's challenge.
func rawPeer(t *testing.T, addr string) (net.Conn, *bufio.Reader, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(time.Minute))
	r := bufio.NewReader(conn)
	nonces, err := expectFrame(r, frameChallenge, 2*nonceLen)
	if err != nil {
		t.Fatal(err)
	}
	return conn, r, nonces
}

// refusedOrClosed reads what agent 0 answers a dropped peer: a fail frame
// or the end of the connection, never the clock probes.
func refusedOrClosed(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	kind, payload, err := readFrame(r, frameLimits{frameFail: maxFailFrame, framePing: 8})
	switch {
	case err != nil:
		return err.Error()
	case kind != frameFail:
		t.Fatalf("a dropped peer got a %c frame", kind)
	}
	return string(payload)
}

// testPartial is agent index's partial of a 2-agent run of 2 requests.
func testPartial(index int) *Partial {
	settings := NewPartialSettings(&pyout.ReportParams{RunSettings: pyout.RunSettings{Backend: "openai", RequestRate: 1, Burstiness: 1}}, &metrics.ComputeOptions{}, false)
	return &Partial{
		Header:  PartialHeader{ClusterSize: 2, ClusterIndex: index, NumRequests: 2, Settings: settings},
		Records: recordsOf(PartialRecord{RequestResult: metrics.RequestResult{Index: index, Success: true, NumInputSequences: 1, TTFTNs: 20e6}}),
	}
}

// collectBeside collects the other agents' partials into a merge that
// holds lead, agent 0's, and returns the merged run (nil when it failed)
// and why each agent that delivered nothing whole did not.
func collectBeside(t *testing.T, c *coordinator, lead *Partial) (*MergedRun, map[int]error) {
	t.Helper()
	m, err := newMerger(&lead.Header)
	if err != nil {
		t.Fatal(err)
	}
	own, err := m.admit(&lead.Header)
	if err != nil {
		t.Fatal(err)
	}
	if err := own.addRecords(lead); err != nil {
		t.Fatal(err)
	}
	missing := c.collect(context.Background(), m)
	mr, err := m.finish(missing)
	if err != nil {
		t.Fatal(err)
	}
	return mr, missing
}

// recordFrames is what sendPartial writes of p for agent index of the
// run of runNonce keyed by token: its result frames, as they go out.
func recordFrames(t *testing.T, token string, runNonce []byte, p *Partial) []byte {
	t.Helper()
	out, in := net.Pipe()
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(in)
		got <- b
	}()
	link := &agentLink{conn: out, token: token, nonce: runNonce}
	if _, err := link.sendPartial(p, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	out.Close()
	return <-got
}

// runCoordinator registers, probes and announces in the background.
func runCoordinator(c *coordinator) <-chan error {
	done := make(chan error, 1)
	go func() {
		err := c.register(context.Background())
		if err == nil {
			err = c.probeClocks()
		}
		if err == nil {
			err = c.announce(time.Now().UnixNano())
		}
		done <- err
	}()
	return done
}

// TestForgedAgentReplaysHelloAndPartial: a hello and a partial recorded
// from one run, replayed in the next, are refused: the forged hello is
// dropped and the run goes on with the real agent, and a partial bound to
// the old run's nonce is not taken as this run's result.
func TestForgedAgentReplaysHelloAndPartial(t *testing.T) {
	// Run 1: what an eavesdropper records of agent 1.
	c1, addr1, _ := testCoordinator(t, 2, "k", 10*time.Second)
	done1 := runCoordinator(c1)
	conn, _, nonces := rawPeer(t, addr1)
	h := hello(2, 1)
	h.MAC = helloMAC("k", nonces[:nonceLen], nonces[nonceLen:], h)
	recordedHello, _ := json.Marshal(h)
	if err := writeFrame(conn, frameHello, recordedHello); err != nil {
		t.Fatal(err)
	}
	recordedResult := recordFrames(t, "k", nonces[:nonceLen], testPartial(1))
	conn.Close()
	<-done1

	// Run 2: the forged agent replays the hello first.
	c2, addr2, log := testCoordinator(t, 2, "k", 10*time.Second)
	done2 := runCoordinator(c2)
	fconn, fr, _ := rawPeer(t, addr2)
	if err := writeFrame(fconn, frameHello, recordedHello); err != nil {
		t.Fatal(err)
	}
	if got := refusedOrClosed(t, fr); !strings.Contains(got, "not keyed by this run's cluster token") {
		t.Errorf("the replayed hello got %q", got)
	}
	// The real agent still registers; then the recorded partial arrives
	// on its connection.
	link, _, err := joinCluster(context.Background(), addr2, "k", hello(2, 1), 10*time.Second)
	if err != nil {
		t.Fatalf("the real agent, after the forged one: %v", err)
	}
	defer link.Close()
	if err := <-done2; err != nil {
		t.Fatal(err)
	}
	if !log.shows("dropped a connection") {
		t.Errorf("agent 0 logged %q, want the forged connection dropped", log.String())
	}
	if _, err := link.conn.Write(recordedResult); err != nil {
		t.Fatal(err)
	}
	m, missing := collectBeside(t, c2, testPartial(0))
	if err := missing[1]; err == nil || !strings.Contains(err.Error(), "not keyed by this run's nonce") {
		t.Fatalf("the replayed partial: %v", err)
	}
	if len(m.Missing) != 1 || m.Missing[0].Index != 1 || m.Data.Log.Len() != 1 {
		t.Errorf("merged %d records, missing %+v: want agent 0's alone, agent 1 missing", m.Data.Log.Len(), m.Missing)
	}
}

// TestResultOfThisRunIsTaken is the counterpart: the real agent's own
// partial, bound to this run, is collected.
func TestResultOfThisRunIsTaken(t *testing.T) {
	c, addr, _ := testCoordinator(t, 2, "k", 10*time.Second)
	c.shares = []int{1, 1}
	done := runCoordinator(c)
	link, _, err := joinCluster(context.Background(), addr, "k", hello(2, 1), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, err := link.sendPartial(testPartial(1), 10*time.Second); err != nil || n != 1 {
		t.Fatalf("sent %d records: %v", n, err)
	}
	m, missing := collectBeside(t, c, testPartial(0))
	if len(missing) != 0 || len(m.Missing) != 0 || m.Data.Log.Len() != 2 {
		t.Fatalf("collect: missing %v, merged %d records", missing, m.Data.Log.Len())
	}
	for _, r := range m.Data.Log.All() {
		if r.TTFTNs != 20e6 {
			t.Errorf("request %d: TTFT %d", r.Index, r.TTFTNs)
		}
	}
}

// TestWrongTokenIsTold: an agent with another token is told so and exits;
// agent 0 goes on waiting for the right one.
func TestWrongTokenIsTold(t *testing.T) {
	c, addr, _ := testCoordinator(t, 2, "k", 10*time.Second)
	done := runCoordinator(c)
	wrong := join(t, addr, "not-k", hello(2, 1))
	if err := <-wrong; err == nil || !strings.Contains(err.Error(), "cluster token") {
		t.Errorf("the agent with another token: %v", err)
	}
	if err := <-join(t, addr, "k", hello(2, 1)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestStartFromImpostorRefused: an agent that reaches a listener without
// the token (not this run's agent 0) refuses its start.
func TestStartFromImpostorRefused(t *testing.T) {
	c, addr, _ := testCoordinator(t, 2, "impostor", 10*time.Second)
	c.digest = "d"
	go c.register(context.Background())
	_, _, err := joinCluster(context.Background(), addr, "k", hello(2, 1), 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "cluster token") {
		t.Fatalf("joining an impostor: %v", err)
	}
}

// TestOversizedFrameBeforeHello: a frame declaring 2 GiB before the hello
// is refused on its header, with no byte of it read or allocated, and the
// run goes on.
func TestOversizedFrameBeforeHello(t *testing.T) {
	c, addr, log := testCoordinator(t, 2, "k", 30*time.Second)
	done := runCoordinator(c)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	conn, r, _ := rawPeer(t, addr)
	head := [5]byte{frameResult}
	binary.BigEndian.PutUint32(head[1:], 2<<30)
	if _, err := conn.Write(head[:]); err != nil {
		t.Fatal(err)
	}
	// Agent 0 drops the peer without waiting for the payload.
	refusedOrClosed(t, r)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 64<<20 {
		t.Errorf("the heap grew by %d bytes on a frame announced but never sent", grew)
	}
	if err := <-join(t, addr, "k", hello(2, 1)); err != nil {
		t.Fatalf("the real agent after the oversized frame: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !log.shows("a frame of kind 'R' where") {
		t.Errorf("agent 0 logged %q, want the early result frame dropped", log.String())
	}
	// Even a hello may not be large.
	if _, _, err := readFrame(bytes.NewReader([]byte{frameHello, 0, 1, 0, 0}), frameLimits{frameHello: maxHelloFrame}); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("a 64 KiB hello: %v", err)
	}
}

// TestStrayConnectionsDuringRegistration: an HTTP GET (a health check on
// the wrong port) and a silent connection (a port scan, a TCP probe) are
// dropped and logged; the agents register meanwhile and the run goes on.
func TestStrayConnectionsDuringRegistration(t *testing.T) {
	c, addr, log := testCoordinator(t, 3, "k", 30*time.Second)
	done := runCoordinator(c)
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	get, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer get.Close()
	io.WriteString(get, "GET / HTTP/1.1\r\nHost: stampede-0\r\n\r\n")
	get.SetReadDeadline(time.Now().Add(time.Minute))
	io.Copy(io.Discard, get) // until agent 0 drops it
	a1, a2 := join(t, addr, "k", hello(3, 1)), join(t, addr, "k", hello(3, 2))
	for _, a := range []<-chan error{a1, a2} {
		if err := <-a; err != nil {
			t.Fatalf("an agent beside the stray connections: %v", err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("registration beside a silent connection and an HTTP GET: %v", err)
	}
	if !log.shows("dropped a connection", "a frame of kind 'G'") {
		t.Errorf("agent 0 logged %q, want the GET dropped", log.String())
	}
}

// TestResultBoundedByShare: even an authenticated agent's result is
// refused on its header when it declares more than its share of the run
// may hold.
func TestResultBoundedByShare(t *testing.T) {
	c, addr, _ := testCoordinator(t, 2, "k", 10*time.Second)
	c.shares = []int{1, 1}
	done := runCoordinator(c)
	link, _, err := joinCluster(context.Background(), addr, "k", hello(2, 1), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	head := [5]byte{frameResult}
	binary.BigEndian.PutUint32(head[1:], uint32(maxResultBytes(1)+1))
	if _, err := link.conn.Write(head[:]); err != nil {
		t.Fatal(err)
	}
	if _, missing := collectBeside(t, c, testPartial(0)); missing[1] == nil || !strings.Contains(missing[1].Error(), "(at most") {
		t.Fatalf("a result over the share's bound: %v", missing[1])
	}
}

// TestReadTokenFile: the file's text, trimmed; an empty file is refused.
func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/token"
	os.WriteFile(path, []byte("  s3cret\n"), 0o600)
	if tok, err := ReadTokenFile(path); err != nil || tok != "s3cret" {
		t.Errorf("ReadTokenFile = %q, %v", tok, err)
	}
	os.WriteFile(path, []byte("\n"), 0o600)
	if _, err := ReadTokenFile(path); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty token file: %v", err)
	}
	if _, err := ReadTokenFile(dir + "/none"); err == nil || !strings.Contains(err.Error(), "--cluster-token-file") {
		t.Errorf("a missing token file: %v", err)
	}
}

// cutSink passes on the first frames of a partial's stream, then fails,
// as an agent killed while it sends does.
type cutSink struct {
	sink   partialSink
	frames int
}

var errCut = errors.New("cut")

func (s *cutSink) prelude(b []byte) error {
	if s.frames == 0 {
		return errCut
	}
	s.frames--
	return s.sink.prelude(b)
}

func (s *cutSink) section(kind byte, payload []byte) error {
	if s.frames == 0 {
		return errCut
	}
	s.frames--
	return s.sink.section(kind, payload)
}

// TestAgentLostMidStream: an agent whose stream of result frames ends
// early (its connection closed after the prelude and its records, before
// the end) or that goes silent is left out of the merge with why, none
// of what arrived of its records in the run; the other agents' records
// are the run.
func TestAgentLostMidStream(t *testing.T) {
	settings := NewPartialSettings(&pyout.ReportParams{RunSettings: pyout.RunSettings{Backend: "openai", RequestRate: 1, Burstiness: 1}}, &metrics.ComputeOptions{}, false)
	share := func(index int) *Partial {
		return &Partial{Header: PartialHeader{ClusterSize: 2, ClusterIndex: index, NumRequests: 4, Settings: settings},
			Records: recordsOf(PartialRecord{RequestResult: metrics.RequestResult{Index: index, Success: true, NumInputSequences: 1}},
				PartialRecord{RequestResult: metrics.RequestResult{Index: index + 2, Success: true, NumInputSequences: 1}})}
	}
	for _, tc := range []struct {
		name   string
		frames int // sent before the agent stops
		close  bool
		want   string
	}{
		{"killed after its records", 2, true, "agent 1 delivered no whole partial result within --cluster-timeout-sec 1: its connection closed before the end of its partial result (2 of its 2 requests' records had arrived)"},
		{"killed before its prelude", 0, true, "its connection closed before the end of its partial result (0 of its 2 requests' records had arrived)"},
		{"silent after its prelude", 1, false, "agent 1 delivered no whole partial result within --cluster-timeout-sec 1: it stayed silent that long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, addr, _ := testCoordinator(t, 2, "k", time.Second)
			c.shares = []int{2, 2}
			done := runCoordinator(c)
			link, _, err := joinCluster(context.Background(), addr, "k", hello(2, 1), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer link.Close()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			sink := &cutSink{sink: &frameSink{conn: link.conn, token: link.token, nonce: link.nonce, index: 1, timeout: 10 * time.Second}, frames: tc.frames}
			if _, err := writePartialStream(sink, share(1)); !errors.Is(err, errCut) {
				t.Fatalf("the cut stream: %v", err)
			}
			if tc.close {
				link.Close()
			}
			m, missing := collectBeside(t, c, share(0))
			if err := missing[1]; err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("agent 1's reason: %v, want %q", err, tc.want)
			}
			if len(m.Missing) != 1 || m.Missing[0].Index != 1 || m.Missing[0].Requests != 2 || m.Missing[0].Reason != missing[1].Error() {
				t.Errorf("missing %+v", m.Missing)
			}
			var got []int
			for _, r := range m.Data.Log.All() {
				got = append(got, r.Index)
			}
			if !slices.Equal(got, []int{0, 2}) {
				t.Errorf("the run holds requests %v, want agent 0's 0 and 2", got)
			}
			if m.RequestID(1) != "" || m.ExpectedOutputLen(3) != 0 {
				t.Errorf("a missing agent's request has facts")
			}
			sc := &report.Sidecar{}
			m.Account(sc)
			if a := sc.Cluster.MissingAgents; len(a) != 1 || a[0].Index != 1 || a[0].Requests != 2 || a[0].Reason != missing[1].Error() {
				t.Errorf("cluster.missing_agents = %+v", a)
			}
		})
	}
}

// TestMissingAgentsWarning: the warning heading the block and the error
// say which agents are missing and how much of the run the result holds.
func TestMissingAgentsWarning(t *testing.T) {
	e := &MissingAgentsError{Size: 3, Requests: 30, Missing: []MissingAgent{{Index: 1, Requests: 10}, {Index: 2, Requests: 10}}}
	if got, want := e.Warning(), "WARNING: agent(s) 1, 2 of 3 delivered no partial result: the result below covers 10 of the run's 30 requests, not the whole run"; got != want {
		t.Errorf("warning %q\nwant %q", got, want)
	}
	if !strings.Contains(e.Error(), "cluster.missing_agents in the sidecar") {
		t.Errorf("error %q", e.Error())
	}
}
