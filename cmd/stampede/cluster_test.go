package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/cluster"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/datasets/tokenizer"
)

// TestClusterOfProcesses runs one benchmark as three agents, each its own
// process, against the mock: agents 1 and 2 each in a network namespace
// of its own, joined to the mock's by a veth pair, where the test may
// create namespaces (root, with ip(8)); agent 0 shares the mock's
// namespace. Elsewhere every agent runs on loopback. Agent 0's merged
// result covers every request once, and agrees with the mock's truth log
// request for request: each reached the server once, from the agent it
// belongs to (i mod 3), and the client saw as many token events as the
// server wrote.
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
	const size, n = 3, 60
	places, how := placeAgents(t, size)
	t.Logf("agents: %s", how)
	// The mock, and agent 0, listen where the agents reach them.
	listen := "127.0.0.1"
	if places[size-1].via != nil {
		listen = "0.0.0.0"
	}
	srv, err := mock.Start(mock.Config{Host: listen, Tokenizer: tok, TTFT: 2 * time.Millisecond, ITL: time.Millisecond, TruthLog: truthPath})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, mockPort, _ := net.SplitHostPort(srv.Addr())
	ln, err := net.Listen("tcp", net.JoinHostPort(listen, "0"))
	if err != nil {
		t.Fatal(err)
	}
	_, coordinatorPort, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()

	// The agents prove a shared secret; each is given a --result-dir of
	// its own (an output flag, which need not agree: agent 0's applies),
	// and all one --save-partial name, which each agent suffixes with its
	// index.
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agents := make([]*child, size)
	for k := range size {
		coordinator := net.JoinHostPort(places[k].host, coordinatorPort)
		resultDir := filepath.Join(dir, fmt.Sprintf("agent%d", k))
		if k == 0 {
			coordinator = net.JoinHostPort(listen, coordinatorPort)
			resultDir = dir
		}
		agents[k] = startChildVia(t, places[k].via, "serve", "--base-url", "http://"+net.JoinHostPort(places[k].host, mockPort), "--tokenizer", tinyTokenizer,
			"--model", "mock-llm", "--dataset-name", "random", "--num-prompts", strconv.Itoa(n),
			"--random-input-len", "16", "--random-output-len", "8", "--request-rate", "400", "--max-concurrency", "12",
			"--save-result", "--save-detailed", "--result-dir", resultDir, "--result-filename", "run.json", "--disable-tqdm",
			"--cluster-size", strconv.Itoa(size), "--cluster-index", strconv.Itoa(k), "--coordinator", coordinator,
			"--cluster-timeout-sec", "60", "--request-id-prefix", fmt.Sprintf("agent%d-", k),
			"--cluster-token-file", tokenFile, "--save-partial", filepath.Join(dir, "part.bin"))
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

	// stampede merge of the saved partials, found by the name given to
	// --save-partial, prints agent 0's block and saves the same result,
	// but for its date.
	parts := []string{filepath.Join(dir, "part.agent-0.bin"), filepath.Join(dir, "part.agent-1.bin"), filepath.Join(dir, "part.agent-2.bin")}
	var stdout, stderr strings.Builder
	mergeDir := t.TempDir()
	if code := run(t.Context(), []string{"merge", "--result-dir", mergeDir, filepath.Join(dir, "part.bin")}, &stdout, &stderr); code != 0 {
		t.Fatalf("stampede merge exited %d: %s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "format version 2") {
		t.Errorf("a merge of this version's partials notes version 2's missing outputs:\n%s", stderr.String())
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
		{[]string{"merge", filepath.Join(dir, "none.bin")}, exitError, "no such file, nor any agent's file"},
	} {
		var stdout, stderr strings.Builder
		if code := run(t.Context(), tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d saying %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}

// agentPlace is where an agent runs: the address at which it reaches the
// mock and agent 0, and the wrapper that starts it there.
type agentPlace struct {
	host string
	via  []string
}

// placeAgents puts agent 0 beside the mock and agents 1.. in network
// namespaces of their own, each joined to the mock's by a veth pair
// (10.<a>.<k>.1 on the mock's side, .2 on the agent's), when the test may
// create them; else every agent on loopback. It says which it did.
func placeAgents(t *testing.T, size int) ([]agentPlace, string) {
	places := make([]agentPlace, size)
	for k := range places {
		places[k].host = "127.0.0.1"
	}
	ipTool, err := exec.LookPath("ip")
	if os.Geteuid() != 0 || err != nil {
		return places, "on loopback (network namespaces need root and ip(8))"
	}
	ip := func(args ...string) error {
		out, err := exec.Command(ipTool, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	pid := os.Getpid()
	octet := 200 + pid%50 // apart from another run's addresses
	for k := 1; k < size; k++ {
		ns := fmt.Sprintf("stpd%dn%d", pid, k)
		hostEnd, nsEnd := fmt.Sprintf("stpd%dh%d", pid, k), fmt.Sprintf("stpd%da%d", pid, k)
		hostIP, nsIP := fmt.Sprintf("10.%d.%d.1", octet, k), fmt.Sprintf("10.%d.%d.2", octet, k)
		if err := ip("netns", "add", ns); err != nil {
			return loopbackAfter(places, err)
		}
		t.Cleanup(func() { ip("netns", "del", ns) })
		if err := ip("link", "add", hostEnd, "type", "veth", "peer", "name", nsEnd); err != nil {
			return loopbackAfter(places, err)
		}
		t.Cleanup(func() { ip("link", "del", hostEnd) })
		for _, step := range [][]string{
			{"link", "set", nsEnd, "netns", ns},
			{"addr", "add", hostIP + "/30", "dev", hostEnd},
			{"link", "set", hostEnd, "up"},
			{"netns", "exec", ns, "ip", "addr", "add", nsIP + "/30", "dev", nsEnd},
			{"netns", "exec", ns, "ip", "link", "set", nsEnd, "up"},
			{"netns", "exec", ns, "ip", "link", "set", "lo", "up"},
		} {
			if err := ip(step...); err != nil {
				return loopbackAfter(places, err)
			}
		}
		places[k] = agentPlace{host: hostIP, via: []string{ipTool, "netns", "exec", ns}}
	}
	return places, fmt.Sprintf("agents 1 to %d in network namespaces of their own, joined to the mock's by veth pairs", size-1)
}

// loopbackAfter falls back to loopback for every agent.
func loopbackAfter(places []agentPlace, err error) ([]agentPlace, string) {
	for k := range places {
		places[k] = agentPlace{host: "127.0.0.1"}
	}
	return places, fmt.Sprintf("on loopback (a network namespace could not be made: %v)", err)
}

// A merge of partials without the outputs' settings (version 2) says
// that it cannot know whether the run asked for their blocks.
func TestUnrecordedOutputs(t *testing.T) {
	m := &cluster.MergedRun{Agents: []cluster.PartialHeader{{}}}
	if note := unrecordedOutputs(m); !strings.Contains(note, "format version 2") || !strings.Contains(note, "--steady-state") {
		t.Errorf("version 2: note %q", note)
	}
	m.Agents[0].Settings.Outputs = &cluster.MergedOutputs{}
	if note := unrecordedOutputs(m); note != "" {
		t.Errorf("version 3: note %q", note)
	}
}

// TestClusterAgentKilled: agent 1 of 2, killed once the run is announced,
// delivers no partial result. Agent 0 still prints and saves the run of
// its own share, marked: a warning line heads the block, the sidecar's
// cluster.missing_agents names agent 1 with its share and why, and the
// command ends with exitAgentsMissing.
func TestClusterAgentKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two processes")
	}
	tok, err := tokenizer.Load(tinyTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mock.Start(mock.Config{Host: "127.0.0.1", Tokenizer: tok, TTFT: 2 * time.Millisecond, ITL: time.Millisecond})
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
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const size, n = 2, 40
	agents := make([]*child, size)
	for k := range size {
		// Twenty requests a second: agent 0's share lasts about two
		// seconds, long after agent 1 is gone.
		agents[k] = startChild(t, "serve", "--base-url", "http://"+srv.Addr(), "--tokenizer", tinyTokenizer,
			"--model", "mock-llm", "--dataset-name", "random", "--num-prompts", strconv.Itoa(n),
			"--random-input-len", "16", "--random-output-len", "8", "--request-rate", "20",
			"--save-result", "--result-dir", dir, "--result-filename", "run.json", "--disable-tqdm",
			"--cluster-size", strconv.Itoa(size), "--cluster-index", strconv.Itoa(k), "--coordinator", coordinator,
			"--cluster-timeout-sec", "20", "--cluster-token-file", tokenFile)
	}
	agents[1].waitLine(t, "the run starts at")
	if err := agents[1].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	code, stderr := agents[0].exitCode(t)
	out := agents[0].stdout.String()
	if code != exitAgentsMissing {
		t.Fatalf("agent 0 exited %d, want %d:\n%s\n%s", code, exitAgentsMissing, out, strings.Join(stderr, "\n"))
	}
	warning := "WARNING: agent(s) 1 of 2 delivered no partial result: the result below covers 20 of the run's 40 requests, not the whole run"
	at, block := strings.Index(out, warning), strings.Index(out, "Serving Benchmark Result")
	if at < 0 || block < at {
		t.Errorf("agent 0's block is not headed by the warning %q:\n%s", warning, out)
	}
	if all := strings.Join(stderr, "\n"); !strings.Contains(all, "agent 1 delivered no whole partial result within --cluster-timeout-sec 20: its connection closed") {
		t.Errorf("agent 0's stderr does not say why agent 1 is missing:\n%s", all)
	}

	var res struct {
		Completed int `json:"completed"`
		Failed    int `json:"failed"`
	}
	body, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatalf("agent 0 saved no result: %v", err)
	}
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if res.Completed+res.Failed != n/size {
		t.Errorf("the result holds %d completed and %d failed requests, want agent 0's %d", res.Completed, res.Failed, n/size)
	}
	var sc struct {
		Cluster struct {
			Size          int `json:"size"`
			MissingAgents []struct {
				Index    int    `json:"index"`
				Requests int    `json:"requests"`
				Reason   string `json:"reason"`
			} `json:"missing_agents"`
		} `json:"cluster"`
	}
	body, err = os.ReadFile(filepath.Join(dir, "run.stampede.json"))
	if err != nil {
		t.Fatalf("agent 0 saved no sidecar: %v", err)
	}
	if err := json.Unmarshal(body, &sc); err != nil {
		t.Fatal(err)
	}
	if m := sc.Cluster.MissingAgents; len(m) != 1 || m[0].Index != 1 || m[0].Requests != n/size || !strings.Contains(m[0].Reason, "within --cluster-timeout-sec 20: its connection closed") {
		t.Errorf("cluster.missing_agents = %+v, want agent 1's %d requests and why", m, n/size)
	}
}
