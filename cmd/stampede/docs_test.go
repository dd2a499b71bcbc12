package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/datasets/tokenizer"
)

// repoRoot is the repository's top directory, where the docs' commands
// run.
var repoRoot = filepath.Join("..", "..")

// docCommands are the commands of a markdown file's sh blocks, each split
// into words, continuation lines joined, a trailing "&" and "# ..."
// comments dropped. The docs' commands quote nothing, so words are what
// the shell would pass.
func docCommands(t *testing.T, doc string) [][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, doc))
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	inBlock := false
	line := ""
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(l, "```sh"):
			inBlock = true
			continue
		case strings.HasPrefix(l, "```"):
			inBlock = false
			continue
		case !inBlock:
			continue
		}
		if before, _, ok := strings.Cut(l, " #"); ok {
			l = before
		}
		if joined, ok := strings.CutSuffix(strings.TrimSpace(l), "\\"); ok {
			line += joined + " "
			continue
		}
		words := strings.Fields(line + l)
		line = ""
		if n := len(words); n > 0 && words[n-1] == "&" {
			words = words[:n-1]
		}
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
	}
	return cmds
}

// docCommand is the first command of doc whose first words are prefix.
func docCommand(t *testing.T, doc string, prefix ...string) []string {
	t.Helper()
	for _, c := range docCommands(t, doc) {
		if len(c) >= len(prefix) && slices.Equal(c[:len(prefix)], prefix) {
			return c
		}
	}
	t.Fatalf("%s has no command starting %q", doc, strings.Join(prefix, " "))
	return nil
}

// flagValue is the value of --name in a command's words, "" without it.
func flagValue(words []string, name string) string {
	for i, w := range words {
		if w == "--"+name && i+1 < len(words) {
			return words[i+1]
		}
	}
	return ""
}

// withFlag is words with --name's value replaced by value.
func withFlag(words []string, name, value string) []string {
	out := slices.Clone(words)
	for i, w := range out {
		if w == "--"+name && i+1 < len(out) {
			out[i+1] = value
		}
	}
	return out
}

// TestDocsMockPair runs the pair of commands README.md and docs/mock.md
// show for a first benchmark against the mock: the mock serving the
// model's name with a tokenizer file, stampede naming the same model and
// file. The mock starts in-process with the command's model and
// tokenizer; stampede's command runs as written but for the mock's
// address and fewer prompts.
func TestDocsMockPair(t *testing.T) {
	for _, doc := range []string{"README.md", "docs/mock.md"} {
		t.Run(doc, func(t *testing.T) {
			mockCmd := docCommand(t, doc, "bin/mockllm")
			serveCmd := docCommand(t, doc, "bin/stampede", "serve")
			model, tokPath := flagValue(mockCmd, "model"), flagValue(mockCmd, "tokenizer")
			if model == "" || tokPath == "" {
				t.Fatalf("%s: the mock's command %q names no --model or no --tokenizer", doc, mockCmd)
			}
			if flagValue(serveCmd, "model") != model || flagValue(serveCmd, "tokenizer") != tokPath {
				t.Fatalf("%s: stampede's command %q does not name the mock's model %s and tokenizer %s", doc, serveCmd, model, tokPath)
			}
			path := filepath.Join(repoRoot, tokPath)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%s is not here (make tokenizers fetches it): %v", tokPath, err)
			}
			tok, err := tokenizer.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := mock.Start(mock.Config{Host: "127.0.0.1", Model: model, Tokenizer: tok, TTFT: time.Millisecond, ITL: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			args := withFlag(serveCmd[2:], "base-url", "http://"+srv.Addr())
			args = withFlag(args, "tokenizer", path)
			args = append(args, "--num-prompts", "8", "--max-concurrency", "8", "--disable-tqdm")
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
				t.Fatalf("%q: exit %d:\n%s", args, code, stderr.String())
			}
			if !strings.Contains(stdout.String(), "Successful requests:                     8 ") {
				t.Errorf("not every request succeeded:\n%s", stdout.String())
			}
			if strings.Contains(stdout.String(), "WARNING: tokenizer mismatch") {
				t.Errorf("the pair's tokenizers disagree:\n%s", stdout.String())
			}
		})
	}
}

// TestDocsMultiturnExample runs docs/multiturn.md's command against the
// mock serving its model, as written but for the mock's address and a
// temporary --result-dir: the input file it names ships in the
// repository, and every conversation runs.
func TestDocsMultiturnExample(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "1") // no hub here: the mock's /tokenize counts
	cmd := docCommand(t, "docs/multiturn.md", "stampede", "multiturn")
	model, input := flagValue(cmd, "model"), flagValue(cmd, "input-file")
	if model == "" || input == "" {
		t.Fatalf("the doc's command %q names no --model or no --input-file", cmd)
	}
	srv, err := mock.Start(mock.Config{Host: "127.0.0.1", Model: model, TTFT: time.Millisecond, ITL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	args := withFlag(cmd[1:], "base-url", "http://"+srv.Addr())
	args = withFlag(args, "input-file", filepath.Join(repoRoot, input))
	args = withFlag(args, "result-dir", dir)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
		t.Fatalf("%q: exit %d:\n%s", args, code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "Failed requests:                         0 ") {
		t.Errorf("requests failed:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "multiturn: 8 conversations") {
		t.Errorf("stderr does not report the file's 8 conversations:\n%s", stderr.String())
	}
	saved, _ := filepath.Glob(filepath.Join(dir, "multiturn-*.json"))
	if len(saved) != 1 {
		t.Errorf("--save-result wrote %q in --result-dir, want one multiturn-*.json", saved)
	}
}
