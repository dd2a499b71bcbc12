package mock

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// streamOnce sends one streaming completion of 3 tokens and drains it.
func streamOnce(t *testing.T, base string) {
	t.Helper()
	resp := post(t, base+"/v1/completions", `{"prompt":"hi","max_tokens":3,"stream":true}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "[DONE]") {
		t.Fatalf("status %d, body %q", resp.StatusCode, body)
	}
}

// With NoArrivalTap the server opens no packet socket, so the truth log
// has no A records even where one could be opened.
func TestNoArrivalTapLeavesOutTheArrivalStamps(t *testing.T) {
	t.Parallel()
	truth := filepath.Join(t.TempDir(), "truth.log")
	srv, base := startServer(t, Config{TruthLog: truth, NoArrivalTap: true})
	if srv.tap.Load() != nil {
		t.Fatal("the server opened an arrival tap with NoArrivalTap")
	}
	streamOnce(t, base)
	reqs := closeAndRead(t, srv, truth)
	if len(reqs) != 1 || reqs[0].ArrivalRxNs != 0 || len(reqs[0].Tokens) != 3 {
		t.Fatalf("truth log %+v: want one request of 3 tokens without an arrival stamp", reqs)
	}
}

// A FIFO writer serves streams as the ordinary one does, from a thread of
// its own at that policy; where the process may not use SCHED_FIFO, Start
// refuses, naming the option.
func TestWriterFIFOPriority(t *testing.T) {
	t.Parallel()
	srv, err := Start(Config{Mode: DecodeStep, ITL: 5 * time.Millisecond, WriterFIFOPriority: 1})
	if err != nil {
		if !strings.Contains(err.Error(), "--writer-fifo-priority 1") {
			t.Fatalf("Start: %v: the error does not name the option", err)
		}
		t.Skipf("no SCHED_FIFO here: %v", err)
	}
	defer srv.Close()
	if n := fifoThreads(t); n != 1 {
		t.Errorf("%d SCHED_FIFO threads in the process, want the writer's alone", n)
	}
	streamOnce(t, "http://"+srv.Addr())
}

// fifoThreads counts this process's threads whose policy is SCHED_FIFO.
func fifoThreads(t *testing.T) int {
	t.Helper()
	tids, err := filepath.Glob("/proc/self/task/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, dir := range tids {
		var tid int
		if _, err := fmt.Sscan(filepath.Base(dir), &tid); err != nil {
			continue
		}
		attr, err := unix.SchedGetAttr(tid, 0)
		if err == nil && attr.Policy == unix.SCHED_FIFO {
			n++
		}
	}
	return n
}
