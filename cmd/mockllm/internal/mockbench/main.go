// Command mockbench measures the mock server: a load client, a floor
// server (the least work that sends the same bytes at the same rate) and a
// truth-log analysis. scripts/bench-mock.sh drives it.
//
//	mockbench floor --itl-ms 200 --ttft-ms 100
//	mockbench load --addr 127.0.0.1:PORT --pid PID --conns 10000 --duration 20s
//	mockbench truthstats --file truth.log
package main

import (
	"container/heap"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stampede-bench/stampede/cmd/mockllm/internal/loadclient"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mockbench floor|load|truthstats [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "floor":
		err = floor(os.Args[2:])
	case "load":
		err = load(os.Args[2:])
	case "truthstats":
		err = truthStats(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q; want floor, load or truthstats", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mockbench:", err)
		os.Exit(1)
	}
}

// tokenChunk is one completions token event as the mock frames it (same
// fields, same length within a few bytes of word length).
const tokenChunk = `data: {"id":"cmpl-0123456789abcdef0123456789abcdef","object":"text_completion","created":1795973194,"model":"mock-llm","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}` + "\n\n"

// floor serves the floor: for every connection, after its request arrives
// and TTFT passes, one write(2) of a token chunk every ITL, from one locked
// thread taking the connections in due order from a heap and sleeping with
// Go's (millisecond) timers in between. No parsing, no JSON, no per-stream
// state beyond the descriptor: the cost of a mock that did nothing but its
// writes.
func floor(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ExitOnError)
	port := fs.Int("port", 0, "port to listen on")
	itlMs := fs.Float64("itl-ms", 200, "gap between a stream's chunks, ms")
	ttftMs := fs.Float64("ttft-ms", 100, "delay before a stream's first chunk, ms")
	fs.Parse(args)
	itl := time.Duration(*itlMs * float64(time.Millisecond))
	ttft := time.Duration(*ttftMs * float64(time.Millisecond))

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	frame := fmt.Appendf(nil, "%x\r\n%s\r\n", len(tokenChunk), tokenChunk)
	headers := []byte("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n")

	var mu sync.Mutex
	var arrived []floorStream
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 4096)
				if _, err := c.Read(buf); err != nil {
					c.Close()
					return
				}
				now := time.Now()
				c.Write(headers)
				raw, _ := c.(*net.TCPConn).SyscallConn()
				raw.Control(func(fd uintptr) {
					mu.Lock()
					arrived = append(arrived, floorStream{fd: int(fd), due: now.Add(ttft)})
					mu.Unlock()
				})
				// Keep c referenced (and its descriptor open) for the
				// process's life; drain anything further.
				io.Copy(io.Discard, c)
			}()
		}
	}()
	fmt.Printf("floor listening on %s\n", ln.Addr())

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	runtime.LockOSThread()
	var due floorHeap
	var events, failed uint64
	// lateness is how long after its due time each chunk was written,
	// comparable with the mock's own lateness.
	lateness := hdrhistogram.New(1, int64(time.Hour), 3)
	for {
		select {
		case <-stop:
			fmt.Fprintf(os.Stderr, "floor: %d events written, %d failed writes\n", events, failed)
			fmt.Fprintf(os.Stderr, "floor lateness_us p50=%.3f p90=%.3f p99=%.3f p99.9=%.3f max=%.3f\n",
				float64(lateness.ValueAtQuantile(50))/1e3, float64(lateness.ValueAtQuantile(90))/1e3,
				float64(lateness.ValueAtQuantile(99))/1e3, float64(lateness.ValueAtQuantile(99.9))/1e3,
				float64(lateness.Max())/1e3)
			return nil
		default:
		}
		mu.Lock()
		for _, s := range arrived {
			heap.Push(&due, s)
		}
		arrived = arrived[:0]
		mu.Unlock()
		if len(due) == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		now := time.Now()
		for !due[0].due.After(now) {
			s := &due[0]
			lateness.RecordValue(max(1, int64(now.Sub(s.due))))
			if _, err := unix.Write(s.fd, frame); err != nil {
				failed++
			} else {
				events++
			}
			s.due = s.due.Add(itl)
			heap.Fix(&due, 0)
		}
		if wait := time.Until(due[0].due); wait > 0 {
			time.Sleep(wait)
		}
	}
}

// floorStream is one connection of the floor server and its next due time.
type floorStream struct {
	fd  int
	due time.Time
}

// floorHeap orders the floor's streams by due time.
type floorHeap []floorStream

func (h floorHeap) Len() int           { return len(h) }
func (h floorHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h floorHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *floorHeap) Push(x any)        { *h = append(*h, x.(floorStream)) }
func (h *floorHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}

// load runs the load client and reports the CPU the server process used
// per event received, over a window after a warm-up.
func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	addr := fs.String("addr", "", "server host:port")
	pid := fs.Int("pid", 0, "server process id, whose CPU time is measured")
	conns := fs.Int("conns", 10000, "concurrent streams")
	maxTokens := fs.Int("max-tokens", 100000, "max_tokens per request (large: streams outlast the run)")
	spread := fs.Duration("spread", 200*time.Millisecond, "send the first requests evenly over this long")
	warmup := fs.Duration("warmup", 3*time.Second, "time after the streams start before measuring")
	duration := fs.Duration("duration", 20*time.Second, "measurement window")
	fs.Parse(args)
	if *addr == "" || *pid == 0 {
		return errors.New("load: --addr and --pid are required")
	}
	body := fmt.Appendf(nil, `{"model":"mock-llm","prompt":"hello","max_tokens":%d,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, *maxTokens)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := loadclient.Start(ctx, loadclient.Config{Addr: *addr, Conns: *conns, Path: "/v1/completions", Body: body, Spread: *spread})
	if err != nil {
		return err
	}
	time.Sleep(*spread + *warmup)
	cpu0, err := processCPU(*pid)
	if err != nil {
		return err
	}
	ev0, t0 := c.Stats().Events, time.Now()
	time.Sleep(*duration)
	cpu1, err := processCPU(*pid)
	if err != nil {
		return err
	}
	st, elapsed := c.Stats(), time.Since(t0)
	cancel()
	c.Wait()
	events := st.Events - ev0
	if events == 0 {
		return fmt.Errorf("load: no events in %v from %s (%d requests sent); does the server accept the request?", elapsed, *addr, st.Streams)
	}
	cpu := cpu1 - cpu0
	fmt.Printf("streams=%d events=%d events_per_s=%.0f server_cpu_s=%.2f server_cpu_share=%.3f cpu_per_event_us=%.2f errors=%d\n",
		*conns, events, float64(events)/elapsed.Seconds(), cpu.Seconds(), cpu.Seconds()/elapsed.Seconds(),
		float64(cpu.Microseconds())/float64(max(events, 1)), st.Errors)
	return nil
}

// processCPU returns the user + system CPU time of a process so far, from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s).
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields restart after ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// truthStats prints lateness percentiles from a truth log and, for a
// decode-step run, the burst length: per step, the time from the step's
// intended time to the last of its tokens handed to write(2).
func truthStats(args []string) error {
	fs := flag.NewFlagSet("truthstats", flag.ExitOnError)
	file := fs.String("file", "", "truth log")
	skip := fs.Duration("skip", 0, "ignore tokens intended within this long of the first one (the ramp-up)")
	tail := fs.Duration("tail", 0, "ignore tokens intended within this long of the last one (the clients closing)")
	fs.Parse(args)
	reqs, err := mock.ReadTruthLog(*file)
	if err != nil {
		return err
	}
	var lateness []int64
	type step struct {
		tokens int
		lastNs int64
	}
	steps := map[int64]*step{}
	first, last := int64(1<<63-1), int64(-1<<63)
	for _, r := range reqs {
		for _, tok := range r.Tokens {
			first = min(first, tok.IntendedNs)
			last = max(last, tok.IntendedNs)
		}
	}
	for _, r := range reqs {
		for _, tok := range r.Tokens {
			if tok.IntendedNs < first+int64(*skip) || tok.IntendedNs > last-int64(*tail) {
				continue
			}
			lateness = append(lateness, tok.SentNs-tok.IntendedNs)
			s := steps[tok.IntendedNs]
			if s == nil {
				s = &step{}
				steps[tok.IntendedNs] = s
			}
			s.tokens++
			s.lastNs = max(s.lastNs, tok.SentNs)
		}
	}
	var bursts, sizes []int64
	for at, s := range steps {
		if s.tokens > 1 {
			bursts = append(bursts, s.lastNs-at)
			sizes = append(sizes, int64(s.tokens))
		}
	}
	fmt.Printf("requests=%d tokens=%d (after skipping the first %v and the last %v)\n", len(reqs), len(lateness), *skip, *tail)
	printPercentiles("lateness_us", lateness, 1e3)
	if len(bursts) > 0 {
		printPercentiles("burst_ms", bursts, 1e6)
		printPercentiles("tokens_per_step", sizes, 1)
	}
	return nil
}

func printPercentiles(name string, v []int64, unit float64) {
	if len(v) == 0 {
		return
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	at := func(q float64) float64 { return float64(v[int(q*float64(len(v)-1))]) / unit }
	fmt.Printf("%s n=%d p50=%.3f p90=%.3f p99=%.3f p99.9=%.3f max=%.3f\n", name, len(v), at(.5), at(.9), at(.99), at(.999), at(1))
}
