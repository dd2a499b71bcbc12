package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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
		code := run(context.Background(), args, &stdout, &stderr)
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
	if m.DatasetSHA256 != fp.Client["dataset_sha256"] || len(m.Argv) == 0 || m.Argv[0] != "--base-url" {
		t.Errorf("manifest %+v", m)
	}

	t.Run("same server", func(t *testing.T) {
		code, out, errs := runArgs("rerun", orig)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if !strings.Contains(out, "A vs B: fingerprints alike") || !strings.Contains(out, "orig.rerun.json") {
			t.Errorf("stdout lacks the like-for-like line or the rerun's file:\n%s", out)
		}
		if _, err := os.Stat(filepath.Join(dir, "orig.rerun.stampede.json")); err != nil {
			t.Errorf("the rerun's sidecar: %v", err)
		}
	})
	t.Run("json", func(t *testing.T) {
		code, out, errs := runArgs("rerun", "--json", orig)
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
		code, out, errs := runArgs("rerun", "--base-url", "http://"+slow.Addr(), orig)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if !strings.Contains(out, `server.info.mockllm:config_info.itl: "1ms" → "3ms"`) || !strings.Contains(out, "unlike for like") {
			t.Errorf("stdout lacks the ITL's difference:\n%s", out)
		}
	})
	t.Run("agents", func(t *testing.T) {
		code, _, errs := runArgs("rerun", orig, "--", "--cluster-local", "--cluster-size", "2")
		if code != exitUsage || !strings.Contains(errs, "not allowed with stampede rerun, which runs the saved command line in this process alone") {
			t.Errorf("exit %d, stderr %s; want 2, refusing the agents", code, errs)
		}
	})
	t.Run("changed dataset", func(t *testing.T) {
		shareGPTFile(t, data, 21)
		code, _, errs := runArgs("rerun", orig)
		if code != exitError || !strings.Contains(errs, "dataset "+data+"'s SHA-256 was") || !strings.Contains(errs, "--yes") {
			t.Fatalf("exit %d, stderr %s; want 1 naming the dataset and --yes", code, errs)
		}
		code, out, errs := runArgs("rerun", "--yes", orig)
		if code != 0 || !strings.Contains(out, "client.dataset_sha256") {
			t.Errorf("--yes: exit %d, %s\n%s", code, errs, out)
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
