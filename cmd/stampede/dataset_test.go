package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench"
	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
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
