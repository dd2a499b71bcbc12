package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stampede-bench/stampede/bench"
	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/plan"
)

// TestDatasetRoundTrip: the file `stampede dataset` writes for a random
// dataset replays through --dataset-name custom as the same prompts,
// output lengths, ids and order a run samples.
func TestDatasetRoundTrip(t *testing.T) {
	out := filepath.Join(t.TempDir(), "prompts.jsonl")
	common := []string{"--model", "m", "--tokenizer", tinyTokenizer, "--request-id-prefix", "q-", "--num-prompts", "40"}
	sample := append([]string{"--dataset-name", "random", "--random-input-len", "25", "--random-output-len", "9",
		"--random-range-ratio", "0.4", "--random-prefix-len", "3", "--seed", "11"}, common...)
	var stdout, stderr bytes.Buffer
	if code := runDataset(context.Background(), append(sample, "-o", out), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "40 requests (") {
		t.Errorf("stderr %q does not report the sampling", stderr.String())
	}
	// Sampling sends nothing, so the warning about the temperature sent
	// has no place here.
	if strings.Contains(stdout.String()+stderr.String(), "temperature") {
		t.Errorf("stampede dataset warns of the temperature:\n%s", stderr.String())
	}

	cfg, err := cli.Parse(sample, backend.Choices())
	if err != nil {
		t.Fatal(err)
	}
	want, err := bench.SampleRequests(context.Background(), cfg, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err = cli.Parse(append([]string{"--dataset-name", "custom", "--dataset-path", out, "--custom-output-len", "-1",
		"--skip-chat-template", "--disable-shuffle"}, common...), backend.Choices())
	if err != nil {
		t.Fatal(err)
	}
	got, err := bench.SampleRequests(context.Background(), cfg, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("replay has %d requests, want %d", len(got), len(want))
	}
	lens := map[int]bool{}
	for i := range want {
		g, w := got[i], want[i]
		if g.Prompt != w.Prompt || g.ExpectedOutputLen != w.ExpectedOutputLen || g.RequestID != w.RequestID {
			t.Errorf("request %d: replay %q/%d/%s, sampled %q/%d/%s", i, g.Prompt, g.ExpectedOutputLen, g.RequestID,
				w.Prompt, w.ExpectedOutputLen, w.RequestID)
		}
		lens[w.ExpectedOutputLen] = true
	}
	if len(lens) < 2 {
		t.Errorf("output lengths %v do not vary: the range ratio was not applied", lens)
	}
	data, _ := os.ReadFile(out)
	if first := strings.SplitN(string(data), "\n", 2)[0]; !strings.Contains(first, `"prompt_len":`) || !strings.Contains(first, `"request_id":"q-0"`) {
		t.Errorf("first line %s lacks prompt_len or request_id", first)
	}
}

func TestDatasetUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--model", "m", "--dataset-name", "random"}, exitUsage, "required: -o/--output"},
		{[]string{"--model", "m", "-o"}, exitUsage, "-o/--output: expected one argument"},
		{[]string{"--model", "m", "--no-such-flag", "-o", "x.jsonl"}, exitUsage, "unrecognized arguments"},
		{[]string{"--help"}, exitOK, ""},
	} {
		var stdout, stderr bytes.Buffer
		code := runDataset(context.Background(), tt.args, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d with %q", tt.args, code, stderr.String(), tt.code, tt.want)
		}
	}
}

func TestCutOutputFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		rest string
		out  string
	}{
		{[]string{"-o", "a", "--seed", "1"}, "--seed 1", "a"},
		{[]string{"-ob", "--output-len", "3"}, "--output-len 3", "b"},
		{[]string{"--output=c", "--output", "d"}, "", "d"},
		{[]string{"--", "-o", "e"}, "-- -o e", ""},
	} {
		rest, out, _, err := cutOutputFlag(tt.args)
		if err != nil || strings.Join(rest, " ") != tt.rest || out != tt.out {
			t.Errorf("%q: rest %q out %q err %v; want %q, %q", tt.args, rest, out, err, tt.rest, tt.out)
		}
	}
}

// TestSamplingContactsNoServer: --dry-run and stampede dataset send
// nothing to a server the command line did not name, even one listening
// where serve's defaults point: without --model or a tokenizer they stop,
// naming what to pass. A named server (--host, --port) is asked, for the
// alignment of random prompts.
func TestSamplingContactsNoServer(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "1")
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		switch r.URL.Path {
		case "/v1/models":
			io.WriteString(w, `{"data": [{"id": "m", "root": "m"}]}`)
		case "/tokenize":
			io.WriteString(w, `{"tokens": [1, 2, 3, 4, 5, 6, 7, 8]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	random := []string{"--dataset-name", "random", "--random-input-len", "8", "--random-output-len", "2", "--num-prompts", "3"}

	// The server stands where the defaults point: parsed with --base-url,
	// then the option forgotten, as if the defaults had named it.
	atDefaults := func(t *testing.T, args ...string) *plan.Plan {
		t.Helper()
		cfg, err := cli.Parse(append(append([]string{"--base-url", srv.URL}, random...), args...), backend.Choices())
		if err != nil {
			t.Fatal(err)
		}
		delete(cfg.GivenOptions, "base-url")
		return cfg
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string // the first line of stderr's error
	}{
		{"everything given", []string{"--model", "m", "--tokenizer", tinyTokenizer}, exitOK, ""},
		{"no tokenizer", []string{"--model", "m"}, exitError,
			"OSError: no tokenizer for m: pass --tokenizer PATH (the model's tokenizer.json, a directory holding one, or a Hugging Face id in the local cache)"},
		{"no model", []string{"--tokenizer", tinyTokenizer}, exitUsage,
			"stampede serve: error: --model is required here: --dry-run contacts no server unless --base-url, --host, --port or --server-urls names one"},
	} {
		t.Run("dry-run: "+tt.name, func(t *testing.T) {
			calls.Store(0)
			cfg := atDefaults(t, append(tt.args, "--dry-run")...)
			var stdout, stderr bytes.Buffer
			code := runDryRun(context.Background(), cfg, &stdout, &stderr)
			if code != tt.code || calls.Load() != 0 {
				t.Errorf("exit %d after %d requests to the server, want exit %d and none (stderr %s)", code, calls.Load(), tt.code, stderr.String())
			}
			if got := firstErrorLine(stderr.String()); !strings.HasPrefix(got, tt.want) {
				t.Errorf("error line\n%s\nwant it to start\n%s", got, tt.want)
			}
		})
	}

	// stampede dataset, at the real defaults: it stops before asking
	// anyone.
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--model", "m"}, exitError, "OSError: no tokenizer for m: pass --tokenizer PATH"},
		{[]string{"--tokenizer", tinyTokenizer}, exitUsage,
			"stampede dataset: error: --model is required here: stampede dataset contacts no server unless"},
	} {
		var stdout, stderr bytes.Buffer
		code := runDataset(context.Background(), append(append(tt.args, random...), "-o", "-"), &stdout, &stderr)
		if code != tt.code || !strings.Contains(stderr.String(), "\n"+tt.want) && !strings.HasPrefix(stderr.String(), tt.want) {
			t.Errorf("dataset %q: exit %d, stderr\n%s\nwant exit %d and a line starting %q", tt.args, code, stderr.String(), tt.code, tt.want)
		}
	}

	// Named by --host and --port, the server is asked: the alignment's
	// first /tokenize.
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	calls.Store(0)
	var stderr bytes.Buffer
	out := filepath.Join(t.TempDir(), "d.jsonl")
	args := append([]string{"--host", u.Hostname(), "--port", u.Port(), "--model", "m", "--tokenizer", tinyTokenizer, "-o", out}, random...)
	if code := runDataset(context.Background(), args, io.Discard, &stderr); code != exitOK || calls.Load() == 0 {
		t.Errorf("--host/--port: exit %d after %d requests; want 0 and the alignment asked (stderr %s)", code, calls.Load(), stderr.String())
	}
}
