package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/internal/py"
)

// fakeAgentEnv makes the test binary a stand-in for an agent of Local:
// it reports what the launcher gave it (index, coordinator, token, CPUs)
// and ends as its index's part of the test says.
const fakeAgentEnv = "STAMPEDE_CLUSTER_FAKE_AGENT"

// lowLimitEnv makes the test binary an agent that joins a cluster with
// its open-files limit lowered first (limitedAgent).
const lowLimitEnv = "STAMPEDE_CLUSTER_LOW_LIMIT"

// limitedEnv marks limitedAgent's second start, under its limit.
const limitedEnv = "STAMPEDE_CLUSTER_LIMITED"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeAgentEnv); mode != "" {
		os.Exit(fakeAgent(mode, os.Args[1:]))
	}
	if spec := os.Getenv(lowLimitEnv); spec != "" {
		os.Exit(limitedAgent(spec))
	}
	os.Exit(m.Run())
}

// limitedAgent sets its open-files limit to soft and hard and runs itself
// again, so that it starts with that limit as a process its launcher gave
// it (Go's runtime then does what it does at start-up); then it joins
// agent 0 at coordinator as agent index of 3 with a share of streams
// (spec: "soft hard index streams coordinator"). It prints Join's error
// and ends with 2 for a usage error, 1 for another.
func limitedAgent(spec string) int {
	var soft, hard uint64
	var index, streams int
	var coordinator string
	if _, err := fmt.Sscan(spec, &soft, &hard, &index, &streams, &coordinator); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv(limitedEnv) == "" {
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: soft, Max: hard}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		exe, _ := os.Executable()
		err := syscall.Exec(exe, os.Args, append(os.Environ(), limitedEnv+"=1"))
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := Join(context.Background(), coordinator, 3, index, Auth{}, 30, streams, 5*time.Second, 0, io.Discard)
	if err == nil {
		s.Close()
		return 0
	}
	fmt.Fprintln(os.Stderr, err)
	var usage *py.UsageError
	if errors.As(err, &usage) {
		return 2
	}
	return 1
}

// fakeAgent prints on stdout its index, coordinator, token length, CPUs
// and command line, and a line on stderr; in mode "wait" it waits for SIGINT and ends
// with 130, in mode "fail" agent 2 ends with status 7 at once and the
// others wait for the SIGTERM that follows.
func fakeAgent(mode string, args []string) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	index, coordinator := os.Getenv(plan.LocalAgentEnv), os.Getenv(plan.LocalCoordinatorEnv)
	var cpus []int
	if topo, err := engine.DetectTopology(); err == nil {
		for _, c := range topo.CPUs {
			cpus = append(cpus, c.ID)
		}
	}
	fmt.Printf("index=%s coordinator=%s token=%d cpus=%v args=%q\n", index, coordinator,
		len(os.Getenv(plan.ClusterTokenEnv)), cpus, args)
	listener := "none"
	if fd, err := strconv.Atoi(os.Getenv(coordinatorFDEnv)); err == nil {
		if ln, err := net.FileListener(os.NewFile(uintptr(fd), "listener")); err == nil {
			listener = ln.Addr().String()
		}
	}
	fmt.Fprintf(os.Stderr, "listener %s\n", listener)
	fmt.Fprintf(os.Stderr, "hello from %s\nno newline", index)
	switch mode {
	case "wait":
		s := <-sigs
		return 128 + int(s.(syscall.Signal))
	case "fail":
		if index == "2" {
			return 7
		}
		s := <-sigs
		return 128 + int(s.(syscall.Signal))
	}
	return 0
}

// syncBuffer is a buffer the agents' output goroutines may share.
type syncBuffer struct {
	b bytes.Buffer
	lockedWriter
}

func newSyncBuffer() *syncBuffer {
	s := &syncBuffer{}
	s.w = &s.b
	return s
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func fakeLocal(t *testing.T, mode string, size int) (*Local, *syncBuffer, *syncBuffer, chan os.Signal) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := engine.DetectTopology()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr := newSyncBuffer(), newSyncBuffer()
	sigs := make(chan os.Signal, 4)
	env := append(os.Environ(), fakeAgentEnv+"="+mode, plan.ClusterTokenEnv+"=from-the-user")
	return &Local{Exe: exe, Args: []string{"--model", "m"}, Env: env, Size: size, CPUs: cpus,
		Stdout: stdout, Stderr: stderr, Signals: sigs, Linger: time.Minute}, stdout, stderr, sigs
}

// TestLocalAgents starts three stand-in agents: each gets the user's
// command line, and in its environment its index, one loopback
// coordinator and the launch's own token (not the one in the launcher's
// environment); and its share of the CPUs; only agent 0's stdout is kept;
// every stderr line is prefixed, the last one without its newline too.
func TestLocalAgents(t *testing.T) {
	l, stdout, stderr, _ := fakeLocal(t, "exit", 3)
	exits, err := l.Run()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range exits {
		if e.Status != 0 || e.Err != nil {
			t.Errorf("agent %d: status %d, %v", e.Index, e.Status, e.Err)
		}
	}
	out := stdout.String()
	if strings.Count(out, "index=") != 1 || !strings.Contains(out, "index=0 coordinator=127.0.0.1:") ||
		!strings.Contains(out, "token=64 ") || !strings.Contains(out, ` args=["serve" "--model" "m"]`) {
		t.Errorf("stdout %q: want agent 0's line alone, with a loopback coordinator, a 64-digit token and the user's command line", out)
	}
	want := fmt.Sprint(SplitCPUs(l.CPUs, 3)[0])
	if !strings.Contains(out, "cpus="+want+" ") {
		t.Errorf("agent 0 runs on %q, want cpus=%s", out, want)
	}
	// Agent 0 alone inherits the listening socket on the coordinator's
	// port; the launcher closed its own.
	errs := stderr.String()
	coordinator := strings.Fields(strings.SplitN(out, "coordinator=", 2)[1])[0]
	for i, want := range []string{coordinator, "none", "none"} {
		if line := fmt.Sprintf("agent %d: listener %s\n", i, want); !strings.Contains(errs, line) {
			t.Errorf("stderr lacks %q:\n%s", line, errs)
		}
	}
	if conn, err := net.Dial("tcp", coordinator); err == nil {
		conn.Close()
		t.Errorf("%s still accepts once every agent ended", coordinator)
	}
	for i := range 3 {
		for _, line := range []string{fmt.Sprintf("agent %d: hello from %d\n", i, i), fmt.Sprintf("agent %d: no newline\n", i)} {
			if !strings.Contains(errs, line) {
				t.Errorf("stderr lacks %q:\n%s", line, errs)
			}
		}
	}
}

// TestLocalSignals forwards a signal to every agent; the agents' status
// is theirs (130), and none counts as failed.
func TestLocalSignals(t *testing.T) {
	l, _, stderr, sigs := fakeLocal(t, "wait", 3)
	go func() {
		// Once every agent has said hello, it waits for the signal.
		for strings.Count(stderr.String(), "hello from") < 3 {
			time.Sleep(10 * time.Millisecond)
		}
		sigs <- syscall.SIGINT
	}()
	exits, err := l.Run()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range exits {
		if e.Status != 130 {
			t.Errorf("agent %d: status %d, want 130", e.Index, e.Status)
		}
	}
	if strings.Contains(stderr.String(), "stopping the other agents") {
		t.Errorf("an interrupted agent was taken for a failed one:\n%s", stderr)
	}
}

// TestLocalAgentFails stops the others with SIGTERM when an agent other
// than 0 fails, naming it.
func TestLocalAgentFails(t *testing.T) {
	l, _, stderr, _ := fakeLocal(t, "fail", 3)
	exits, err := l.Run()
	if err != nil {
		t.Fatal(err)
	}
	got := []int{exits[0].Status, exits[1].Status, exits[2].Status}
	if !slices.Equal(got, []int{143, 143, 7}) {
		t.Errorf("statuses %v, want [143 143 7]", got)
	}
	if !strings.Contains(stderr.String(), "stampede: agent 2 ended with status 7; stopping the other agents") {
		t.Errorf("stderr does not name agent 2:\n%s", stderr)
	}
}

// TestSplitCPUs splits synthetic machines: a core's SMT siblings (Core,
// the lowest of them) always go to one agent, whatever their IDs' order.
func TestSplitCPUs(t *testing.T) {
	// smt is cores cores of two threads, numbered as Linux numbers them
	// on x86: thread 0 of every core first, then thread 1 (core k is CPUs
	// k and k+cores).
	smt := func(cores int) engine.Topology {
		var topo engine.Topology
		for id := range 2 * cores {
			topo.CPUs = append(topo.CPUs, engine.CPU{ID: id, Core: id % cores})
		}
		return topo
	}
	single := func(ids ...int) engine.Topology {
		var topo engine.Topology
		for _, id := range ids {
			topo.CPUs = append(topo.CPUs, engine.CPU{ID: id, Core: id})
		}
		return topo
	}
	cases := []struct {
		name string
		topo engine.Topology
		n    int
		want string
	}{
		{"4 cores, 2 agents", single(0, 1, 2, 3), 2, "[[0 1] [2 3]]"},
		{"5 cores, 3 agents", single(0, 1, 2, 3, 4), 3, "[[0 1] [2 3] [4]]"},
		{"more agents than cores", single(0, 1), 3, "[[0] [1] [0]]"},
		{"a sparse mask", single(4, 6, 9), 3, "[[4] [6] [9]]"},
		{"no CPUs", engine.Topology{}, 2, "[[] []]"},
		{"4 SMT cores, 2 agents", smt(4), 2, "[[0 4 1 5] [2 6 3 7]]"},
		{"3 SMT cores, 2 agents", smt(3), 2, "[[0 3 1 4] [2 5]]"},
		{"2 SMT cores, 4 agents", smt(2), 4, "[[0 2] [1 3] [0 2] [1 3]]"},
		{"siblings side by side", engine.Topology{CPUs: []engine.CPU{{ID: 0, Core: 0}, {ID: 1, Core: 0}, {ID: 2, Core: 2}, {ID: 3, Core: 2}}}, 2, "[[0 1] [2 3]]"},
	}
	for _, c := range cases {
		if got := fmt.Sprint(SplitCPUs(c.topo, c.n)); got != c.want {
			t.Errorf("%s: SplitCPUs = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestPinAgents(t *testing.T) {
	cases := []struct {
		setting     string
		pin, failed bool
	}{
		{"", true, false},
		{"1", true, false},
		{"0", false, false},
		{"yes", false, true},
	}
	for _, c := range cases {
		pin, err := PinAgents(c.setting)
		if pin != c.pin || (err != nil) != c.failed {
			t.Errorf("PinAgents(%q) = %v, %v; want %v, error %v", c.setting, pin, err, c.pin, c.failed)
		}
	}
	_, err := PinAgents("yes")
	var usage *py.UsageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), PinEnv) {
		t.Errorf("a bad value: %v; want a usage error naming %s", err, PinEnv)
	}
}

func TestCheckOpenFiles(t *testing.T) {
	if err := checkOpenFiles(3, 19_900, 20_000); err != nil {
		t.Errorf("19,900 streams in 20,000 files: %v", err)
	}
	err := checkOpenFiles(2, 25_000, 20_000)
	var usage *py.UsageError
	if !errors.As(err, &usage) {
		t.Fatalf("25,000 streams in 20,000 files: %v, want a usage error", err)
	}
	for _, s := range []string{"25000 streams", "at most 19900", "hard limit 20000", "--cluster-size 3 or more"} {
		if !strings.Contains(usage.Msg, s) {
			t.Errorf("%q does not say %q", usage.Msg, s)
		}
	}
	if err := checkOpenFiles(2, 1<<30, unix.RLIM_INFINITY); err != nil {
		t.Errorf("no limit: %v", err)
	}
}

// TestAgentChecksItsShare runs agents whose open-files limit is lowered
// to 200: agent 1 and agent 0 with 500 streams each fail at once with the
// launcher's words, agent 1 having told agent 0, which stops the run with
// them; a share that fits, or a low soft limit the agent lifts to a hard
// one that fits, goes on to connect.
func TestAgentChecksItsShare(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, hard, err := OpenFilesLimit()
	if err != nil {
		t.Fatal(err)
	}
	if hard < 1000 {
		t.Skipf("the open-files hard limit %d leaves no room to lift a soft one", hard)
	}
	agent := func(coordinator string, soft, hard uint64, index, streams int) (int, string) {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %d %d %d %s", lowLimitEnv, soft, hard, index, streams, coordinator))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Run()
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	const refusal = "would hold 500 streams at once, but one agent holds at most 100 (its open-files hard limit 200, less 100 for its own files): " +
		"use --cluster-size 15 or more, or raise the hard limit (ulimit -Hn, as root)"
	// Agent 1 tells a waiting agent 0 why it stops, and agent 0 stops the
	// run with its words; agent 0 fails before it listens.
	c, coordinator, _ := testCoordinator(t, 3, "", time.Minute)
	registered := make(chan error, 1)
	go func() { registered <- c.register(context.Background()) }()
	for _, index := range []int{1, 0} {
		status, stderr := agent(coordinator, 200, 200, index, 500)
		if want := fmt.Sprintf("--cluster-size 3: agent %d %s", index, refusal); status != 2 || !strings.Contains(stderr, want) {
			t.Errorf("agent %d, 500 streams in 200 files: status %d, %q; want 2 and %q", index, status, stderr, want)
		}
	}
	if err := <-registered; err == nil || !strings.Contains(err.Error(), "cluster: agent 1 cannot take part in the run: --cluster-size 3: agent 1 "+refusal) {
		t.Errorf("agent 0 registered with %v, want agent 1's refusal", err)
	}
	c.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	coordinator = ln.Addr().String()
	for _, tc := range []struct {
		name       string
		soft, hard uint64
		streams    int
	}{
		{"a share that fits", 200, 200, 50},
		{"a soft limit lifted", 200, hard, 500},
	} {
		ln.(*net.TCPListener).SetDeadline(time.Time{})
		accepted := make(chan error, 1)
		go func() {
			conn, err := ln.Accept()
			if err == nil {
				conn.Close() // no challenge: the agent's Join fails
			}
			accepted <- err
		}()
		status, stderr := agent(coordinator, tc.soft, tc.hard, 1, tc.streams)
		if err := <-accepted; err != nil || status != 1 || strings.Contains(stderr, "would hold") {
			t.Errorf("%s: accept %v, agent status %d, %q; want it to connect", tc.name, err, status, stderr)
		}
	}
}

// TestPrefixWriter holds the line prefixer to whole lines: a line split
// over writes comes out once, prefixed; a carriage return redraws with
// the prefix; an empty line stays empty.
func TestPrefixWriter(t *testing.T) {
	var out bytes.Buffer
	w := &prefixWriter{out: &lockedWriter{w: &out}, prefix: []byte("agent 1: "), start: true}
	for _, s := range []string{"one ", "line\ntwo\n", "\n", "\r 10%|", "\r 20%|\n", "tail"} {
		w.Write([]byte(s))
	}
	w.flush()
	want := "agent 1: one line\nagent 1: two\n\nagent 1:  10%|\ragent 1:  20%|\nagent 1: tail\n"
	if out.String() != want {
		t.Errorf("got %q\nwant %q", out.String(), want)
	}
}

// TestSharedWarningOnce: a warning every agent prints (the same command
// line gives each the same) reaches the launcher's stderr once, from the
// first agent that printed it; other lines, and other warnings, from
// every agent.
func TestSharedWarningOnce(t *testing.T) {
	var out bytes.Buffer
	errs := &lockedWriter{w: &out}
	agents := []*prefixWriter{
		{out: errs, prefix: []byte("agent 0: "), start: true},
		{out: errs, prefix: []byte("agent 1: "), start: true},
	}
	for i, w := range agents {
		fmt.Fprintf(w, "WARNING: tokenizer m could not be loaded\nhello from %d\nWARNING: agent %d's own\n", i, i)
	}
	agents[1].Write([]byte("WARNING: tokenizer m could not be loaded"))
	agents[1].flush()
	want := "agent 0: WARNING: tokenizer m could not be loaded\nagent 0: hello from 0\nagent 0: WARNING: agent 0's own\n" +
		"agent 1: hello from 1\nagent 1: WARNING: agent 1's own\n"
	if out.String() != want {
		t.Errorf("got %q\nwant %q", out.String(), want)
	}
}
