package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/stampede-bench/stampede/bench/search"
)

const compareUsage = `usage: stampede compare [--alpha P] [--min-effect F] [--vary KEY[,KEY]] [--json] A.json B.json [C.json ...]

Compares result JSON files (vllm bench serve's or stampede's) metric by
metric against the first. An argument may join several files with commas
(repeated runs of one setting). Each row is judged on its own statistic
(the p99 row on the p99): a confidence interval of its change B − A over
|A|, by a bootstrap that resamples each side's runs and, within them, its
requests, when both files hold per-request samples (--save-detailed; E2EL
always), else by Welch's interval over the runs when both sides have two or
more. The verdict is better or worse (in the direction the figure improves)
when the interval excludes 0 and the change is at least --min-effect, no
change when the interval lies within ±--min-effect, and can't tell
otherwise, with the runs a side would need where the runs' spread is known.

Before any number it checks that the runs are like for like: it prints
every fact that differs between the fingerprints in the files' sidecars
(server.version, server.model.max_model_len, server.info.* from the
server's *_info gauges, client.stampede, client.kernel, client.cpu_model,
client.dataset_sha256, client.tokenizer_sha256, ...), and says "unlike for
like" when one differs that --vary does not name. Files without a sidecar
(vLLM's own tool) have no fingerprint, and it says so.

  --alpha P        1 - the intervals' confidence (default 0.05: 95% intervals)
  --min-effect F   smallest relative change called a difference (default 0.02)
  --vary KEY       a fingerprint key (or prefix, such as server.info) whose
                   difference is the change under test; repeat or join with commas
  --json           print the comparison as JSON instead of a table
`

// parseInterleaved parses fs's flags wherever they stand among the
// positional arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// runCompare is `stampede compare`: 0 when compared, 1 when a file cannot
// be read, 2 on bad arguments.
func runCompare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stampede compare", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var opts search.CompareOptions
	fs.Float64Var(&opts.Alpha, "alpha", 0.05, "")
	fs.Float64Var(&opts.MinEffect, "min-effect", 0.02, "")
	asJSON := fs.Bool("json", false, "")
	addVaryFlag(fs, &opts)
	usageError := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "stampede compare: "+format+"\n\n%s", append(a, compareUsage)...)
		return exitUsage
	}
	files, err := parseInterleaved(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, compareUsage)
		return exitOK
	case err != nil:
		return usageError("%v", err)
	case len(files) < 2:
		return usageError("needs two or more result files, got %d", len(files))
	case !(opts.Alpha > 0 && opts.Alpha < 1):
		return usageError("--alpha %g: a significance level is between 0 and 1 (such as 0.05)", opts.Alpha)
	case !(opts.MinEffect >= 0):
		return usageError("--min-effect %g: a relative change is 0 or more (such as 0.02 for 2%%)", opts.MinEffect)
	}
	if opts.MinEffect == 0 {
		opts.MinEffect = 1e-300 // 0 means the default to search.Compare
	}
	c, err := compareFiles(files, opts)
	if err != nil {
		fmt.Fprintf(stderr, "stampede compare: %v\n", err)
		return exitError
	}
	return writeComparison(c, *asJSON, stdout, stderr)
}

// addVaryFlag adds compare's --vary to fs: repeatable, each value a
// comma-separated list of fingerprint keys or prefixes.
func addVaryFlag(fs *flag.FlagSet, opts *search.CompareOptions) {
	fs.Func("vary", "", func(v string) error {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				opts.Vary = append(opts.Vary, k)
			}
		}
		return nil
	})
}

// compareFiles reads each argument's result files and compares them.
func compareFiles(files []string, opts search.CompareOptions) (*search.Comparison, error) {
	var sides []*search.CompareSide
	for _, f := range files {
		s, err := search.LoadCompareSide(f)
		if err != nil {
			return nil, err
		}
		sides = append(sides, s)
	}
	return search.Compare(sides, opts), nil
}

// writeComparison prints c as a table, or as JSON.
func writeComparison(c *search.Comparison, asJSON bool, stdout, stderr io.Writer) int {
	if asJSON {
		b, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "stampede compare: %v\n", err)
			return exitError
		}
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	if err := c.Write(stdout); err != nil {
		return exitError
	}
	return exitOK
}
