package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/stampede-bench/stampede/internal/buildinfo"
)

// subcommand is one of the command's verbs, as `stampede help` lists it.
type subcommand struct {
	name, synopsis, what string
}

// subcommands are the verbs in the order a user meets them. serve is the
// default: `stampede [options]` is `stampede serve [options]`.
var subcommands = []subcommand{
	{"serve", "[options]", "run one benchmark, as `vllm bench serve` (the default verb)"},
	{"sweep", "[options] --sweep FLAG=V1,V2,...", "run the benchmark at every value of one or more flags, with a summary table"},
	{"slo", "[options] --goodput KEY:MS ...", "search the highest load that still meets the objectives"},
	{"compare", "A.json B.json [...]", "compare result files row by row, with a significance test"},
	{"rerun", "FILE [--base-url URL] [--yes]", "run a saved result's command line again and compare the two"},
	{"report", "RESULT.json... -o FILE.html", "write the HTML report of saved results"},
	{"merge", "PARTIAL...", "merge the partial results of a cluster's agents into one result"},
	{"results", "extract [LOG|-] [-o DIR]", "recover the files a --results-to-log run printed, from its log (kubectl logs)"},
	{"multiturn", "--input-file FILE [serve options]", "drive multi-turn conversations against a chat endpoint"},
	{"dataset", "[serve options]", "build a run's requests and write them as JSONL, sending nothing"},
	{"tokenize", "--tokenizer PATH [--decode]", "encode or decode text with a tokenizer file"},
	{"help", "", "show this list"},
	{"version", "", "print the build (also --version)"},
}

// writeSubcommands prints the verb list: after `stampede --help`'s option
// help, and alone for `stampede help`.
func writeSubcommands(w io.Writer) {
	fmt.Fprintln(w, "subcommands (stampede SUBCOMMAND --help for each):")
	width := 0
	for _, s := range subcommands {
		width = max(width, len(s.name)+1+len(s.synopsis))
	}
	for _, s := range subcommands {
		usage := strings.TrimSpace(s.name + " " + s.synopsis)
		fmt.Fprintf(w, "  %-*s  %s\n", width, usage, s.what)
	}
}

// writeVersion prints the version line.
func writeVersion(w io.Writer) {
	fmt.Fprintf(w, "stampede %s\n", buildinfo.Read())
}
