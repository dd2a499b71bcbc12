package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/datasets/tokenizer"
	"github.com/stampede-bench/stampede/metrics"
)

// rowValue returns the value printed on the result row labelled label.
func rowValue(t *testing.T, stdout, label string) string {
	t.Helper()
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(line, label) {
			return strings.TrimSpace(line[len(label):])
		}
	}
	t.Fatalf("no row %q in:\n%s", label, stdout)
	return ""
}

// savedResult reads the one result JSON in dir.
func savedResult(t *testing.T, dir string) map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("result files %v, %v", files, err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".stampede.json") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Fatalf("no result JSON among %v", files)
	return nil
}

// TestRunCountsOutputWithoutUsage: against a server that sends no usage,
// output tokens are the tokenizer's count of each generated text (spec
// §d), with and without --save-detailed, as Python counts them.
func TestRunCountsOutputWithoutUsage(t *testing.T) {
	tok, err := tokenizer.Load(tinyTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--model", "mock-llm", "--dataset-name", "random", "--num-prompts", "6",
		"--random-input-len", "16", "--random-output-len", "5",
		"--extra-body", `{"stream_options":{"include_usage":false}}`, "--save-result"}
	run := func(extra ...string) (string, map[string]any) {
		dir := t.TempDir()
		stdout, stderr, err := runAgainstMock(t, context.Background(), mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond},
			append(append(args, "--result-dir", dir), extra...)...)
		if err != nil {
			t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
		}
		return stdout, savedResult(t, dir)
	}

	detailedOut, detailed := run("--save-detailed")
	texts := detailed["generated_texts"].([]any)
	lens := detailed["output_lens"].([]any)
	want := 0
	for i, text := range texts {
		n := len(tok.Encode(nil, text.(string), false))
		if text == "" || int(lens[i].(float64)) != n {
			t.Errorf("request %d: output_len %v for %q, want the tokenizer's %d", i, lens[i], text, n)
		}
		want += n
	}
	if got := detailed["total_output_tokens"].(float64); int(got) != want || want == 0 {
		t.Errorf("detailed total_output_tokens %v, want %d (> 0)", got, want)
	}
	if got := rowValue(t, detailedOut, "Total generated tokens:"); got != strconv.Itoa(want) {
		t.Errorf("detailed run prints %s generated tokens, want %d", got, want)
	}

	// The default run used to print 0: it dropped the text.
	plainOut, plain := run()
	got, err := strconv.Atoi(rowValue(t, plainOut, "Total generated tokens:"))
	if err != nil || got == 0 || plain["total_output_tokens"] != float64(got) {
		t.Errorf("default run prints %d generated tokens (%v), saves %v", got, err, plain["total_output_tokens"])
	}
}

// TestRunCountsOnlyUncountedText: without --save-detailed, a request whose
// usage gave completion_tokens counts those, one without counts its text
// with the tokenizer, exactly.
func TestRunCountsOnlyUncountedText(t *testing.T) {
	tok, err := tokenizer.Load(tinyTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	const text, usageCount = " the weather is rainy", 7
	srv := streamServer(t, func(i int64, w io.Writer) {
		fmt.Fprintf(w, "data: {\"choices\":[{\"text\":%q}]}\n\n", text)
		if i%2 == 0 {
			fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":15,\"completion_tokens\":%d}}\n\n", usageCount)
		}
	})
	const n = 6
	dir := t.TempDir()
	stdout, stderr, err := runAgainstServer(t, srv.URL, "--model", "m", "--dataset-name", "random", "--num-prompts", strconv.Itoa(n),
		"--random-input-len", "16", "--random-output-len", "4", "--max-concurrency", "1", "--save-result", "--result-dir", dir)
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	// The test request is the server's request 0; the run's are 1..n.
	want := 0
	for i := 1; i <= n; i++ {
		if i%2 == 0 {
			want += usageCount
		} else {
			want += len(tok.Encode(nil, text, false))
		}
	}
	if got := rowValue(t, stdout, "Total generated tokens:"); got != strconv.Itoa(want) {
		t.Errorf("prints %s generated tokens, want %d", got, want)
	}
}

// TestRunPoolingBytesFormats: encoding_format bytes and bytes_only, set
// through --extra-body, succeed against the mock with the prompt lengths
// Python takes: the metadata header's usage, and the request's own.
func TestRunPoolingBytesFormats(t *testing.T) {
	run := func(format string) map[string]any {
		dir := t.TempDir()
		args := []string{"--backend", "openai-embeddings", "--endpoint", "/v1/embeddings", "--model", "mock-llm",
			"--dataset-name", "random", "--num-prompts", "3", "--random-input-len", "16",
			"--save-result", "--save-detailed", "--result-dir", dir}
		if format != "" {
			args = append(args, "--extra-body", `{"encoding_format":"`+format+`"}`)
		}
		stdout, stderr, err := runAgainstMock(t, context.Background(), mock.Config{}, args...)
		if err != nil {
			t.Fatalf("Run %s: %v\nstdout:\n%s\nstderr:\n%s", format, err, stdout, stderr)
		}
		m := savedResult(t, dir)
		if m["completed"] != float64(3) {
			t.Fatalf("%s: completed %v, errors %v", format, m["completed"], m["errors"])
		}
		return m
	}
	float := run("")
	if m := run("bytes"); fmt.Sprint(m["input_lens"]) != fmt.Sprint(float["input_lens"]) || m["total_input_tokens"] != float["total_input_tokens"] {
		t.Errorf("bytes: input lens %v (total %v), want the server's count as in the JSON answers: %v (total %v)",
			m["input_lens"], m["total_input_tokens"], float["input_lens"], float["total_input_tokens"])
	}
	// bytes_only: the dataset's own lengths, which leave out the special
	// tokens the server counts.
	tok, err := tokenizer.Load(tinyTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	want := 16 - tok.NumSpecialTokensToAdd()
	m := run("bytes_only")
	for i, n := range m["input_lens"].([]any) {
		if n != float64(want) {
			t.Errorf("bytes_only: request %d input len %v, want the dataset's %d", i, n, want)
		}
	}
	if tok.NumSpecialTokensToAdd() == 0 {
		t.Log("the tokenizer adds no special tokens, so bytes_only's lengths match the server's")
	}
}

// streamServer answers the i-th completions request (from 0) with a 200
// SSE stream: what events writes, then [DONE].
func streamServer(t *testing.T, events func(i int64, w io.Writer)) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1) - 1
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		events(i, w)
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// runAgainstServer runs a benchmark with args against the server at url,
// with the tiny tokenizer.
func runAgainstServer(t *testing.T, url string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	t.Setenv("HF_HUB_OFFLINE", "1")
	c, err := benchtest.ParseArgs(append([]string{"--base-url", url, "--tokenizer", tinyTokenizer, "--disable-tqdm"}, args...), benchtest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err = Run(context.Background(), c, &out, &errOut)
	return out.String(), errOut.String(), err
}

// queueFullServer answers odd-numbered completions requests with a 200
// stream whose only event is llm-d-inference-sim's queue-full error, and
// the others with two tokens.
func queueFullServer(t *testing.T) *httptest.Server {
	return streamServer(t, func(i int64, w io.Writer) {
		if i%2 == 1 {
			fmt.Fprint(w, "data: {\"error\": {\"message\": \"the server is busy, queue is full\", \"type\": \"TooManyRequests\", \"param\": null, \"code\": 429}}\n\n")
			return
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\" a\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\" b\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":2}}\n\n")
	})
}

// TestRunServerErrorEvents: error events inside 200 streams fail their
// requests with Python's no-token text and an empty text, and the health
// output names the server's message with its count.
func TestRunServerErrorEvents(t *testing.T) {
	srv := queueFullServer(t)
	dir := t.TempDir()
	stdout, stderr, err := runAgainstServer(t, srv.URL, "--model", "m", "--dataset-name", "random", "--num-prompts", "6",
		"--random-input-len", "16", "--random-output-len", "2", "--max-concurrency", "1",
		"--save-result", "--save-detailed", "--result-dir", dir)
	if err != nil {
		t.Fatalf("Run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	m := savedResult(t, dir)
	errs, texts := m["errors"].([]any), m["generated_texts"].([]any)
	failed := 0
	for i, e := range errs {
		switch e {
		case "":
			if texts[i] != " a b" {
				t.Errorf("request %d succeeded with text %q", i, texts[i])
			}
		case metrics.NoTokenError:
			failed++
			if texts[i] != "" {
				t.Errorf("failed request %d has text %q", i, texts[i])
			}
		default:
			t.Errorf("request %d error %q, want Python's %q", i, e, metrics.NoTokenError)
		}
	}
	if failed == 0 || m["failed"] != float64(failed) {
		t.Fatalf("failed %v, counted %d: the server's error events failed nothing", m["failed"], failed)
	}
	want := fmt.Sprintf("stampede: the server sent %d error message(s) inside 200 streams: %d× %q\n",
		failed, failed, "the server is busy, queue is full")
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
}
