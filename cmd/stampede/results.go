package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/stampede-bench/stampede/bench/cluster"
)

const resultsUsage = `usage: stampede results extract [-o DIR] [LOG|-]

Recovers, byte for byte, the files a run started with --results-to-log
printed after its block: the result JSON, its sidecar, the report, the
partial. LOG is the run's output as a file, or - (the default) for stdin,
such as agent 0's log of a Kubernetes Job:

  kubectl logs job/stampede | stampede results extract -o results/

Prefixes on each line (kubectl logs --prefix, --timestamps) and any other
lines between, of any length, are passed over; a log cut short before a
bundle's end marker is an error, and nothing of that bundle is written.
Each file is written as it is decoded, never held whole.

  -o DIR  write the files there (default: the current directory)
`

// runResults is `stampede results`: 0 when every file was written, 1 when
// the log holds no complete bundle or a file cannot be written, 2 on bad
// arguments.
func runResults(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) == 0 {
			fmt.Fprintf(stderr, "stampede results: give a verb: extract\n\n%s", resultsUsage)
			return exitUsage
		}
		fmt.Fprint(stdout, resultsUsage)
		return exitOK
	}
	if args[0] != "extract" {
		fmt.Fprintf(stderr, "stampede results: unknown verb %q: want extract\n\n%s", args[0], resultsUsage)
		return exitUsage
	}
	fs := flag.NewFlagSet("stampede results extract", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("o", ".", "")
	rest, err := parseInterleaved(fs, args[1:])
	switch {
	case err == flag.ErrHelp:
		fmt.Fprint(stdout, resultsUsage)
		return exitOK
	case err != nil:
		fmt.Fprintf(stderr, "stampede results extract: %v\n\n%s", err, resultsUsage)
		return exitUsage
	case len(rest) > 1:
		fmt.Fprintf(stderr, "stampede results extract: give one log (or - for stdin), not %d\n\n%s", len(rest), resultsUsage)
		return exitUsage
	}
	in, name := stdin, "stdin"
	if len(rest) == 1 && rest[0] != "-" {
		f, err := os.Open(rest[0])
		if err != nil {
			fmt.Fprintf(stderr, "stampede results extract: %v\n", err)
			return exitError
		}
		defer f.Close()
		in, name = f, rest[0]
	}
	bundles, err := cluster.ReadBundles(in)
	if err != nil {
		if !errors.Is(err, cluster.ErrNoBundle) {
			err = fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(stderr, "stampede results extract: %v\n", err)
		return exitError
	}
	paths, err := cluster.WriteBundleFiles(*dir, bundles)
	for _, p := range paths {
		fmt.Fprintln(stdout, p)
	}
	if err != nil {
		fmt.Fprintf(stderr, "stampede results extract: %v\n", err)
		return exitError
	}
	if len(paths) == 0 {
		fmt.Fprintf(stderr, "stampede results extract: the run saved no file (no --save-result, --save-partial or --report)\n")
	}
	return exitOK
}
