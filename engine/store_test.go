package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stampede-bench/stampede/shard/shardtest"
	"github.com/stampede-bench/stampede/sse"
)

// storeRequests are n requests of assorted sizes, each naming its index.
func storeRequests(n int) []Request {
	reqs := make([]Request, n)
	for i := range reqs {
		body := bytes.Repeat([]byte{'a' + byte(i%26)}, 1+(i*37)%700)
		reqs[i] = Request{Index: i, Wire: shardtest.WireBody("/ok/1?i="+strconv.Itoa(i), body), PromptLen: i % 50}
	}
	return reqs
}

func fillStore(t *testing.T, cfg StoreConfig, reqs []Request) *Store {
	t.Helper()
	s := NewStore(cfg)
	t.Cleanup(func() { s.Close() })
	for _, q := range reqs {
		if err := s.Append(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	return s
}

// A store gives back what it was given, in order, whether the bytes stayed
// in memory, were spilled, or some of each; and the spill is never seen in
// its directory.
func TestStoreReadsBackItsRequests(t *testing.T) {
	reqs := storeRequests(300)
	for _, mem := range []int64{-1, 20_000, 1 << 30} {
		t.Run(strconv.FormatInt(mem, 10), func(t *testing.T) {
			dir := t.TempDir()
			s := fillStore(t, StoreConfig{MemoryBytes: mem, Dir: dir}, reqs)
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("the spill is in %s as %s", dir, left[0].Name())
			}
			total, spilled := s.Bytes()
			if mem == 1<<30 && spilled != 0 || mem < 0 && spilled != total || mem == 20_000 && (spilled == 0 || spilled == total) {
				t.Errorf("memory bound %d: %d of %d bytes spilled", mem, spilled, total)
			}
			r, err := s.reader()
			if err != nil {
				t.Fatal(err)
			}
			for i, q := range reqs {
				got, err := r.read()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Wire, q.Wire) || got.PromptLen != q.PromptLen || s.index(i) != i {
					t.Fatalf("request %d read back as %q (prompt %d)", i, got.Wire, got.PromptLen)
				}
			}
			if _, err := s.reader(); err == nil {
				t.Error("a second read of the store was allowed")
			}
		})
	}
}

// recorder is a server that keeps every request's bytes and answers each
// with one token.
type recorder struct {
	ln  net.Listener
	mu  sync.Mutex
	got map[string][]byte
}

func newRecorder(t *testing.T) *recorder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{ln: ln, got: map[string][]byte{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go rec.serve(c)
		}
	}()
	return rec
}

func (rec *recorder) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		var raw bytes.Buffer
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		raw.WriteString(line)
		length := 0
		for {
			h, err := r.ReadString('\n')
			if err != nil {
				return
			}
			raw.WriteString(h)
			if k, v, ok := strings.Cut(strings.TrimSpace(h), ":"); ok && strings.EqualFold(k, "content-length") {
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
			if h == "\r\n" {
				break
			}
		}
		if _, err := io.CopyN(&raw, r, int64(length)); err != nil {
			return
		}
		rec.mu.Lock()
		rec.got[strings.Fields(line)[1]] = raw.Bytes()
		rec.mu.Unlock()
		if _, err := c.Write(shardtest.Response(1, "")); err != nil {
			return
		}
	}
}

// shrinkWindow makes the window tiny for the test.
func shrinkWindow(t *testing.T, bytes int64, requests int) {
	oldB, oldR := windowBytes, windowRequests
	windowBytes, windowRequests = bytes, requests
	t.Cleanup(func() { windowBytes, windowRequests = oldB, oldR })
}

// A run from a store that spilled every request, through a window of a
// few requests, sends the server exactly the bytes of a run from memory.
func TestRunFromSpilledStoreSendsTheSameBytes(t *testing.T) {
	shrinkWindow(t, 3000, 6)
	reqs := storeRequests(400)
	sent := func(cfg Config) map[string][]byte {
		rec := newRecorder(t)
		cfg.Address, cfg.Kind, cfg.Streaming = rec.ln.Addr().String(), sse.Completions, true
		cfg.MaxConcurrency, cfg.Shards, cfg.CPUs = 8, 2, []int{-1}
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res.Data.Log.All() {
			if !r.Success || r.Index != i {
				t.Fatalf("result %d: index %d, success %v %q", i, r.Index, r.Success, r.Error)
			}
		}
		if w := res.Health.Window; cfg.Store != nil && (w.PeakRequests > 6+8 || w.Bytes != 0) {
			t.Errorf("window held at most %d requests (%d bytes at the end); the window is 6 and the cap 8", w.PeakRequests, w.Bytes)
		}
		return rec.got
	}
	want := sent(Config{Requests: reqs})
	store := fillStore(t, StoreConfig{MemoryBytes: -1, Dir: t.TempDir()}, reqs)
	got := sent(Config{Store: store})
	if len(got) != len(reqs) || len(want) != len(reqs) {
		t.Fatalf("server got %d requests from the store, %d from memory; want %d", len(got), len(want), len(reqs))
	}
	for path, b := range want {
		if !bytes.Equal(got[path], b) {
			t.Fatalf("%s: the store's run sent\n%q\nthe memory's\n%q", path, got[path], b)
		}
	}
}

// gatedSpill is a spill whose reads wait for open.
type gatedSpill struct {
	spillFile
	reading chan struct{} // closed at the first read
	once    sync.Once
	open    chan struct{}
}

func (g *gatedSpill) ReadAt(p []byte, off int64) (int, error) {
	g.once.Do(func() { close(g.reading) })
	<-g.open
	return g.spillFile.ReadAt(p, off)
}

// No shard takes a request before its bytes are in memory: while the
// store's reads are held, every request is released on the schedule and
// none reaches the server; once they go on, every request is sent, and
// the waits are counted late.
func TestWindowHoldsRequestsWithoutBytes(t *testing.T) {
	gate := &gatedSpill{reading: make(chan struct{}), open: make(chan struct{})}
	reqs := storeRequests(20)
	store := fillStore(t, StoreConfig{MemoryBytes: -1, Dir: t.TempDir(), openSpill: func(dir string) (spillFile, error) {
		f, err := openUnlinked(dir)
		gate.spillFile = f
		return gate, err
	}}, reqs)
	srv := shardtest.New(t)
	r, err := Start(context.Background(), Config{Address: srv.Addr.String(), Kind: sse.Completions, Streaming: true,
		Store: store, Shards: 1, CPUs: []int{-1}})
	if err != nil {
		t.Fatal(err)
	}
	<-gate.reading
	for r.queue.Released() < len(reqs) {
		// The schedule releases everything at once (an infinite rate).
		select {
		case <-r.done:
			t.Fatal("run ended with its reads held")
		default:
		}
	}
	if taken := r.queue.Taken(); taken != 0 {
		t.Fatalf("%d requests taken with no bytes loaded", taken)
	}
	close(gate.open)
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for i, rr := range res.Data.Log.All() {
		if !rr.Success {
			t.Fatalf("request %d failed: %s", i, rr.Error)
		}
	}
	if got := srv.Requests.Load(); got != int64(len(reqs)) {
		t.Errorf("server got %d requests; want %d", got, len(reqs))
	}
	if res.Health.Window.Late == 0 {
		t.Error("no request counted late though all waited for their bytes")
	}
}

// failingSpill fails its writes past a few bytes, as a full disk does.
type failingSpill struct {
	spillFile
	left int
}

func (f *failingSpill) Write(p []byte) (int, error) {
	if len(p) > f.left {
		n := f.left
		f.left = 0
		return n, syscall.ENOSPC
	}
	f.left -= len(p)
	return len(p), nil
}

// A spill that cannot be written is an error before the clock, naming the
// directory and TMPDIR.
func TestStoreWriteErrorIsClear(t *testing.T) {
	dir := t.TempDir()
	s := NewStore(StoreConfig{MemoryBytes: -1, openSpill: func(string) (spillFile, error) {
		f, err := openUnlinked(dir)
		return &failingSpill{spillFile: f, left: 100}, err
	}})
	defer s.Close()
	var err error
	for _, q := range storeRequests(5000) {
		if err = s.Append(q); err != nil {
			break
		}
	}
	if err == nil {
		err = s.Finish()
	}
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), os.TempDir()) || !strings.Contains(err.Error(), "TMPDIR") {
		t.Fatalf("error = %v; want ENOSPC naming %s and TMPDIR", err, os.TempDir())
	}
	if err2 := s.Append(storeRequests(1)[0]); err2 == nil {
		t.Error("the store took a request after its write failed")
	}
}

// A spill that will not fit in its directory's free space is refused
// before it is written.
func TestStoreRefusesASpillThatWillNotFit(t *testing.T) {
	dir := t.TempDir()
	s := NewStore(StoreConfig{MemoryBytes: -1, Dir: dir, Expected: 1 << 50})
	defer s.Close()
	err := s.Append(storeRequests(1)[0])
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "free") {
		t.Fatalf("error = %v; want the free space of %s", err, dir)
	}
}

// closeCounting counts the spill's closes.
type closeCounting struct {
	spillFile
	closed *int
}

func (c closeCounting) Close() error { *c.closed++; return c.spillFile.Close() }

// A run cancelled (Ctrl-C) mid-way ends with the spill closed by Close and
// nothing of it left in its directory.
func TestCancelledRunLeavesNoSpill(t *testing.T) {
	dir := t.TempDir()
	closed := 0
	reqs := make([]Request, 50)
	for i := range reqs {
		reqs[i] = Request{Index: i, Wire: shardtest.Wire("/stall?i=" + strconv.Itoa(i))}
	}
	store := fillStore(t, StoreConfig{MemoryBytes: -1, Dir: dir, openSpill: func(dir string) (spillFile, error) {
		f, err := openUnlinked(dir)
		return closeCounting{f, &closed}, err
	}}, reqs)
	srv := shardtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Start(ctx, Config{Address: srv.Addr.String(), Kind: sse.Completions, Streaming: true,
		Store: store, MaxConcurrency: 4, Shards: 1, CPUs: []int{-1}, CancelGrace: 1})
	if err != nil {
		t.Fatal(err)
	}
	for srv.Requests.Load() < 4 {
		select {
		case <-r.done:
			t.Fatal("run ended before its requests stalled")
		default:
		}
	}
	cancel()
	res, err := r.Wait()
	if err != nil || !res.Cancelled {
		t.Fatalf("Wait = %v, cancelled %v", err, res.Cancelled)
	}
	if err := store.Close(); err != nil || closed != 1 {
		t.Fatalf("Close = %v after %d closes", err, closed)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%s holds %d files after the run", dir, len(left))
	}
}
