package main

import (
	"context"
	"errors"
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

// streamRequests samples a dataset a batch at a time; tests replace it.
var streamRequests = bench.StreamRequests

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
	var count, text int
	// Python's lines go to stderr: stdout may be the file.
	err = writeDataset(out, stdout, func(jw *datasets.JSONLWriter) error {
		return streamRequests(ctx, cfg, stderr, stderr, func(batch []datasets.Request) error {
			count += len(batch)
			text += promptBytes(batch)
			return jw.Write(batch)
		})
	})
	var werr *writeError
	switch {
	case errors.As(err, &werr):
		fmt.Fprintf(stderr, "stampede dataset: -o %s: %v\n", out, werr.err)
		return exitError
	case err != nil:
		return datasetForm.failed(stderr, err)
	}
	fmt.Fprintf(stderr, "stampede dataset: %d requests (%d bytes of prompt text) sampled in %.3f s, written to %s\n",
		count, text, time.Since(start).Seconds(), out)
	return exitOK
}

// datasetForm names stampede dataset in its errors.
var datasetForm = errorForm{name: "stampede dataset", usageError: datasetUsageError}

func datasetUsageError(w io.Writer, msg string) int {
	fmt.Fprintf(w, "stampede dataset: error: %s\n\n%s", msg, datasetUsage)
	return exitUsage
}

// promptBytes is the bytes of the batch's text prompts.
func promptBytes(batch []datasets.Request) int {
	text := 0
	for i := range batch {
		text += len(batch[i].Prompt)
		for _, p := range batch[i].PromptList {
			text += len(p)
		}
	}
	return text
}

// writeError is a failure to write the output, not the sampling's.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

// writeDataset writes to path ("-" is stdout) what fill writes as it
// samples, through a temporary file beside it, so a failed write or
// sampling leaves no half file under the name. A failed write comes back
// as a *writeError.
func writeDataset(path string, stdout io.Writer, fill func(*datasets.JSONLWriter) error) error {
	if path == "-" {
		return writeJSONL(stdout, fill)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return &writeError{err}
	}
	defer os.Remove(f.Name())
	if err := writeJSONL(f, fill); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return &writeError{err}
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return &writeError{err}
	}
	return nil
}

// writeJSONL runs fill on a JSONL writer to w, telling its write errors
// from the sampling's.
func writeJSONL(w io.Writer, fill func(*datasets.JSONLWriter) error) error {
	ew := &errWriter{w: w}
	jw := datasets.NewJSONLWriter(ew)
	err := fill(jw)
	if err == nil {
		err = jw.Flush()
	}
	if ew.err != nil {
		return &writeError{ew.err}
	}
	return err
}

// errWriter keeps its writer's first error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}
