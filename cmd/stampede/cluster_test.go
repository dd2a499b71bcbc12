package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/datasets/tokenizer"
)

// TestClusterOfProcesses runs one benchmark as three agents, each its own
// process, against the mock on loopback (the agents share the host's
// network namespace): agent 0's merged result covers every request once,
// and agrees with the mock's truth log request for request: each reached
// the server once, from the agent it belongs to (i mod 3), and the client
// saw as many token events as the server wrote.
func TestClusterOfProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes")
	}
	tok, err := tokenizer.Load(tinyTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	truthPath := filepath.Join(dir, "truth.log")
	srv, err := mock.Start(mock.Config{Tokenizer: tok, TTFT: 2 * time.Millisecond, ITL: time.Millisecond, TruthLog: truthPath})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	coordinator := ln.Addr().String()
	ln.Close()

	const size, n = 3, 60
	agents := make([]*child, size)
	for k := range size {
		agents[k] = startChild(t, "serve", "--base-url", "http://"+srv.Addr(), "--tokenizer", tinyTokenizer,
			"--model", "mock-llm", "--dataset-name", "random", "--num-prompts", strconv.Itoa(n),
			"--random-input-len", "16", "--random-output-len", "8", "--request-rate", "400", "--max-concurrency", "12",
			"--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "run.json", "--disable-tqdm",
			"--cluster-size", strconv.Itoa(size), "--cluster-index", strconv.Itoa(k), "--coordinator", coordinator,
			"--cluster-timeout-sec", "60", "--request-id-prefix", fmt.Sprintf("agent%d-", k),
			"--save-partial", filepath.Join(dir, fmt.Sprintf("part%d.bin", k)))
	}
	for k, a := range agents {
		if code, stderr := a.exitCode(t); code != 0 {
			t.Fatalf("agent %d exited %d:\n%s\n%s", k, code, a.stdout.String(), strings.Join(stderr, "\n"))
		}
	}
	if !strings.Contains(agents[0].stdout.String(), "Serving Benchmark Result") {
		t.Fatalf("agent 0 printed no result:\n%s", agents[0].stdout.String())
	}
	srv.Close() // flushes the truth log

	var res struct {
		Completed  int         `json:"completed"`
		Failed     int         `json:"failed"`
		NumPrompts int         `json:"num_prompts"`
		OutputLens []int       `json:"output_lens"`
		ITLs       [][]float64 `json:"itls"`
		Errors     []string    `json:"errors"`
	}
	body, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if res.Completed != n || res.Failed != 0 || len(res.ITLs) != n || len(res.OutputLens) != n {
		t.Fatalf("merged result: %d completed, %d failed, %d itls, errors %q; want all %d", res.Completed, res.Failed, len(res.ITLs), res.Errors, n)
	}

	truth, err := mock.ReadTruthLog(truthPath)
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, n)
	for _, tr := range truth {
		var agent, index int
		if _, err := fmt.Sscanf(strings.Replace(tr.RequestID, "-", " ", 1), "agent%d %d", &agent, &index); err != nil || index < 0 || index >= n {
			t.Fatalf("truth log request %q", tr.RequestID)
		}
		if agent != index%size {
			t.Errorf("request %d came from agent %d, want agent %d", index, agent, index%size)
		}
		if seen[index] {
			t.Errorf("request %d reached the server twice", index)
		}
		seen[index] = true
		if got := len(res.ITLs[index]) + 1; got != len(tr.Tokens) {
			t.Errorf("request %d: the client saw %d token events, the server wrote %d", index, got, len(tr.Tokens))
		}
	}
	for i, ok := range seen {
		if !ok {
			t.Errorf("request %d never reached the server", i)
		}
	}

	// stampede merge of the saved partials prints agent 0's block and
	// saves the same result, but for its date.
	parts := []string{filepath.Join(dir, "part0.bin"), filepath.Join(dir, "part1.bin"), filepath.Join(dir, "part2.bin")}
	var stdout, stderr strings.Builder
	mergeDir := t.TempDir()
	if code := run(t.Context(), append([]string{"merge", "--result-dir", mergeDir}, parts...), &stdout, &stderr); code != 0 {
		t.Fatalf("stampede merge exited %d: %s", code, stderr.String())
	}
	if block := stdout.String(); !strings.Contains(agents[0].stdout.String(), block) || !strings.Contains(block, "Serving Benchmark Result") {
		t.Errorf("stampede merge printed\n%s\nagent 0 printed\n%s", block, agents[0].stdout.String())
	}
	merged, err := os.ReadFile(filepath.Join(mergeDir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	dated := regexp.MustCompile(`"date": "[0-9-]+"`)
	if a, b := dated.ReplaceAll(merged, nil), dated.ReplaceAll(body, nil); !bytes.Equal(a, b) {
		t.Errorf("stampede merge saved another result than agent 0")
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"merge"}, exitUsage, "give the partial result files"},
		{[]string{"merge", parts[0], parts[2]}, exitError, "agent(s) 1 of 3 are missing"},
		{[]string{"merge", parts[0], filepath.Join(dir, "run.json")}, exitError, "not a gzip stream"},
	} {
		var stdout, stderr strings.Builder
		if code := run(t.Context(), tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d saying %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}
