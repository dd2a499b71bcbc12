package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/stampede-bench/stampede/bench"
	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/bench/search"
	"github.com/stampede-bench/stampede/internal/py"
)

const rerunUsage = `usage: stampede rerun [--base-url URL] [--yes] [--vary KEY[,KEY]] [--json] FILE [-- SERVE OPTIONS]

Runs the run that saved the result FILE again, with the command line kept
in its sidecar's manifest (FILE without .json, then .stampede.json), against
--base-url when given (else the same server), and then compares FILE with
the new result as stampede compare does: the fingerprints' differences
first, then every metric with its verdict. The new result goes beside FILE
as FILE's name with .rerun.json; the original is never overwritten.

Before anything is sent, the dataset file and the tokenizer file are hashed
(SHA-256) and checked against the manifest's: a rerun whose data differ says
which and stops, unless --yes. Secrets the manifest redacted (--cluster-token,
credential headers, a URL's password) are given again after "--", with any
other serve option to change.

  --base-url URL   the server to run against (default: the original's)
  --yes            go on when the dataset's or the tokenizer's hash differs
  --vary KEY       a fingerprint key (or prefix) whose difference is the change
                   under test, for the comparison; repeat or join with commas
  --json           print the comparison as JSON instead of a table (the run's
                   own lines then go to stderr)
`

// runRerun is `stampede rerun`: the comparison's exit status once the run
// is done (0), 1 when FILE cannot be rerun or the data differ, 2 on bad
// arguments; a run's own failure exits as serve's would.
func runRerun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var extra []string
	for i, a := range args {
		if a == "--" {
			args, extra = args[:i], args[i+1:]
			break
		}
	}
	fs := flag.NewFlagSet("stampede rerun", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	baseURL := fs.String("base-url", "", "")
	yes := fs.Bool("yes", false, "")
	asJSON := fs.Bool("json", false, "")
	var opts search.CompareOptions
	addVaryFlag(fs, &opts)
	usageError := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "stampede rerun: "+format+"\n\n%s", append(a, rerunUsage)...)
		return exitUsage
	}
	files, err := parseInterleaved(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, rerunUsage)
		return exitOK
	case err != nil:
		return usageError("%v", err)
	case len(files) != 1:
		return usageError("needs one result file, got %d", len(files))
	}
	file := files[0]
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "stampede rerun: "+format+"\n", a...)
		return exitError
	}
	if _, err := os.Stat(file); err != nil {
		return fail("%v", err)
	}
	_, manifest, exists, err := report.ReadSidecarHead(file)
	switch {
	case err != nil:
		return fail("%v", err)
	case !exists:
		return fail("%s has no sidecar %s: only results stampede saved can be rerun (vLLM's own tool keeps no command line)",
			file, report.SidecarPath(file))
	case manifest == nil:
		return fail("%s holds no manifest: it was written by a stampede older than `stampede rerun`", report.SidecarPath(file))
	}
	argv := search.RerunArgv(manifest, file, *baseURL, extra)
	fmt.Fprintf(stderr, "stampede rerun: stampede serve %s\n", strings.Join(argv, " "))
	if secrets := search.Redacted(argv); len(secrets) > 0 {
		fmt.Fprintf(stderr, "WARNING: the manifest redacted the secrets of %s: they go out as \"<redacted>\" "+
			"unless given again after \"--\"\n", strings.Join(secrets, ", "))
	}
	cfg, err := cli.Parse(argv, backend.Choices())
	if err != nil {
		var help *cli.HelpRequested
		if errors.As(err, &help) {
			return usageError("the manifest's command line asks for help")
		}
		return failed(stderr, err)
	}
	if err := cli.RefuseAgents(cfg, "stampede rerun"); err != nil {
		if usage, ok := errors.AsType[*py.UsageError](err); ok {
			return usageError("%s", usage.Msg)
		}
		return failed(stderr, err)
	}
	writeWarnings(stderr, cfg)
	if bad := checkRerunData(cfg, manifest); len(bad) > 0 {
		for _, d := range bad {
			fmt.Fprintf(stderr, "stampede rerun: %s\n", d)
		}
		if !*yes {
			return fail("the data differ from the original run's, so the comparison would not be like for like; " +
				"give --yes to rerun all the same")
		}
		fmt.Fprintln(stderr, "stampede rerun: going on (--yes)")
	}
	// With --json, stdout is the comparison's JSON alone; the run's lines
	// go to stderr.
	runOut := stdout
	if *asJSON {
		runOut = stderr
	}
	written, err := search.Rerun(ctx, bench.RunOnce, cfg, runOut, stderr)
	if code := exitCode(ctx, err, stderr); code != exitOK {
		return code
	}
	if len(written) == 0 {
		return fail("the rerun saved no result to compare")
	}
	fmt.Fprintln(runOut)
	c, err := compareFiles([]string{file, search.RerunSide(written)}, opts)
	if err != nil {
		return fail("%v", err)
	}
	return writeComparison(c, *asJSON, stdout, stderr)
}

// checkRerunData hashes the dataset and the tokenizer cfg will read and
// lists those whose hash is not the manifest's (a hash the original run
// did not record is not checked).
func checkRerunData(cfg *plan.Plan, m *report.Manifest) []search.DataMismatch {
	var bad []search.DataMismatch
	check := func(what, original string, hash func() (string, error)) {
		if original == "" {
			return
		}
		now, err := hash()
		if err == nil && now == original {
			return
		}
		d := search.DataMismatch{What: what, Original: original, Now: now}
		if err != nil {
			d.Now, d.Problem = "", err.Error()
		}
		bad = append(bad, d)
	}
	check("dataset "+cfg.DatasetPath, m.DatasetSHA256, func() (string, error) {
		if cfg.DatasetPath == "" {
			return "", fmt.Errorf("no --dataset-path")
		}
		return endpoint.FileSHA256(cfg.DatasetPath)
	})
	name := cfg.Tokenizer
	if name == "" {
		name = m.Tokenizer
	}
	check("tokenizer "+name, m.TokenizerSHA256, func() (string, error) {
		if cfg.SkipTokenizerInit {
			return "", fmt.Errorf("--skip-tokenizer-init")
		}
		return endpoint.TokenizerSHA256(cfg.TokenizerMode, name)
	})
	return bad
}
