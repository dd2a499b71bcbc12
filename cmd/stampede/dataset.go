package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench"
	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/datasets"
)

const datasetUsage = `usage: stampede dataset [serve options] -o FILE.jsonl

Samples the requests a run with the same serve options would send (the same
seed, prompts and lengths) and writes them one JSON object a line
("-" for stdout): the custom dataset's "prompt" and "output_tokens", then
"prompt_len", "request_id" and, where a request has them, its other prompt
forms. It contacts a server only when --base-url, --host, --port or
--server-urls names one (the alignment of random prompts with its /tokenize
then runs); without one, give --model and a tokenizer (--tokenizer, or a
model id in the Hugging Face cache). Replay text prompts with
  stampede --dataset-name custom --dataset-path FILE.jsonl \
      --custom-output-len -1 --skip-chat-template --disable-shuffle
`

// sampleRequests samples a dataset; tests replace it.
var sampleRequests = bench.SampleRequests

// cutOutputFlag removes -o/--output and its value from args, in the forms
// "-o F", "-oF", "--output F" and "--output=F". A later one wins.
func cutOutputFlag(args []string) (rest []string, out string, given bool, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(rest, args[i:]...), out, given, nil
		case a == "-o" || a == "--output":
			if i+1 >= len(args) {
				return nil, "", false, fmt.Errorf("argument -o/--output: expected one argument")
			}
			out, given = args[i+1], true
			i++
		case strings.HasPrefix(a, "--output="):
			out, given = strings.TrimPrefix(a, "--output="), true
		case strings.HasPrefix(a, "-o") && !strings.HasPrefix(a, "--"):
			out, given = a[2:], true
		default:
			rest = append(rest, a)
		}
	}
	return rest, out, given, nil
}

// runDataset is the `stampede dataset` subcommand. It returns the exit
// code: 0 on success, 1 for errors raised after parsing, 2 for usage.
func runDataset(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		if a == "-h" || a == "--help" {
			fmt.Fprint(stdout, datasetUsage)
			return exitOK
		}
	}
	rest, out, given, err := cutOutputFlag(args)
	switch {
	case err != nil:
		return datasetUsageError(stderr, err.Error())
	case !given || out == "":
		return datasetUsageError(stderr, "the following arguments are required: -o/--output (a .jsonl file, or - for stdout)")
	}
	cfg, err := cli.Parse(rest, backend.Choices())
	if err == nil {
		err = cli.RefuseRustOptions(cfg, "dataset", false)
	}
	if err != nil {
		return datasetForm.failed(stderr, err)
	}
	writeWarnings(stderr, cfg)
	start := time.Now()
	// Python's lines go to stderr: stdout may be the file.
	reqs, err := sampleRequests(ctx, cfg, stderr, stderr)
	if err != nil {
		return datasetForm.failed(stderr, err)
	}
	sampled := time.Since(start)
	if err := writeDataset(out, stdout, reqs); err != nil {
		fmt.Fprintf(stderr, "stampede dataset: -o %s: %v\n", out, err)
		return exitError
	}
	text := 0
	for i := range reqs {
		text += len(reqs[i].Prompt)
		for _, p := range reqs[i].PromptList {
			text += len(p)
		}
	}
	fmt.Fprintf(stderr, "stampede dataset: %d requests (%d bytes of prompt text) sampled in %.3f s, written to %s\n",
		len(reqs), text, sampled.Seconds(), out)
	return exitOK
}

// datasetForm names stampede dataset in its errors.
var datasetForm = errorForm{name: "stampede dataset", usageError: datasetUsageError}

func datasetUsageError(w io.Writer, msg string) int {
	fmt.Fprintf(w, "stampede dataset: error: %s\n\n%s", msg, datasetUsage)
	return exitUsage
}

// writeDataset writes reqs to path ("-" is stdout) through a temporary
// file beside it, so a failed write leaves no half file under the name.
func writeDataset(path string, stdout io.Writer, reqs []datasets.Request) error {
	if path == "-" {
		return datasets.WriteJSONL(stdout, reqs)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := datasets.WriteJSONL(f, reqs); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
