package cluster

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/internal/py"
)

// Local is --cluster-local: one benchmark run by Size agent processes on
// this host, each the same binary with the same command line, told in
// its environment its index, the coordinator on a free loopback port and
// the launch's secret (plan.LocalAgentEnv, plan.LocalCoordinatorEnv,
// plan.ClusterTokenEnv), joined by the protocol a Kubernetes Job's agents
// use (Join, Gather), so that the merge is the same exact merge.
type Local struct {
	Exe  string   // the binary the agents run: this one (os.Executable)
	Args []string // the serve options as the user gave them, without the verb
	Env  []string // the launcher's environment, which the agents inherit
	Size int
	// CPUs are the CPUs split between the agents (SplitCPUs): the
	// launcher's own (engine.DetectTopology's) when empty.
	CPUs engine.Topology
	// Float leaves the agents unpinned: each inherits the launcher's
	// affinity mask (PinAgents).
	Float bool
	// Streams is the most streams one agent holds at once, checked against
	// its open-files limit before any agent starts; 0 skips the check.
	Streams int
	Stdout  io.Writer // agent 0's stdout; the others' is discarded
	Stderr  io.Writer // every agent's stderr, each line prefixed "agent I: "
	// Signals are forwarded to every agent still running, one for one, so
	// that the agents stop as one process would (the first stops sending,
	// the second stops at once).
	Signals <-chan os.Signal
	// Linger is how long the other agents may run on once agent 0 has
	// ended (they have no one left to send their results to) before they
	// are killed; 0 is 5 s.
	Linger time.Duration

	// signalled is set once a signal has been forwarded: an agent that
	// then ends by it, or with its status, has not failed.
	signalled atomic.Bool
}

// AgentExit is how one agent ended: its exit status (128 + the signal's
// number when a signal ended it) and, for one that could not be started
// or waited for, the error.
type AgentExit struct {
	Index  int
	Status int
	Err    error
}

// openFilesReserve are the descriptors an agent keeps for other than its
// streams' sockets: stdio, its event loops' epoll and wakeup descriptors,
// the control connections, the coordinator's listener, the files it reads
// and writes.
const openFilesReserve = 100

// OpenFilesLimit is this process's open-files limit, soft and hard.
func OpenFilesLimit() (soft, hard uint64, err error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, fmt.Errorf("getrlimit(RLIMIT_NOFILE): %w", err)
	}
	return lim.Cur, lim.Max, nil
}

// checkOpenFiles refuses, before any agent starts, a share of streams
// that one agent's open-files hard limit cannot hold.
func checkOpenFiles(size, streams int, hard uint64) error {
	if tail := openFilesShortfall(size, streams, hard, "hard"); tail != "" {
		return &py.UsageError{Msg: fmt.Sprintf("argument --cluster-local: each of the %d agents would hold %d streams at once, %s", size, streams, tail)}
	}
	return nil
}

// checkShareOpenFiles refuses agent index's own share of streams when its
// open-files limit in force cannot hold it: every agent checks, wherever
// it was started from (a Kubernetes Job's pod as well as --cluster-local's
// launcher). Go's runtime raises a process's soft limit to one below the
// hard one as it starts (package syscall's init; the processes it starts
// get their original soft limit back, and an agent raises its own), so a
// soft limit within one of the hard limit is the hard limit, the one
// descriptor between them inside openFilesReserve.
func checkShareOpenFiles(size, index, streams int, soft, hard uint64) error {
	limit, kind := soft, "soft"
	if soft+1 >= hard {
		limit, kind = hard, "hard"
	}
	if tail := openFilesShortfall(size, streams, limit, kind); tail != "" {
		return &py.UsageError{Msg: fmt.Sprintf("--cluster-size %d: agent %d would hold %d streams at once, %s", size, index, streams, tail)}
	}
	return nil
}

// openFilesShortfall says why streams in each of size agents do not fit
// an open-files limit (kind: "hard" or "soft"), naming what one agent
// can hold and the cluster size that would fit; "" when they fit.
func openFilesShortfall(size, streams int, limit uint64, kind string) string {
	if streams <= 0 || limit == unix.RLIM_INFINITY {
		return ""
	}
	holds := int64(limit) - openFilesReserve
	if int64(streams) <= holds {
		return ""
	}
	total := streams * size
	need := size
	if holds > 0 {
		need = int((int64(total) + holds - 1) / holds)
	}
	return fmt.Sprintf("but one agent holds at most %d (its open-files %s limit %d, less %d for its own files): "+
		"use --cluster-size %d or more, or raise the hard limit (ulimit -Hn, as root)",
		max(holds, 0), kind, limit, openFilesReserve, max(need, size+1))
}

// ShareStreams is the most streams an agent holds at once: its requests,
// under its share of --max-concurrency when there is one (concurrency >
// 0), or all of them when all are sent at once; 0 when a finite rate
// without a cap leaves it to the server's pace.
func ShareStreams(requests, concurrency int, rate float64) int {
	switch {
	case concurrency > 0:
		return min(concurrency, requests)
	case math.IsInf(rate, 1):
		return requests
	}
	return 0
}

// AgentStreams is ShareStreams for agent p.AgentIndex of the plan's run
// (the launcher's plan is agent 0's, whose share is the largest).
func AgentStreams(p *plan.Plan) int {
	size := max(p.ClusterSize, 1)
	requests := (p.NumPrompts - p.AgentIndex + size - 1) / size
	return ShareStreams(requests, p.AgentConcurrency(), p.RequestRate)
}

// SplitCPUs gives each of n agents its CPUs of t, a core's SMT siblings
// always to the same agent (two agents on one core would contend for its
// pipelines, each unaware of the other): with n ≤ the cores, runs of
// consecutive cores whose counts differ by at most one (the first
// cores mod n agents one more); with more agents than cores, agent i
// shares core i mod their count with the others on it.
func SplitCPUs(t engine.Topology, n int) [][]int {
	var cores [][]int
	at := map[int]int{} // core → its index in cores
	for _, c := range t.CPUs {
		k, ok := at[c.Core]
		if !ok {
			k = len(cores)
			at[c.Core] = k
			cores = append(cores, nil)
		}
		cores[k] = append(cores[k], c.ID)
	}
	out := make([][]int, n)
	if len(cores) == 0 {
		return out
	}
	if n > len(cores) {
		for i := range out {
			out[i] = cores[i%len(cores)]
		}
		return out
	}
	per, extra := len(cores)/n, len(cores)%n
	next := 0
	for i := range out {
		k := per
		if i < extra {
			k++
		}
		out[i] = slices.Concat(cores[next : next+k]...)
		next += k
	}
	return out
}

// PinEnv names the variable that sets whether --cluster-local pins its
// agents to their CPUs (SplitCPUs): "1", unset or empty, the default,
// pins them, "0" does not (each agent then floats over the launcher's
// whole affinity mask). Pinned is the default even with more agents than
// CPUs: at 100,000 streams, six agents over two CPUs pinned three to a
// CPU cost 3–18 % less CPU per token event than the same agents floating
// (docs/scale.md "Pinning").
const PinEnv = "STAMPEDE_CLUSTER_PIN"

// PinAgents is whether the agents are pinned, by PinEnv's value setting;
// an error names the variable and what it accepts.
func PinAgents(setting string) (bool, error) {
	switch setting {
	case "", "1":
		return true, nil
	case "0":
		return false, nil
	}
	return false, &py.UsageError{Msg: fmt.Sprintf("$%s: invalid value %q: want 1 or nothing (pin each agent to its CPUs) or 0 (let them float)", PinEnv, setting)}
}

// coordinatorFDEnv names, in agent 0's environment, the descriptor of the
// listening socket --cluster-local's launcher opened for it: the port is
// held from the moment it is chosen until agent 0 accepts on it, so no
// other process can take it in between (listenCoordinator).
const coordinatorFDEnv = "STAMPEDE_COORDINATOR_FD"

// coordinatorListener is a listening socket on a free loopback port, for
// agent 0 to inherit, and its address.
func coordinatorListener() (*os.File, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("listening on a free port on 127.0.0.1 for the agents: %w", err)
	}
	defer ln.Close() // the file is a descriptor of its own
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return nil, "", fmt.Errorf("handing the agents' port to agent 0: %w", err)
	}
	return f, ln.Addr().String(), nil
}

// NewClusterToken is a fresh secret for one launch: 32 random bytes, hex.
func NewClusterToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// agentEnv is agent i's environment: the launcher's, with the agent's
// place in the cluster and the launch's secret. The last value of a
// variable is the one in force.
func (l *Local) agentEnv(i int, coordinator, token string) []string {
	return append(slices.Clip(l.Env), plan.ClusterTokenEnv+"="+token,
		plan.LocalAgentEnv+"="+strconv.Itoa(i), plan.LocalCoordinatorEnv+"="+coordinator)
}

// agent is one started agent process.
type agent struct {
	index int
	cmd   *exec.Cmd
	err   error         // from Start or Wait
	done  chan struct{} // closed once it has been waited for
}

// Run checks that each agent's share fits its open-files limit, starts
// the agents and waits for all of them. It returns every agent's exit;
// its error is for a launch that did not happen (no agent then runs).
func (l *Local) Run() ([]AgentExit, error) {
	if _, hard, err := OpenFilesLimit(); err != nil {
		return nil, err
	} else if err := checkOpenFiles(l.Size, l.Streams, hard); err != nil {
		return nil, err
	}
	token, err := NewClusterToken()
	if err != nil {
		return nil, err
	}
	listener, coordinator, err := coordinatorListener()
	if err != nil {
		return nil, err
	}
	// Once agent 0 holds its copy, the launcher's goes: an agent 0 that
	// ended must leave the port refusing, not accepting into a backlog.
	defer listener.Close()
	if len(l.CPUs.CPUs) == 0 {
		if l.CPUs, err = engine.DetectTopology(); err != nil {
			return nil, err
		}
	}
	cpus := SplitCPUs(l.CPUs, l.Size)
	if l.Float {
		cpus = make([][]int, l.Size)
	}
	errs := &lockedWriter{w: l.Stderr}
	agents := make([]*agent, l.Size)
	stop := make(chan struct{})
	for i := range agents {
		// The agent's command line is the user's; the secret reaches it
		// through the environment, which ps does not show.
		cmd := exec.Command(l.Exe, append([]string{"serve"}, l.Args...)...)
		cmd.Env = l.agentEnv(i, coordinator, token)
		if i == 0 {
			cmd.Stdout = l.Stdout
			// The listener is the first of ExtraFiles: descriptor 3.
			cmd.ExtraFiles = []*os.File{listener}
			cmd.Env = append(cmd.Env, coordinatorFDEnv+"=3")
		}
		cmd.Stderr = &prefixWriter{out: errs, prefix: []byte("agent " + strconv.Itoa(i) + ": "), start: true}
		// In a process group of their own, so that a terminal's Ctrl-C
		// reaches them once, through the launcher; killed with it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		a := &agent{index: i, cmd: cmd, done: make(chan struct{})}
		if err := a.start(cpus[i]); err != nil {
			close(stop)
			for _, b := range agents[:i] {
				_ = b.cmd.Process.Kill()
				<-b.done
			}
			return nil, fmt.Errorf("starting agent %d: %w", i, err)
		}
		agents[i] = a
		if i == 0 {
			listener.Close()
		}
	}
	go l.forward(agents, stop)
	go l.endTogether(agents, errs, stop)
	exits := make([]AgentExit, len(agents))
	for i, a := range agents {
		<-a.done
		exits[i] = AgentExit{Index: i, Status: exitStatus(a.cmd.ProcessState), Err: a.err}
	}
	close(stop)
	return exits, nil
}

// start starts the agent from a thread pinned to its CPUs, so that the
// whole process inherits them (sched_setaffinity from outside would miss
// the threads its runtime starts first). The thread stays locked to the
// goroutine waiting for the agent: it is the agent's parent, whose end
// Pdeathsig watches.
func (a *agent) start(cpus []int) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer close(a.done)
		if len(cpus) > 0 {
			var set unix.CPUSet
			for _, c := range cpus {
				set.Set(c)
			}
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				started <- fmt.Errorf("sched_setaffinity(%v): %w", cpus, err)
				return
			}
		}
		if err := a.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		a.err = a.cmd.Wait()
		a.cmd.Stderr.(*prefixWriter).flush()
		var exit *exec.ExitError
		if errors.As(a.err, &exit) {
			a.err = nil // the status says it
		}
	}()
	return <-started
}

// forward sends each signal the launcher receives to every agent.
func (l *Local) forward(agents []*agent, stop <-chan struct{}) {
	for {
		select {
		case s := <-l.Signals:
			l.signalled.Store(true)
			for _, a := range agents {
				_ = a.cmd.Process.Signal(s)
			}
		case <-stop:
			return
		}
	}
}

// endTogether ends the run when it cannot go on: an agent other than 0
// that fails makes the launcher stop the others (SIGTERM: they still
// print and save what they have), and once agent 0 has ended the others
// get Linger to end before they are killed.
func (l *Local) endTogether(agents []*agent, errs io.Writer, stop <-chan struct{}) {
	linger := l.Linger
	if linger == 0 {
		linger = 5 * time.Second
	}
	failed := make(chan int, len(agents))
	for _, a := range agents[1:] {
		go func() {
			select {
			case <-a.done:
				if s := exitStatus(a.cmd.ProcessState); s != 0 && s != exitRequestsFailed && !(s > 128 && l.signalled.Load()) {
					failed <- a.index
				}
			case <-stop:
			}
		}()
	}
	stopped := false
	for {
		select {
		case i := <-failed:
			if stopped {
				continue
			}
			stopped = true
			fmt.Fprintf(errs, "stampede: agent %d ended with status %d; stopping the other agents\n", i, exitStatus(agents[i].cmd.ProcessState))
			for _, a := range agents {
				_ = a.cmd.Process.Signal(syscall.SIGTERM)
			}
		case <-agents[0].done:
			timer := time.NewTimer(linger)
			defer timer.Stop()
			for _, a := range agents[1:] {
				select {
				case <-a.done:
				case <-timer.C:
					fmt.Fprintf(errs, "stampede: agent %d still running %s after agent 0 ended: killed\n", a.index, linger)
					_ = a.cmd.Process.Kill()
				case <-stop:
					return
				}
			}
			return
		case <-stop:
			return
		}
	}
}

// exitRequestsFailed is the status of an agent whose share had failed
// requests under --fail-on-error: the agent itself did its part.
const exitRequestsFailed = 3

// exitStatus is a process's exit status as a shell reports it: 128 + the
// signal's number for one a signal ended.
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// lockedWriter is the launcher's stderr, shared by the agents' prefixed
// writers one whole line at a time.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
	// warned are the warnings an agent printed: every agent runs the same
	// command line, so a warning of the run's (a tokenizer fallback, a
	// flag's) comes from each; it is printed once, by the first.
	warned map[string]bool
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// writeLine writes an agent's line (text, after its prefix), unless it is
// a warning another agent printed already.
func (w *lockedWriter) writeLine(line, text []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.HasPrefix(text, []byte("WARNING: ")) {
		if w.warned[string(text)] {
			return nil
		}
		if w.warned == nil {
			w.warned = map[string]bool{}
		}
		w.warned[string(text)] = true
	}
	_, err := w.w.Write(line)
	return err
}

// prefixWriter puts prefix before every line an agent writes, and writes
// each line whole, so that the agents' lines never mix. A carriage return
// ends a line too: a progress bar redraws with its prefix.
type prefixWriter struct {
	out    *lockedWriter
	prefix []byte
	line   []byte
	start  bool // at the start of a line
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if w.start {
			w.line = append(w.line[:0], w.prefix...)
			w.start = false
		}
		i := bytes.IndexAny(p, "\n\r")
		if i < 0 {
			w.line = append(w.line, p...)
			break
		}
		w.line = append(w.line, p[:i+1]...)
		p = p[i+1:]
		w.start = true
		out := w.line
		if len(out) == len(w.prefix)+1 {
			// An empty line stays empty. A bare carriage return (a progress
			// bar's redraw) is dropped: each drawing ends with its own, and
			// alone it would put another agent's next line over the bar.
			out = out[len(w.prefix):]
			if out[0] == '\r' {
				continue
			}
		}
		if err := w.out.writeLine(out, out[min(len(w.prefix), len(out)):]); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// flush writes a last line the agent left without its newline.
func (w *prefixWriter) flush() {
	if !w.start && len(w.line) > len(w.prefix) {
		w.line = append(w.line, '\n')
		_ = w.out.writeLine(w.line, w.line[len(w.prefix):])
	}
	w.start = true
}
