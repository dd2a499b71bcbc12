package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/datasets/tokenizer"
)

// shareGPTFile writes a ShareGPT file of n conversations.
func shareGPTFile(t *testing.T, path string, n int) {
	t.Helper()
	var convs []any
	for i := range n {
		convs = append(convs, map[string]any{"conversations": []map[string]string{
			{"from": "human", "value": strings.Repeat("tell me a story about the sea ", 2+i%3)},
			{"from": "gpt", "value": "once upon a time there was a ship on the sea"},
		}})
	}
	data, _ := json.Marshal(convs)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A saved run is rerun from its sidecar's manifest, as a user would: the
// same server gives alike fingerprints; a slower mock is named as the
// difference; a changed dataset stops the rerun unless --yes.
func TestRerunCommand(t *testing.T) {
	tok, err := tokenizer.Load(tinyTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	start := func(itl time.Duration) *mock.Server {
		srv, err := mock.Start(mock.Config{Host: "127.0.0.1", Tokenizer: tok, TTFT: time.Millisecond, ITL: itl})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		return srv
	}
	fast, slow := start(time.Millisecond), start(3*time.Millisecond)
	dir := t.TempDir()
	data := filepath.Join(dir, "sharegpt.json")
	shareGPTFile(t, data, 20)
	runArgs := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		var code int
		if args[0] == "rerun" {
			code = runRerun(context.Background(), args[1:], nil, &stdout, &stderr) // stdin no terminal
		} else {
			code = run(context.Background(), args, &stdout, &stderr)
		}
		return code, stdout.String(), stderr.String()
	}
	code, _, errs := runArgs("--base-url", "http://"+fast.Addr(), "--model", "mock-llm", "--tokenizer", tinyTokenizer,
		"--dataset-name", "sharegpt", "--dataset-path", data, "--num-prompts", "12", "--sharegpt-output-len", "4",
		"--disable-tqdm", "--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "orig.json")
	if code != 0 {
		t.Fatalf("serve: exit %d: %s", code, errs)
	}
	orig := filepath.Join(dir, "orig.json")
	fp, m, exists, err := report.ReadSidecarHead(orig)
	if err != nil || !exists || fp == nil || m == nil {
		t.Fatalf("sidecar: %v %v %v %v", fp, m, exists, err)
	}
	if fp.Server["info.mockllm:config_info.itl"] != "1ms" || fp.Server["model.max_model_len"] == "" ||
		fp.Client["dataset_sha256"] == "" || fp.Client["tokenizer_sha256"] == "" || fp.Client["stampede"] == "" {
		t.Errorf("fingerprint %+v", fp)
	}
	if m.DatasetSHA256 != fp.Client["dataset_sha256"] || len(m.Argv) == 0 || m.Argv[0] != "--base-url" ||
		!slices.Equal(m.Targets, []string{"http://" + fast.Addr()}) {
		t.Errorf("manifest %+v", m)
	}

	t.Run("same server", func(t *testing.T) {
		code, out, errs := runArgs("rerun", "--yes", orig)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if !strings.Contains(errs, "  server   http://"+fast.Addr()+" (the original's)\n") {
			t.Errorf("stderr does not show the plan:\n%s", errs)
		}
		if !strings.Contains(out, "A vs B: fingerprints alike") || !strings.Contains(out, "orig.rerun.json") {
			t.Errorf("stdout lacks the like-for-like line or the rerun's file:\n%s", out)
		}
		if _, err := os.Stat(filepath.Join(dir, "orig.rerun.stampede.json")); err != nil {
			t.Errorf("the rerun's sidecar: %v", err)
		}
	})
	t.Run("json", func(t *testing.T) {
		code, out, errs := runArgs("rerun", "--json", "--yes", orig)
		var c struct {
			LikeForLike []struct {
				Checked     bool `json:"checked"`
				LikeForLike bool `json:"like_for_like"`
			} `json:"like_for_like"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &c) != nil || len(c.LikeForLike) != 1 || !c.LikeForLike[0].LikeForLike {
			t.Errorf("exit %d, stdout is not the comparison's JSON alone:\n%s\n%s", code, out, errs)
		}
	})
	t.Run("another server", func(t *testing.T) {
		code, out, errs := runArgs("rerun", "--yes", "--base-url", "http://"+slow.Addr(), orig)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if !strings.Contains(out, `server.info.mockllm:config_info.itl: "1ms" → "3ms"`) || !strings.Contains(out, "unlike for like") {
			t.Errorf("stdout lacks the ITL's difference:\n%s", out)
		}
	})
	t.Run("agents", func(t *testing.T) {
		code, _, errs := runArgs("rerun", "--yes", orig, "--", "--cluster-local", "--cluster-size", "2")
		if code != exitUsage || !strings.Contains(errs, "not allowed with stampede rerun, which runs the saved command line in this process alone") {
			t.Errorf("exit %d, stderr %s; want 2, refusing the agents", code, errs)
		}
	})
	t.Run("changed dataset", func(t *testing.T) {
		shareGPTFile(t, data, 21)
		var stdout, stderr bytes.Buffer
		code := runRerun(context.Background(), []string{orig}, strings.NewReader("n\n"), &stdout, &stderr)
		if errs := stderr.String(); code != exitError || !strings.Contains(errs, "dataset "+data+"'s SHA-256 was") ||
			!strings.Contains(errs, "Run it? [y/N] stampede rerun: not run") {
			t.Fatalf("exit %d, stderr %s; want 1 naming the dataset, asked and answered no", code, errs)
		}
		code, out, errs := runArgs("rerun", "--yes", orig)
		if code != 0 || !strings.Contains(out, "client.dataset_sha256") {
			t.Errorf("--yes: exit %d, %s\n%s", code, errs, out)
		}
	})
	t.Run("a tampered manifest", func(t *testing.T) { testTamperedManifest(t, orig, data) })
	t.Run("the question", func(t *testing.T) {
		ask := func(answer string) (int, string) {
			var stdout, stderr bytes.Buffer
			var in io.Reader
			if answer != "no terminal" {
				in = strings.NewReader(answer)
			}
			return runRerun(context.Background(), []string{orig}, in, &stdout, &stderr), stderr.String()
		}
		if code, errs := ask("no terminal"); code != exitError || !strings.Contains(errs, "give --yes to run what is shown above") {
			t.Errorf("no terminal, no --yes: exit %d, %s", code, errs)
		}
		if code, errs := ask(""); code != exitError || !strings.Contains(errs, "Run it? [y/N] stampede rerun: not run\n") {
			t.Errorf("no answer: exit %d, %s", code, errs)
		}
		if code, errs := ask("yes\n"); code != exitOK || !strings.Contains(errs, "Run it? [y/N] ") {
			t.Errorf("yes: exit %d, %s", code, errs)
		}
	})
	t.Run("a file of vLLM's own tool", func(t *testing.T) {
		py := filepath.Join(dir, "python.json")
		body, _ := os.ReadFile(orig)
		os.WriteFile(py, body, 0o644)
		code, _, errs := runArgs("rerun", py)
		if code != exitError || !strings.Contains(errs, "has no sidecar") {
			t.Errorf("exit %d, stderr %s", code, errs)
		}
		code, out, _ := runArgs("compare", py, orig)
		if code != 0 || !strings.Contains(out, "no fingerprint in "+py) {
			t.Errorf("compare: exit %d\n%s", code, out)
		}
	})
}

// copyResult copies the result file orig and its sidecar into a new
// directory, its manifest edited by edit, and returns the copy's path.
func copyResult(t *testing.T, orig string, edit func(manifest map[string]any)) string {
	t.Helper()
	dir := t.TempDir()
	body, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(dir, filepath.Base(orig))
	if err := os.WriteFile(copied, body, 0o644); err != nil {
		t.Fatal(err)
	}
	side, err := os.ReadFile(report.SidecarPath(orig))
	if err != nil {
		t.Fatal(err)
	}
	var sidecar map[string]any
	if err := json.Unmarshal(side, &sidecar); err != nil {
		t.Fatal(err)
	}
	edit(sidecar["manifest"].(map[string]any))
	if side, err = json.Marshal(sidecar); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(report.SidecarPath(copied), side, 0o644); err != nil {
		t.Fatal(err)
	}
	return copied
}

// setOption sets the long option name to value on a manifest's argv.
func setOption(m map[string]any, name, value string) {
	m["argv"] = append(m["argv"].([]any), "--"+name, value)
}

// listener accepts and counts connections, answering none: a server a
// tampered manifest points the rerun at.
func listener(t *testing.T) (addr string, accepted func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String(), func() int { return int(n.Load()) }
}

// The repros, each with --yes: a manifest's --save-partial that
// would replace a file elsewhere, and a manifest sending the local
// dataset's prompts and a re-given Authorization to another host, are
// refused before anything is sent or written.
func testTamperedManifest(t *testing.T, orig, data string) {
	rerun := func(file string, args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := runRerun(context.Background(), append([]string{"--yes", file}, args...), nil, &stdout, &stderr)
		return code, stderr.String()
	}
	victim := filepath.Join(t.TempDir(), "victim.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := copyResult(t, orig, func(m map[string]any) { setOption(m, "save-partial", victim) })
	code, errs := rerun(file)
	if body, _ := os.ReadFile(victim); code != exitError || string(body) != "precious" ||
		!strings.Contains(errs, "refused: the manifest's --save-partial "+victim+" lies outside the rerun's directory") {
		t.Errorf("--save-partial %s: exit %d, victim %q, stderr:\n%s", victim, code, body, errs)
	}
	if _, err := os.Stat(strings.TrimSuffix(file, ".json") + ".rerun.json"); !os.IsNotExist(err) {
		t.Errorf("a refused rerun ran: %v", err)
	}

	evil, accepted := listener(t)
	sendsElsewhere := func(m map[string]any) {
		setOption(m, "base-url", "http://"+evil)
		setOption(m, "dataset-path", data)
	}
	secret := []string{"--", "--header", "Authorization=Bearer s3cret"}
	file = copyResult(t, orig, sendsElsewhere)
	if code, errs := rerun(file, secret...); code != exitError ||
		!strings.Contains(errs, "refused: the manifest's command line sends to http://"+evil+", where the original run did not") {
		t.Errorf("another host: exit %d, stderr:\n%s", code, errs)
	}
	// Its targets rewritten too, the host passes for the original's; the
	// secret still goes only where the user names.
	file = copyResult(t, orig, func(m map[string]any) {
		sendsElsewhere(m)
		m["targets"] = []string{"http://" + evil}
	})
	code, errs = rerun(file, secret...)
	if code != exitError || !strings.Contains(errs, "refused: --header Authorization=<redacted> would go to http://"+evil) ||
		strings.Contains(errs, "s3cret") {
		t.Errorf("another host in the targets too: exit %d, stderr:\n%s", code, errs)
	}
	if n := accepted(); n != 0 {
		t.Errorf("the other host took %d connections from refused reruns", n)
	}
}
