package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/internal/buildinfo"
)

// subcommand is one of the command's verbs, as `stampede help` lists it.
type subcommand struct {
	name, synopsis, what string
}

// subcommands are the verbs in the order a user meets them. serve is the
// default: `stampede [options]` is `stampede serve [options]`.
var subcommands = []subcommand{
	{"serve", "[options]", "one benchmark run, as `vllm bench serve` (the default)"},
	{"sweep", "[options] --sweep FLAG=V1,V2,...", "a run at every value of one or more flags, and a table"},
	{"slo", "[options] --goodput KEY:MS ...", "search the highest load that meets the objectives"},
	{"compare", "A.json B.json [...]", "compare result files, with a significance test"},
	{"rerun", "FILE [--base-url URL] [--yes]", "run a saved result's command line again and compare"},
	{"report", "RESULT.json... -o FILE.html", "write the HTML report of saved results"},
	{"merge", "PARTIAL...", "merge the partial results of a cluster's agents"},
	{"results", "extract [LOG|-] [-o DIR]", "recover the files a --results-to-log run printed"},
	{"multiturn", "--input-file FILE [serve options]", "drive multi-turn conversations against a chat endpoint"},
	{"dataset", "[serve options] -o FILE.jsonl", "write a run's requests as JSONL, sending nothing"},
	{"tokenize", "--tokenizer PATH [--decode]", "encode or decode text with a tokenizer file"},
	{"help", "", "list the subcommands with how each is called"},
	{"version", "", "print the build (also --version, -V)"},
}

// topUsage is the usage line of `stampede --help` and `stampede help`.
const topUsage = "usage: stampede [-h] [-V] [SUBCOMMAND] [OPTIONS]"

// subcommandsTitle heads the verb list.
const subcommandsTitle = "subcommands (stampede SUBCOMMAND --help for each)"

// topHelpNote introduces serve's options after the verb list of
// `stampede --help`.
const topHelpNote = "Without a subcommand, stampede runs serve. Serve's options follow, in " +
	"vllm bench serve's groups and then stampede's own; --help=KEYWORD shows one group " +
	"(\"--help=sampling parameters\") or the options whose names hold KEYWORD."

// writeTopHelp is `stampede --help`: the usage and the verbs first, a
// line each, then serve's options.
func writeTopHelp(w io.Writer) error {
	return cli.WriteCommandHelp(w, topUsage, subcommandsTitle, verbs(false), topHelpNote, backend.Choices())
}

// writeSubcommands prints the verb list alone with how each verb is
// called, for `stampede help`.
func writeSubcommands(w io.Writer) error {
	return cli.WriteVerbs(w, subcommandsTitle, verbs(true))
}

// verbs are the subcommands as help lists them: by name, or with their
// synopses.
func verbs(synopses bool) []cli.Verb {
	out := make([]cli.Verb, len(subcommands))
	for i, s := range subcommands {
		out[i] = cli.Verb{Usage: s.name, What: s.what}
		if synopses {
			out[i].Usage = strings.TrimSpace(s.name + " " + s.synopsis)
		}
	}
	return out
}

// writeVersion prints the version line.
func writeVersion(w io.Writer) {
	fmt.Fprintf(w, "stampede %s\n", buildinfo.Read())
}
