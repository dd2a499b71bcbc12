package cluster

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
)

// TestCoordinatorTimesOutMissingAgent: an agent that never comes fails
// the run after --cluster-timeout-sec, naming it.
func TestCoordinatorTimesOutMissingAgent(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", benchtest.FreePort(t))
	c, err := listenCoordinator(addr, 3, "d", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	joined := make(chan error, 1)
	go func() {
		_, _, err := joinCluster(context.Background(), addr, clusterHello{Protocol: clusterProtocol, Size: 3, Index: 2, Digest: "d"}, 5*time.Second)
		joined <- err
	}()
	err = c.register(context.Background())
	if err == nil || !strings.Contains(err.Error(), "agent(s) 1 of 3 did not register within --cluster-timeout-sec 0.3") {
		t.Fatalf("register: %v", err)
	}
	// The agent that did come is told why the run ended.
	if err := <-joined; err == nil || !strings.Contains(err.Error(), "did not register") {
		t.Errorf("agent 2 ended with %v, want agent 0's reason", err)
	}
}

// TestCoordinatorRefusesOtherRun: an agent with other settings, a wrong
// size or a taken index is refused with the reason on both sides.
func TestCoordinatorRefusesOtherRun(t *testing.T) {
	for _, tc := range []struct {
		hello clusterHello
		want  string
	}{
		{clusterHello{Protocol: clusterProtocol, Size: 2, Index: 1, Digest: "other"}, "builds other requests or another schedule"},
		{clusterHello{Protocol: clusterProtocol, Size: 3, Index: 1, Digest: "d"}, "--cluster-size 3, agent 0 has 2"},
		{clusterHello{Protocol: clusterProtocol, Size: 2, Index: 0, Digest: "d"}, "index 0: want 1 to 1"},
		{clusterHello{Protocol: 99, Size: 2, Index: 1, Digest: "d"}, "protocol 99"},
	} {
		addr := fmt.Sprintf("127.0.0.1:%d", benchtest.FreePort(t))
		c, err := listenCoordinator(addr, 2, "d", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		joined := make(chan error, 1)
		go func() {
			_, _, err := joinCluster(context.Background(), addr, tc.hello, 5*time.Second)
			joined <- err
		}()
		err = c.register(context.Background())
		c.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: coordinator: %v, want %q", tc.hello, err, tc.want)
		}
		if err := <-joined; err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: agent: %v, want %q", tc.hello, err, tc.want)
		}
	}
}

// TestClockProbesAndStart: the coordinator measures each agent's offset
// with a bound, and the agent gets the start with its own figures.
func TestClockProbesAndStart(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", benchtest.FreePort(t))
	c, err := listenCoordinator(addr, 2, "d", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	type joined struct {
		start clusterStart
		err   error
	}
	got := make(chan joined, 1)
	go func() {
		l, st, err := joinCluster(context.Background(), addr, clusterHello{Protocol: clusterProtocol, Size: 2, Index: 1, Digest: "d"}, 5*time.Second)
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

// FuzzReadFrame: frames come from the network; malformed ones are errors,
// and a control frame never allocates past its limit.
func FuzzReadFrame(f *testing.F) {
	var b bytes.Buffer
	writeFrame(&b, frameHello, []byte(`{"protocol":1}`))
	writeFrame(&b, framePing, make([]byte, 8))
	f.Add(b.Bytes())
	f.Add([]byte{frameResult, 0xff, 0xff, 0xff, 0xff, 1, 2})
	f.Add([]byte{framePing, 0, 1, 0, 0})
	f.Add([]byte{'Z', 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			kind, payload, err := readFrame(r)
			if err != nil {
				return
			}
			if kind != frameResult && len(payload) > maxControlFrame {
				t.Fatalf("a %c frame of %d bytes", kind, len(payload))
			}
		}
	})
}
