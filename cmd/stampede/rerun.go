package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/stampede-bench/stampede/bench"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/bench/search"
	"github.com/stampede-bench/stampede/internal/py"
	"golang.org/x/sys/unix"
)

const rerunUsage = `usage: stampede rerun [--base-url URL] [--yes] [--vary KEY[,KEY]] [--json] FILE [-- SERVE OPTIONS]

Runs the run that saved the result FILE again, with the command line kept
in its sidecar's manifest (FILE without .json, then .stampede.json), against
--base-url when given (else the same server), and then compares FILE with
the new result as stampede compare does: the fingerprints' differences
first, then every metric with its verdict. The new result goes beside FILE
as FILE's name with .rerun.json; the original is never overwritten.

A sidecar is a file anyone may have edited, so before anything is sent the
rerun shows what it will run: the servers it sends to, the files it reads
(the dataset and the tokenizer, hashed with SHA-256 and checked against the
manifest's) and writes, and the options changed from the manifest's; then
it asks, on a terminal, or takes --yes. It writes only in FILE's directory
(a manifest's --save-partial or --report there becomes its .rerun copy; one
elsewhere is refused), sends only where the original run sent or where you
name (--base-url, or a URL after "--"; --yes does not cover another), and a
secret you give goes only to servers you name. Secrets the manifest
redacted (--cluster-token, credential headers, a URL's password) are given
again after "--", with any other serve option to change.

  --base-url URL   the server to run against (default: the original's)
  --yes            run without asking, as shown (needed when stdin is no
                   terminal), also when the data's hashes differ
  --vary KEY       a fingerprint key (or prefix) whose difference is the change
                   under test, for the comparison; repeat or join with commas
  --json           print the comparison as JSON instead of a table (the run's
                   own lines then go to stderr)
`

// runRerun is `stampede rerun`: the comparison's exit status once the run
// is done (0), 1 when FILE cannot be rerun, the rerun is refused or not
// confirmed, 2 on bad arguments; a run's own failure exits as serve's
// would. terminal is where the confirmation is read, nil when stdin is no
// terminal (then only --yes runs).
func runRerun(ctx context.Context, args []string, terminal io.Reader, stdout, stderr io.Writer) int {
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
	case *baseURL != "" && !validOrigin(*baseURL):
		return usageError("--base-url %q: want an http:// or https:// URL, such as http://127.0.0.1:8000", *baseURL)
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
	p, err := search.PlanRerun(manifest, file, search.RerunOptions{BaseURL: *baseURL, Extra: extra})
	if err != nil {
		var help *cli.HelpRequested
		if errors.As(err, &help) {
			return usageError("the manifest's command line asks for help")
		}
		if usage, ok := errors.AsType[*py.UsageError](err); ok {
			return usageError("%s", usage.Msg)
		}
		return failed(stderr, err)
	}
	cfg := p.Plan
	if err := cli.RefuseAgents(cfg, "stampede rerun"); err != nil {
		if usage, ok := errors.AsType[*py.UsageError](err); ok {
			return usageError("%s", usage.Msg)
		}
		return failed(stderr, err)
	}
	writeWarnings(stderr, cfg)
	p.Write(stderr)
	if secrets := search.Redacted(p.Argv); len(secrets) > 0 {
		fmt.Fprintf(stderr, "WARNING: the manifest redacted the secrets of %s: they go out as \"<redacted>\" "+
			"unless given again after \"--\"\n", strings.Join(secrets, ", "))
	}
	for _, d := range checkRerunData(cfg, manifest) {
		fmt.Fprintf(stderr, "stampede rerun: %s: the comparison would not be like for like\n", d)
	}
	if len(p.Refusals) > 0 {
		for _, r := range p.Refusals {
			fmt.Fprintf(stderr, "stampede rerun: refused: %s\n", r)
		}
		return exitError
	}
	switch {
	case *yes:
	case terminal == nil:
		return fail("not run: stdin is no terminal to ask on; give --yes to run what is shown above")
	case !confirmed(terminal, stderr):
		return fail("not run")
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

// validOrigin reports whether u is an http(s) URL with a host.
func validOrigin(u string) bool {
	_, ok := plan.Origin(u)
	return ok
}

// confirmed asks whether to run what the plan shows and reads the answer
// from terminal: yes only for "y" or "yes".
func confirmed(terminal io.Reader, stderr io.Writer) bool {
	fmt.Fprint(stderr, "Run it? [y/N] ")
	answer, _ := bufio.NewReader(terminal).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true
	}
	return false
}

// terminalStdin is os.Stdin when it is a terminal, for rerun's question;
// nil otherwise (a pipe, a file, /dev/null).
func terminalStdin() io.Reader {
	if _, err := unix.IoctlGetTermios(int(os.Stdin.Fd()), unix.TCGETS); err != nil {
		return nil
	}
	return os.Stdin
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
		d := search.DataMismatch{What: what, Original: original}
		now, err := hash()
		if err == nil && now == original {
			return
		}
		d.Now = now
		if err != nil {
			d.Now, d.Problem = "", err.Error()
		}
		bad = append(bad, d)
	}
	if m.DatasetSHA256 == "" && cfg.DatasetPath != "" {
		// The original hashed every dataset file it read: a file to
		// read without its hash was not the original's.
		if now, err := endpoint.FileSHA256(cfg.DatasetPath); err == nil {
			bad = append(bad, search.DataMismatch{What: "dataset " + cfg.DatasetPath, Now: now})
		}
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
