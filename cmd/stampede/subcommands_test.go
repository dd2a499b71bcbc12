package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The run-based subcommands refuse bad arguments with exit 2 and a
// message naming the flag, before any run starts.
func TestSubcommandUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"serve", "--num-runs", "0"}, "argument --num-runs: invalid value \"0\""},
		{[]string{"--num-runs"}, "argument --num-runs: expected one argument"},
		{[]string{"sweep", "--model", "m"}, "required: --sweep FLAG=V1,V2"},
		{[]string{"sweep", "--sweep", "max-concurrency"}, "expected FLAG=V1,V2"},
		{[]string{"sweep", "--sweep", "nope=1,2"}, "sweep point nope=1: unrecognized arguments: --nope 1"},
		{[]string{"sweep", "--sweep", "max-concurrency=1", "--sweep-cooldown-sec", "-1"}, "argument --sweep-cooldown-sec"},
		{[]string{"slo", "--model", "m"}, "--goodput KEY:VALUE"},
		{[]string{"slo", "--goodput", "ttft:100", "--slo-over", "num-prompts"}, "argument --slo-over: invalid choice"},
		{[]string{"slo", "--goodput", "ttft:100", "--slo-attainment", "99"}, "argument --slo-attainment"},
		{[]string{"compare", "a.json"}, "needs two or more result files"},
		{[]string{"sweep", "--sweep", "max-concurrency=1", "--dry-run"}, "--dry-run is an option of the Rust client's command line"},
		{[]string{"sweep", "--sweep", "max-concurrency=1", "--sweep-request-rate", "1,2"}, "stampede sweep does not take it"},
		{[]string{"slo", "--goodput", "ttft:100", "--reset-prefix-cache"}, "stampede slo does not take it"},
		{[]string{"multiturn", "--input-file", "x.json", "--max-model-len", "10"}, "stampede multiturn does not take it"},
		{[]string{"compare", "--alpha", "2", "a.json", "b.json"}, "--alpha 2"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tt.args, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tt.msg) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr.String(), tt.msg)
		}
	}
}

func TestSubcommandHelp(t *testing.T) {
	for _, sub := range []string{"sweep", "slo", "compare"} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{sub, "--help"}, &stdout, &stderr); code != 0 ||
			!strings.HasPrefix(stdout.String(), "usage: stampede "+sub) {
			t.Errorf("%s --help: exit %d, stdout %q", sub, code, stdout.String())
		}
	}
}

func TestCompareCommand(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	os.WriteFile(a, []byte(`{"request_throughput": 10.0, "latencies": [0.1, 0.2, 0.3]}`), 0o666)
	os.WriteFile(b, []byte(`{"request_throughput": 12.5, "latencies": [0.1, 0.2, 0.3]}`), 0o666)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"compare", a, b, "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"delta_pct": 25`) {
		t.Errorf("JSON lacks the +25%% change:\n%s", stdout.String())
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"compare", a, filepath.Join(dir, "missing.json")}, &stdout, &stderr); code != exitError {
		t.Errorf("missing file: exit %d, want 1", code)
	}
}

// TestHelpListsEverySubcommand checks `stampede help` and the top-level
// --help list every verb, and that each listed verb is one the command
// dispatches: its --help exits 0.
func TestHelpListsEverySubcommand(t *testing.T) {
	var list bytes.Buffer
	if code := run(context.Background(), []string{"help"}, &list, io.Discard); code != exitOK {
		t.Fatalf("help: exit %d", code)
	}
	var top bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, &top, io.Discard); code != exitOK {
		t.Fatalf("--help: exit %d", code)
	}
	var serve bytes.Buffer
	run(context.Background(), []string{"serve", "--help"}, &serve, io.Discard)
	if strings.Contains(serve.String(), "subcommands") {
		t.Error("serve --help lists the subcommands; it must stay the option help alone")
	}
	for _, s := range subcommands {
		line := "\n  " + s.name
		if !strings.Contains(list.String(), line) || !strings.Contains(top.String(), line) {
			t.Errorf("%s is missing from help (%q) or --help", s.name, list.String())
		}
		switch s.name {
		case "help", "version":
			continue
		case "tokenize", "report":
			// dispatched by main before the signal handling; their
			// --help is checked through their own entry points.
			continue
		}
		var out bytes.Buffer
		if code := run(context.Background(), []string{s.name, "--help"}, &out, io.Discard); code != exitOK {
			t.Errorf("%s --help: exit %d", s.name, code)
		}
	}
	for _, name := range []string{"tokenize", "report"} {
		var out bytes.Buffer
		code := runTokenize([]string{"--help"}, strings.NewReader(""), &out, io.Discard)
		if name == "report" {
			code = runReport([]string{"--help"}, &out, io.Discard)
		}
		if code != exitOK {
			t.Errorf("%s --help: exit %d", name, code)
		}
	}
}

// TestTopHelpOpensWithSubcommands: `stampede --help` shows how to call it
// and every subcommand, a line each, before serve's options, whose groups
// follow in Python's order as `stampede serve --help` lists them.
func TestTopHelpOpensWithSubcommands(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	var top, serve bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, &top, io.Discard); code != exitOK {
		t.Fatalf("--help: exit %d", code)
	}
	run(context.Background(), []string{"serve", "--help"}, &serve, io.Discard)
	head, options, ok := strings.Cut(top.String(), "\noptions:\n")
	if !ok {
		t.Fatalf("--help has no options:\n%s", top.String())
	}
	if !strings.HasPrefix(head, "usage: stampede [-h] [-V] [SUBCOMMAND] [OPTIONS]\n") {
		t.Errorf("--help does not open with its usage line:\n%s", head)
	}
	if lines := strings.Count(head, "\n"); lines > 30 {
		t.Errorf("%d lines come before the options; want the usage and the subcommands short:\n%s", lines, head)
	}
	for _, s := range subcommands {
		if !strings.Contains(head, "\n  "+s.name+" ") {
			t.Errorf("subcommand %s is not listed before the options:\n%s", s.name, head)
		}
	}
	if _, serveOptions, _ := strings.Cut(serve.String(), "\noptions:\n"); options != serveOptions {
		t.Error("--help's options differ from serve --help's")
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version", "-V"} {
		var out bytes.Buffer
		if code := run(context.Background(), []string{arg}, &out, io.Discard); code != exitOK ||
			!strings.HasPrefix(out.String(), "stampede ") || !strings.Contains(out.String(), runtime.Version()) {
			t.Errorf("%s: exit %d, %q", arg, code, out.String())
		}
	}
}

// An error a sweep or an SLO search ends with is prefixed with its own
// subcommand, not serve's, and exits 1.
func TestSubcommandErrorPrefix(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	serve := []string{"--model", "m", "--tokenizer", tinyTokenizer, "--base-url", "http://127.0.0.1:1", "--num-prompts", "1",
		"--save-result", "--result-dir", filepath.Join(file, "sub")}
	for _, args := range [][]string{
		append([]string{"sweep", "--sweep", "max-concurrency=1,2"}, serve...),
		append([]string{"slo", "--goodput", "ttft:100"}, serve...),
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), args, io.Discard, &stderr)
		want := "stampede " + args[0] + ": --result-dir " + filepath.Join(file, "sub")
		if code != exitError || !strings.Contains(stderr.String(), want) || strings.Contains(stderr.String(), "stampede serve:") {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", args[0], code, stderr.String(), want)
		}
	}
}
