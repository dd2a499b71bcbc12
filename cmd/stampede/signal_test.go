package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestMain lets a test run the command in a child process: the test
// binary re-executed with STAMPEDE_TEST_MAIN=1 is the command.
func TestMain(m *testing.M) {
	if os.Getenv("STAMPEDE_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// stallServer answers its first completion request with a whole stream
// and every later one with the headers and one token, then holds the
// stream open: those stay in flight until the client gives up. Other
// paths (/tokenize, /metrics) are not found.
type stallServer struct {
	ln       net.Listener
	requests atomic.Int64
}

func newStallServer(t *testing.T) *stallServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &stallServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *stallServer) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		length, first := 0, ""
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if first == "" {
				first = line
			}
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && strings.EqualFold(k, "Content-Length") {
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
			if line == "\r\n" {
				break
			}
		}
		if _, err := io.CopyN(io.Discard, r, int64(length)); err != nil {
			return
		}
		if !strings.HasPrefix(first, "POST /v1/completions ") {
			c.Write([]byte("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"))
			continue
		}
		chunk := func(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }
		resp := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
			chunk("data: {\"choices\": [{\"text\": \"a\"}]}\n\n")
		if s.requests.Add(1) > 1 {
			c.Write([]byte(resp))
			io.Copy(io.Discard, r) // hold the stream until the client closes it
			return
		}
		c.Write([]byte(resp + chunk("data: [DONE]\n\n") + "0\r\n\r\n"))
	}
}

// child is the command running in a child process.
type child struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	lines  chan string // stderr, line by line
}

func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	return startChildVia(t, nil, args...)
}

// startChildVia starts the command under a wrapper (such as ip netns
// exec NAME); none when via is empty.
func startChildVia(t *testing.T, via []string, args ...string) *child {
	t.Helper()
	c := &child{lines: make(chan string, 100)}
	argv := append(append(append([]string{}, via...), os.Args[0]), args...)
	c.cmd = exec.Command(argv[0], argv[1:]...)
	c.cmd.Env = append(os.Environ(), "STAMPEDE_TEST_MAIN=1", "HF_HUB_OFFLINE=1", "OPENAI_API_KEY=")
	c.cmd.Stdout = &c.stdout
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill() })
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	return c
}

// waitLine waits for a stderr line containing s and returns the lines read.
func (c *child) waitLine(t *testing.T, s string) []string {
	t.Helper()
	var seen []string
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("stderr ended without %q:\n%s", s, strings.Join(seen, "\n"))
			}
			seen = append(seen, l)
			if strings.Contains(l, s) {
				return seen
			}
		case <-timeout:
			c.cmd.Process.Kill()
			t.Fatalf("no stderr line with %q:\n%s", s, strings.Join(seen, "\n"))
		}
	}
}

// exitCode waits for the child to end (draining stderr) and returns its
// exit status.
func (c *child) exitCode(t *testing.T) (int, []string) {
	t.Helper()
	var rest []string
	for l := range c.lines {
		rest = append(rest, l)
	}
	err := c.cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return c.cmd.ProcessState.ExitCode(), rest
}

func (s *stallServer) waitRequests(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for s.requests.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("server saw %d requests, waiting for %d", s.requests.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSignalsInAChildProcess sends a real process real signals while
// three requests stall in flight and the grace period would outlast the
// test. Two Ctrl-Cs: the run stops at once, exits 130, prints the block
// and writes the result, whose counts add up (the completed request, the
// three cancelled in flight). SIGTERM and SIGHUP, alone or mixed with
// Ctrl-C, do the same with the first signal's exit status.
func TestSignalsInAChildProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the command in a child process")
	}
	run := func(t *testing.T) (*stallServer, *child, string) {
		srv := newStallServer(t)
		dir := t.TempDir()
		c := startChild(t, "serve", "--base-url", "http://"+srv.ln.Addr().String(), "--model", "m", "--tokenizer", tinyTokenizer,
			"--dataset-name", "random", "--num-prompts", "8", "--random-input-len", "8", "--random-output-len", "4",
			"--max-concurrency", "3", "--cancel-grace-sec", "3600", "--disable-tqdm",
			"--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "r.json")
		// The fourth request goes out only once the first one ended, with
		// the concurrency cap at 3: one completed, three in flight.
		srv.waitRequests(t, 4)
		return srv, c, filepath.Join(dir, "r.json")
	}

	// stoppedAtOnce checks what a run stopped by two signals left: the
	// block on stdout and the result file, both counting the completed
	// request and the three cancelled in flight.
	stoppedAtOnce := func(t *testing.T, c *child, result string, rest []string) {
		t.Helper()
		if !strings.Contains(strings.Join(rest, "\n"), "Interrupted again: stopped at once; the results below cover the 4 requests sent, "+
			"of which 3 still in flight were failed \"cancelled\" (4 never sent are left out).") {
			t.Errorf("stderr after the second signal:\n%s", strings.Join(rest, "\n"))
		}
		out := c.stdout.String()
		if !strings.Contains(out, "Successful requests:                     1         \nFailed requests:                         3         \n") ||
			!strings.HasSuffix(out, strings.Repeat("=", 50)+"\n") {
			t.Errorf("stdout:\n%s", out)
		}
		saved, err := os.ReadFile(result)
		if err != nil {
			t.Fatalf("no result file: %v", err)
		}
		var res struct {
			Completed, Failed int
			Errors            []string
		}
		if err := json.Unmarshal(saved, &res); err != nil {
			t.Fatal(err)
		}
		cancelled := 0
		for _, e := range res.Errors {
			if e == "cancelled" {
				cancelled++
			}
		}
		if res.Completed != 1 || res.Failed != 3 || cancelled != 3 || len(res.Errors) != 4 {
			t.Errorf("saved completed %d failed %d, errors %q; want 1 + 3 cancelled of 4 sent", res.Completed, res.Failed, res.Errors)
		}
	}

	// Every stop signal, and any mix of them, stops the run as Ctrl-C
	// does; the exit status is the first signal's.
	for _, tc := range []struct {
		name          string
		first, second syscall.Signal
		firstLine     string
	}{
		{"interrupt twice", syscall.SIGINT, syscall.SIGINT, "Interrupt again to stop at once."},
		{"terminate, then hang up", syscall.SIGTERM, syscall.SIGHUP, "terminated (SIGTERM): no more requests are sent"},
		{"hang up, then interrupt", syscall.SIGHUP, syscall.SIGINT, "hung up (SIGHUP): no more requests are sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c, result := run(t)
			c.cmd.Process.Signal(tc.first)
			c.waitLine(t, tc.firstLine)
			c.cmd.Process.Signal(tc.second)
			code, rest := c.exitCode(t)
			if want := 128 + int(tc.first); code != want {
				t.Errorf("exit status %d, want %d", code, want)
			}
			stoppedAtOnce(t, c, result, rest)
		})
	}
}
