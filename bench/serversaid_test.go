package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

func readSidecar(t *testing.T, path string) report.Sidecar {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sc report.Sidecar
	if err := json.Unmarshal(raw, &sc); err != nil {
		t.Fatalf("sidecar: %v\n%s", err, raw)
	}
	return sc
}

// A wrong model fails every request as Python does ("Error 0: Not
// Found"), while the sidecar and stderr keep what the server said;
// --fail-on-error turns the run's end into a *RequestsFailed.
func TestWrongModelKeepsTheServersWords(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, err := runAgainstMock(t, context.Background(), mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond},
		"--model", "other-model", "--dataset-name", "random", "--num-prompts", "4", "--random-input-len", "8", "--random-output-len", "2",
		"--save-result", "--result-dir", dir, "--result-filename", "r.json", "--fail-on-error")
	var failed *outcome.RequestsFailed
	if !errors.As(err, &failed) || failed.Failed != 4 || failed.Requests != 4 {
		t.Fatalf("Run: %v, want 4 of 4 requests failed\nstderr:\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "Error 0: Not Found\n") {
		t.Errorf("Python's error list changed:\n%s", stdout)
	}
	if !strings.Contains(stderr, "stampede: ALL 4 REQUESTS FAILED") ||
		!strings.Contains(stderr, "  4 × 404 Not Found: The model `other-model` does not exist.\n") {
		t.Errorf("stderr lacks the summary:\n%s", stderr)
	}
	sc := readSidecar(t, filepath.Join(dir, "r.stampede.json"))
	if e := sc.Errors; e == nil || !e.AllFailed || len(e.Groups) != 1 || e.Groups[0].Status != 404 ||
		e.Groups[0].Message != "The model `other-model` does not exist." || !strings.HasSuffix(e.URL, "/v1/completions") ||
		!strings.HasSuffix(e.Groups[0].ExampleRequestID, "-0") {
		t.Errorf("sidecar errors %+v", sc.Errors)
	}
}

// scriptedServer answers every completions request with answer; other
// paths get a 404.
func scriptedServer(t *testing.T, answer func(w http.ResponseWriter)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			http.NotFound(w, r)
			return
		}
		answer(w)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func runScripted(t *testing.T, url string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	c, err := benchtest.ParseArgs(append([]string{"--base-url", url, "--model", "m", "--tokenizer", tinyTokenizer, "--disable-tqdm",
		"--dataset-name", "random", "--num-prompts", "3", "--random-input-len", "8", "--random-output-len", "4"}, args...), benchtest.NoEnv)
	if err != nil {
		t.Fatalf("parseArgs: %v", err)
	}
	var out, errOut bytes.Buffer
	err = Run(context.Background(), c, &out, &errOut)
	return out.String(), errOut.String(), err
}

// llama.cpp puts usage in its last chunk that still has choices: Python's
// figures count the text with the tokenizer, the sidecar keeps the
// server's count beside, and stderr warns when the two differ.
func TestUsageInTheLastChunkWithChoices(t *testing.T) {
	url := scriptedServer(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\" hello\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\" world\",\"finish_reason\":\"length\"}],\"usage\":{\"completion_tokens\":40,\"prompt_tokens\":8}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	dir := t.TempDir()
	stdout, stderr, err := runScripted(t, url, "--save-result", "--result-dir", dir, "--result-filename", "r.json")
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr)
	}
	sc := readSidecar(t, filepath.Join(dir, "r.stampede.json"))
	u := sc.Usage
	if u == nil || u.Requests != 3 || u.InTokenChunk != 3 || u.ServerOutputTokens != 120 || !u.Disagree ||
		u.CountedOutputTokens == 120 || len(u.Odd) != 1 || u.Odd[0].Kind != "over_max_tokens" {
		t.Fatalf("sidecar usage %+v", u)
	}
	if !strings.Contains(stdout, fmt.Sprintf("Total generated tokens:                  %-10d", u.CountedOutputTokens)) {
		t.Errorf("the block's total is not the counted %d:\n%s", u.CountedOutputTokens, stdout)
	}
	for _, want := range []string{"stampede: WARNING: the server counted 120 output tokens on 3 requests", "3 over max_tokens (request 0: 40 > 4)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// A compressed stream and a redirect fail with errors that say why.
func TestCompressedStreamAndRedirectSayWhy(t *testing.T) {
	gzipped := scriptedServer(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write([]byte{0x1f, 0x8b, 8, 0})
	})
	_, stderr, err := runScripted(t, gzipped)
	if err != nil || !strings.Contains(stderr, "3 × server answered with Content-Encoding: gzip, which stampede does not decode") {
		t.Errorf("gzip: %v\n%s", err, stderr)
	}
	moved := scriptedServer(t, func(w http.ResponseWriter) {
		w.Header().Set("Location", "http://elsewhere.example/v1/completions")
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	_, stderr, err = runScripted(t, moved)
	if err != nil || !strings.Contains(stderr,
		"3 × server answered 307 Temporary Redirect to http://elsewhere.example/v1/completions; point --base-url there") {
		t.Errorf("redirect: %v\n%s", err, stderr)
	}
}
