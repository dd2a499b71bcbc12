package bench

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// A saved result's sidecar holds the mock's fingerprint and the client's,
// and the manifest of the command line as the run was given it.
func TestSidecarFingerprintAndManifest(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--dataset-name", "random", "--num-prompts", "4", "--random-input-len", "8", "--random-output-len", "2",
		"--seed", "5", "--save-result", "--result-dir", dir, "--result-filename", "r.json"}
	cfg := mock.Config{TTFT: time.Millisecond, ITL: 3 * time.Millisecond, MaxModelLen: 2048}
	if _, stderr, err := runAgainstMock(t, context.Background(), cfg, args...); err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr)
	}
	fp, m, exists, err := report.ReadSidecarHead(filepath.Join(dir, "r.json"))
	if err != nil || !exists || fp == nil || m == nil {
		t.Fatalf("sidecar head: %+v %+v %v %v", fp, m, exists, err)
	}
	for k, want := range map[string]string{
		"version": "0.0.0-mockllm", "model.id": "mock-llm", "model.max_model_len": "2048",
		"info.mockllm:config_info.itl": "3ms", "info.vllm:cache_config_info.enable_prefix_caching": "False",
	} {
		if fp.Server[k] != want {
			t.Errorf("server %s = %q, want %q (all: %v)", k, fp.Server[k], want, fp.Server)
		}
	}
	if len(fp.ServerProblems) != 0 {
		t.Errorf("server problems %q", fp.ServerProblems)
	}
	if fp.Client["tokenizer_sha256"] == "" || fp.Client["stampede"] == "" || fp.Client["tokenizer_sha256"] != m.TokenizerSHA256 {
		t.Errorf("client %v, manifest %+v", fp.Client, m)
	}
	if m.Seed != 5 || !slices.Contains(m.Argv, "--seed") || m.Argv[len(m.Argv)-1] != "r.json" || m.Tokenizer != tinyTokenizer {
		t.Errorf("manifest %+v", m)
	}
}
