package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
)

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--mode", "fast"}, `--mode "fast": want per-stream or decode-step`},
		{[]string{"--output-len", "x"}, `--output-len "x"`},
		{[]string{"--fault", "boom:prob=1"}, `unknown kind "boom"`},
		{[]string{"--tokenizer", "/x/tokenizer.json"}, "--tokenizer /x/tokenizer.json"},
		{[]string{"--nope"}, "flag provided but not defined: -nope"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--tls-cert", "c.pem"}, "--tls-cert and --tls-key: give both"},
		{[]string{"--tls-cert", "/x/c.pem", "--tls-key", "/x/k.pem"}, "--tls-cert /x/c.pem / --tls-key /x/k.pem"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, &stdout, &stderr); code != 2 {
			t.Errorf("run(%q) = %d, want 2", tt.args, code)
		}
		if !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("run(%q) stderr %q, want it to contain %q", tt.args, stderr.String(), tt.want)
		}
	}
	var stderr bytes.Buffer
	if code := run([]string{"--max-model-len", "-5", "--port", "0"}, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), "--max-model-len -5") {
		t.Errorf("invalid config: exit %d, stderr %q", code, stderr.String())
	}
}

// TestServeUntilSignal runs the command, waits for its ready line, makes a
// request and stops it with SIGTERM.
func TestServeUntilSignal(t *testing.T) {
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run([]string{"--port", "0", "--ttft-ms", "1", "--itl-ms", "1"}, pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "mockllm listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("ready line %q", line)
	}
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"a","max_tokens":2,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// A server that ignores SIGTERM hangs here until go test's -timeout,
	// which dumps every goroutine.
	if code := <-done; code != 0 {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	for _, want := range []string{"true TTFT", "lateness", "1 scheduled, 2 tokens"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}
