// Command fidelity measures how close stampede's token timestamps are to
// the moments the tokens really left the server. It starts the mock server
// (cmd/mockllm) pinned to one CPU with its truth log, runs the engine
// against it, then matches every client token event to the server's log of
// write(2) times and reports the error distribution, the client's CPU time
// per event and its peak RSS. Over plain HTTP it then runs the floor (see
// floor.go) against the same mock and prints both CPU costs per token
// event and their ratio.
//
//	taskset -c 1 fidelity -mockllm bin/mockllm -streams 10000 -tok-per-s 5 -mode decode-step
//
// scripts/bench-fidelity.sh runs the standard matrix.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	rtmetrics "runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/cmd/mockllm/mockproc"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/sse"
	"golang.org/x/sys/unix"
)

type options struct {
	mockllm      string
	serverCPU    int
	clientCPU    int
	streams      int
	tokPerSec    float64
	tokens       int
	mode         string
	kernelStamps bool
	cpuProfile   string
	heapProfile  string
	showLate     time.Duration
	warm         bool
	tls          bool
	busy         bool
	floor        bool
	floorFirst   bool
}

func main() {
	var o options
	flag.StringVar(&o.mockllm, "mockllm", "bin/mockllm", "mock server binary")
	flag.IntVar(&o.serverCPU, "server-cpu", 0, "CPU the mock server is pinned to (-1: not pinned)")
	flag.IntVar(&o.clientCPU, "client-cpu", 1, "CPU the client's shard is pinned to")
	flag.IntVar(&o.streams, "streams", 1000, "concurrent streams")
	flag.Float64Var(&o.tokPerSec, "tok-per-s", 50, "tokens per second per stream")
	flag.IntVar(&o.tokens, "tokens", 100, "tokens per stream")
	flag.StringVar(&o.mode, "mode", "decode-step", "mock timing model: decode-step or per-stream")
	flag.BoolVar(&o.kernelStamps, "kernel-stamps", true, "stamp reads with the kernel's receive time")
	flag.BoolVar(&o.tls, "tls", false, "run the mock with --tls and the client over https://")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write the client's CPU profile of the run to this file")
	flag.StringVar(&o.heapProfile, "heapprofile", "", "write the heap profile taken when the client's live heap peaked to this file, and the memory peaks to stderr")
	flag.DurationVar(&o.showLate, "show-late", 0, "list requests whose first token was stamped later than this after it left the server (0: none)")
	flag.BoolVar(&o.warm, "warm-connections", false, "open the connections before the clock starts (stampede's --warm-connections)")
	flag.BoolVar(&o.busy, "busy", false, "run a busy-loop process on the client's CPU during the run")
	flag.BoolVar(&o.floor, "floor", true, "after stampede's run, run the floor (a bare epoll + recvmsg loop, see floor.go) against the same mock with the same streams, and print both CPU costs per event and their ratio (plain HTTP only)")
	flag.BoolVar(&o.floorFirst, "floor-first", false, "run the floor before stampede's run instead of after it (the run after the other meets the sockets it left in TIME_WAIT)")
	spin := flag.Bool("spin", false, "spin forever (the -busy process)")
	flag.Parse()
	if *spin {
		// 2⁶⁴ additions: until killed.
		n := uint64(1)
		for n != 0 {
			n++
		}
		fmt.Println(n)
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "fidelity:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "fidelity")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	truthPath := filepath.Join(dir, "truth.log")
	server, addr, err := startMock(o, truthPath)
	if err != nil {
		return err
	}
	defer server.Process.Kill()

	if o.busy {
		busy, err := startBusy(o.clientCPU)
		if err != nil {
			return err
		}
		defer func() { busy.Process.Kill(); busy.Wait() }()
	}

	var fl *floorResult
	runFloorNow := func() error {
		if !o.floor || o.tls {
			return nil
		}
		r, err := runFloor(netip.MustParseAddrPort(addr), floorRequests(o, addr), o.clientCPU, o.kernelStamps)
		fl = &r
		return err
	}
	if o.floorFirst {
		if err := runFloorNow(); err != nil {
			return err
		}
	}

	reqs := buildRequests(o, addr)
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
	}
	var watch *heapWatch
	if o.heapProfile != "" {
		watch = startHeapWatch()
	}
	var tlsConfig *tls.Config
	if o.tls {
		tlsConfig = &tls.Config{InsecureSkipVerify: true}
	}
	var before, after unix.Rusage
	gcBefore := gcCPU()
	unix.Getrusage(unix.RUSAGE_SELF, &before)
	res, err := engine.Run(context.Background(), engine.Config{
		Address: addr, Kind: sse.Completions, Streaming: true, Requests: reqs,
		RequestRate: math.Inf(1), Shards: 1, CPUs: []int{o.clientCPU},
		KernelTimestamps: o.kernelStamps, WarmConnections: o.warm,
		ConnectTimeout: time.Minute, RequestTimeout: 10 * time.Minute,
		TLS: tlsConfig,
	})
	unix.Getrusage(unix.RUSAGE_SELF, &after)
	gc := gcCPU() - gcBefore
	pprof.StopCPUProfile()
	if watch != nil {
		if err := watch.finish(o.heapProfile); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	if !o.floorFirst {
		if err := runFloorNow(); err != nil {
			return err
		}
	}
	server.Process.Signal(syscall.SIGINT)
	if err := server.Wait(); err != nil {
		return fmt.Errorf("mockllm: %w", err)
	}
	truth, err := mock.ReadTruthLog(truthPath)
	if err != nil {
		return fmt.Errorf("truth log: %w", err)
	}
	cost := clientCost{
		user:   time.Duration(after.Utime.Nano() - before.Utime.Nano()),
		sys:    time.Duration(after.Stime.Nano() - before.Stime.Nano()),
		events: tokenEvents(res),
	}
	report(o, res, truth, cost, gc, after.Maxrss)
	if fl != nil {
		reportFloor(o, res, cost, *fl)
	}
	return nil
}

// clientCost is what stampede's run cost, counted once for its own report
// and the floor's comparison: the process's CPU time over the run, and
// the token events of its successful requests.
type clientCost struct {
	user, sys time.Duration
	events    int
}

func (c clientCost) cpu() time.Duration { return c.user + c.sys }

// tokenEvents counts the token events of res's successful requests.
func tokenEvents(res *engine.Result) int {
	n := 0
	for _, r := range res.Data.Log.All() {
		if r.Success && r.ChunkEvents > 0 {
			n += 1 + len(r.ITLNs) // clientStamps' events: the first and one per gap
		}
	}
	return n
}

// gcCPU is the runtime's estimate of the CPU its garbage collector has
// used so far.
func gcCPU() time.Duration {
	s := []rtmetrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	rtmetrics.Read(s)
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}

// startMock runs the mock server under taskset and returns its address.
func startMock(o options, truthPath string) (*exec.Cmd, string, error) {
	itlMs := 1000 / o.tokPerSec
	args := []string{"--mode", o.mode, "--ttft-ms", "50",
		"--itl-ms", strconv.FormatFloat(itlMs, 'f', -1, 64), "--truth-log", truthPath}
	if o.tls {
		args = append(args, "--tls")
	}
	return mockproc.Start(o.mockllm, o.serverCPU, os.Stderr, args...)
}

// startBusy runs this program with -spin pinned to cpu: another process
// that wants the client's CPU all the time, as a busy machine's would.
func startBusy(cpu int) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("taskset", "-c", strconv.Itoa(cpu), self, "-spin")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("busy loop: %w", err)
	}
	return cmd, nil
}

func buildRequests(o options, addr string) []engine.Request {
	reqs := make([]engine.Request, o.streams)
	for i := range reqs {
		reqs[i] = engine.Request{Index: i, Wire: requestWire(o, addr, requestID(i)), PromptLen: 1}
	}
	return reqs
}

// floorRequests are the floor's requests: stampede's, under their own ids
// (of the same length), so that the truth log tells the two runs apart.
func floorRequests(o options, addr string) [][]byte {
	wires := make([][]byte, o.streams)
	for i := range wires {
		wires[i] = requestWire(o, addr, "flr-"+strconv.Itoa(i))
	}
	return wires
}

func requestWire(o options, addr, id string) []byte {
	body := []byte(`{"model":"mock-llm","prompt":"hello","max_tokens":` + strconv.Itoa(o.tokens) +
		`,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
	return httpwire.AppendRequest(nil, &httpwire.Request{
		Method: "POST", Host: addr, Path: "/v1/completions", ContentType: "application/json",
		RequestID: id, Body: body,
	})
}

func requestID(i int) string { return "fid-" + strconv.Itoa(i) }

// report matches client token events to the truth log by request id and
// token index and prints the error distributions.
func report(o options, res *engine.Result, truth []mock.TruthRequest, cost clientCost, gc time.Duration, maxRSSKiB int64) {
	sent := make(map[string][]mock.TruthToken, len(truth))
	arrivalOf := make(map[string]int64, len(truth))
	truthOf := make(map[string]*mock.TruthRequest, len(truth))
	for i, r := range truth {
		sent[r.RequestID] = r.Tokens
		arrivalOf[r.RequestID] = r.ArrivalNs
		truthOf[r.RequestID] = &truth[i]
	}
	// startToArrival is the part of a TTFT that is neither the client's
	// stamping nor the server's timing model: from the client's start
	// (just before its write) to when the mock's event loop first saw the
	// request's bytes — loopback plus the mock's own delay in reading.
	var tokenErr, ttftErr, startToArrival []int64
	// The client's TTFT breakdown, and the mock's arrival seen from the
	// client's transmit stamp: sent → arrival is loopback plus the mock's
	// own delay in reading the request.
	var connect, sendDelay, serverTTFB, sentToArrival []int64
	// The server's true time to first byte is its kernel's receive stamp
	// of the request (A record) to its write of the headers (H record);
	// serverErr is stampede's server TTFB minus it. rxToLoop is the mock's
	// own delay in reading a request, arrival stamp to its loop's clock;
	// queueWait is release → start.
	var serverErr, rxToLoop, queueWait []int64
	events, failed, unmatched := cost.events, 0, 0
	for _, r := range res.Data.Log.All() {
		if !r.Success {
			failed++
			continue
		}
		server := sent[requestID(r.Index)]
		if arrival, ok := arrivalOf[requestID(r.Index)]; ok {
			startToArrival = append(startToArrival, arrival-(res.MonotonicStartNs+r.StartNs))
			if b := r.Breakdown; b.Known {
				sentToArrival = append(sentToArrival, arrival-(res.MonotonicStartNs+r.StartNs+b.ConnectNs+b.SendNs))
			}
		}
		queueWait = append(queueWait, r.QueueNs)
		if b := r.Breakdown; b.Known {
			connect = append(connect, b.ConnectNs)
			sendDelay = append(sendDelay, b.SendNs)
			serverTTFB = append(serverTTFB, b.ServerNs)
			if t := truthOf[requestID(r.Index)]; t != nil && t.ArrivalRxNs != 0 && t.HeadersNs != 0 {
				serverErr = append(serverErr, b.ServerNs-(t.HeadersNs-t.ArrivalRxNs))
			}
		}
		if t := truthOf[requestID(r.Index)]; t != nil && t.ArrivalRxNs != 0 {
			rxToLoop = append(rxToLoop, t.ArrivalNs-t.ArrivalRxNs)
		}
		stamps := clientStamps(res.MonotonicStartNs, r)
		for k, ts := range stamps {
			if k >= len(server) || server[k].Index != k {
				unmatched++
				continue
			}
			e := ts - server[k].SentNs
			tokenErr = append(tokenErr, e)
			if k == 0 {
				ttftErr = append(ttftErr, e)
				if o.showLate > 0 && e > int64(o.showLate) {
					fmt.Printf("late first token: request %d, error %v, client TTFT %v, server write − arrival %v, token 1 sent %v after it\n",
						r.Index, time.Duration(e), time.Duration(r.TTFTNs), time.Duration(server[k].SentNs-arrivalOf[requestID(r.Index)]), nextSent(server))
				}
			}
		}
	}
	stampsOn := "on"
	if !o.kernelStamps {
		stampsOn = "off"
	}
	warm := ""
	if o.warm {
		warm = ", warm connections"
	}
	if o.busy {
		warm += ", busy loop on the client's CPU"
	}
	fmt.Printf("== %d streams × %g tok/s, %d tokens, mode %s, kernel stamps %s%s\n", o.streams, o.tokPerSec, o.tokens, o.mode, stampsOn, warm)
	fmt.Printf("requests failed %d, token events %d, unmatched %d, duration %v\n", failed, events, unmatched, time.Duration(res.Data.DurationNs).Round(time.Millisecond))
	fmt.Printf("token error µs:  %s\n", summary(tokenErr))
	fmt.Printf("TTFT error µs:   %s\n", summary(ttftErr))
	fmt.Printf("start → server arrival µs (in every TTFT; loopback + the mock reading the request): %s\n", summary(startToArrival))
	h := res.Health
	fmt.Printf("breakdown µs: connect %s\n              send delay %s\n              server TTFB %s\n", summary(connect), summary(sendDelay), summary(serverTTFB))
	fmt.Printf("request sent → server arrival µs (loopback + the mock reading it): %s\n", summary(sentToArrival))
	fmt.Printf("server TTFB error µs (stampede's − the mock's arrival RX stamp → headers write): %s\n", summary(serverErr))
	fmt.Printf("mock's arrival RX stamp → its loop reading the request µs: %s\n", summary(rxToLoop))
	fmt.Printf("queue wait (release → start) µs: %s\n", summary(queueWait))
	fmt.Printf("kernel TX stamps on %d of %d requests; %d of %d token events shared a read's stamp\n", h.TxStamped, h.Sent, h.SharedStamps, h.TokenEvents)
	perEvent, cpu := 0.0, cost.cpu()
	if events > 0 {
		perEvent = float64(cpu.Microseconds()) / float64(events)
	}
	fmt.Printf("client CPU %v = %.2f µs/event (GC %v); peak RSS %.1f MB\n", cpu.Round(time.Millisecond), perEvent, gc.Round(time.Millisecond), float64(maxRSSKiB)/1024)
	fmt.Printf("kernel stamp coverage %.4f; longest loop turn %v; schedule lag p50 %v p99 %v max %v\n",
		h.KernelStampCoverage, h.LongestTurn, h.ScheduleLagP50, h.ScheduleLagP99, h.ScheduleLagMax)
	for _, s := range h.Shards {
		fmt.Printf("shard on CPU %d: CPU time %v, %d reads, %d connections, preempted %d times, %d waits returned %d events, %d naps, %d reads deferred\n",
			s.CPU, s.CPUTime.Round(time.Millisecond), s.Reads, s.Connections, s.Preempted, s.Waits, s.Events, s.Naps, s.Deferred)
		if n := s.TLSHandshakes; n > 0 && events > 0 {
			fmt.Printf("TLS (%s): %d handshakes, %d resumed (%d the loop's own, %d own redone%s), handshake CPU %v = %v per connection, handshake time %v per connection; client CPU excluding handshakes %.2f µs/event\n",
				s.TLSPath, n, s.TLSResumed, s.TLSOwn, s.TLSOwnRedone, whyText(s.TLSOwnWhy), s.TLSHandshakeCPU.Round(time.Millisecond), (s.TLSHandshakeCPU / time.Duration(n)).Round(time.Microsecond),
				(s.TLSHandshakeTime / time.Duration(n)).Round(time.Microsecond), float64((cpu-s.TLSHandshakeCPU).Microseconds())/float64(events))
		}
	}
}

// nextSent is how long after token 0 the server sent token 1 (-1 with
// fewer than two). A first token read late is read with the segments that
// came after it, and the read carries the newest one's stamp: one sent
// soon after makes a small error.
func nextSent(t []mock.TruthToken) time.Duration {
	if len(t) < 2 {
		return -1
	}
	return time.Duration(t[1].SentNs - t[0].SentNs)
}

// whyText is ": why", or "" without one.
func whyText(why string) string {
	if why == "" {
		return ""
	}
	return ": " + why
}

// clientStamps rebuilds a request's token-event times as absolute
// CLOCK_MONOTONIC nanoseconds from its start, TTFT and exact ITLs.
func clientStamps(monoStartNs int64, r *metrics.RequestResult) []int64 {
	if r.ChunkEvents == 0 {
		return nil
	}
	ts := monoStartNs + r.StartNs + r.TTFTNs
	out := []int64{ts}
	for _, gap := range r.ITLNs {
		ts += gap
		out = append(out, ts)
	}
	return out
}

func summary(errs []int64) string {
	if len(errs) == 0 {
		return "no samples"
	}
	slices.Sort(errs)
	at := func(p float64) float64 { return float64(metrics.NearestRank(errs, p)) / 1e3 }
	return fmt.Sprintf("p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  min %.1f  (n=%d)",
		at(0.5), at(0.99), at(0.999), float64(errs[len(errs)-1])/1e3, float64(errs[0])/1e3, len(errs))
}
