// Command stampede is a drop-in for `vllm bench serve`: the same flags,
// console block and result JSON, built to drive 10,000+ concurrent token
// streams from one host.
//
//	stampede serve [options]
//	stampede [options]
//	stampede --help | help | --version | -V
//	stampede compare A.json B.json [...]
//	stampede rerun FILE [--base-url URL] [--yes]
//	stampede sweep [options] --sweep FLAG=V1,V2,... [--sweep-cooldown-sec S] [--resume] [--num-runs N]
//	stampede slo [options] --goodput KEY:MS ... [--slo-attainment F] [--slo-over max-concurrency|request-rate]
//	stampede tokenize --tokenizer PATH [--add-special-tokens | --decode [--skip-special-tokens]]
//	stampede report RESULT.json... -o FILE.html
//	stampede multiturn --input-file FILE [--num-clients N] [--max-active-conversations K] [serve options]
//	stampede merge PARTIAL...
//	stampede results extract [LOG|-] [-o DIR]
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/stampede-bench/stampede/bench"
	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/cluster"
	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/search"
	"github.com/stampede-bench/stampede/internal/py"
	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "tokenize" {
		os.Exit(runTokenize(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "report" {
		os.Exit(runReport(os.Args[2:], os.Stdout, os.Stderr))
	}
	ctx, stop := interruptContext(context.Background(), os.Stderr, os.Exit, stopSignals...)
	var code int
	if len(os.Args) > 1 && os.Args[1] == "dataset" {
		code = runDataset(ctx, os.Args[2:], os.Stdout, os.Stderr)
	} else {
		code = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	stop()
	os.Exit(code)
}

// interrupted is the cancellation cause of a run stopped by a signal.
type interrupted struct{ sig syscall.Signal }

func (e interrupted) Error() string { return "interrupted by " + e.sig.String() }

// StopSignal names the signal as the sidecar's "interrupted" records it
// ("SIGINT").
func (e interrupted) StopSignal() string { return unix.SignalName(e.sig) }

// stopSignals are the signals that stop a run the way the first Ctrl-C
// does: an interrupt, a terminate (a Kubernetes eviction, a Job's
// deadline, kill) and a hang-up (a dropped SSH session). Each of them
// must leave what was measured printed and saved.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// interruptContext turns signals into the three ways of stopping a run
// (docs/cli.md "Stopping a run"); any of the given signals counts, in any mix.
// The first cancels the returned context, with an interrupted cause naming
// it: the run stops sending, gives the requests in flight the grace
// period, then prints and saves what it measured. The second closes the
// context's hard stop (endpoint.WithHardStop): the run stops waiting, fails
// what is still in flight as "cancelled", and still prints and saves. A
// third calls exit with 128 + its number at once, writing nothing more.
func interruptContext(parent context.Context, stderr io.Writer, exit func(code int), signals ...os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	hard := make(chan struct{})
	ch := make(chan os.Signal, 3)
	signal.Notify(ch, signals...)
	done := make(chan struct{})
	go func() {
		for n := 1; ; n++ {
			var s os.Signal
			select {
			case s = <-ch:
			case <-done:
				return
			}
			sig, _ := s.(syscall.Signal)
			switch n {
			case 1:
				fmt.Fprintf(stderr, "\n%s: %s: no more requests are sent; those in flight get the grace period "+
					"(--cancel-grace-sec) to finish. %s\n", cli.ProgramName, stopCause(sig), againHint(sig))
				cancel(interrupted{sig})
			case 2:
				fmt.Fprintf(stderr, "\n%s: %s again: stopping at once; requests in flight are failed \"cancelled\" "+
					"and the results so far are still reported. Interrupt a third time to quit without results.\n",
					cli.ProgramName, stopCause(sig))
				close(hard)
			default:
				exit(exitSignal + int(sig))
				return
			}
		}
	}()
	return endpoint.WithHardStop(ctx, hard), func() {
		signal.Stop(ch)
		close(done)
		cancel(context.Canceled)
	}
}

// againHint says how to stop at once after the first signal.
func againHint(sig syscall.Signal) string {
	if sig == syscall.SIGINT {
		return "Interrupt again to stop at once."
	}
	return "A second signal (Ctrl-C, SIGTERM or SIGHUP) stops at once."
}

// stopCause is how the stop lines name a signal: "interrupted" for
// Ctrl-C, as before, and the signal's name for the others.
func stopCause(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "interrupted"
	case syscall.SIGTERM:
		return "terminated (SIGTERM)"
	case syscall.SIGHUP:
		return "hung up (SIGHUP)"
	}
	return "stopped by " + sig.String()
}

// Exit codes, as vllm bench serve's: argparse errors exit 2, exceptions
// raised after parsing exit 1.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	// exitRequestsFailed is stampede's own (--fail-on-error): the run
	// finished, printed and saved everything, and some requests failed.
	exitRequestsFailed = 3
	// exitAgentsMissing is stampede's own: agent 0 printed and saved a
	// cluster run some agents' partial results did not reach.
	exitAgentsMissing = 4
	// exitSignal + n is the status of a run stopped by signal n (130 for
	// Ctrl-C), what a shell reports for Python killed by the same signal,
	// so scripts do not take a partial result for a finished run.
	exitSignal = 128
)

// run is the command without the process around it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	topLevel := true
	if len(args) > 0 {
		switch args[0] {
		case "help":
			fmt.Fprintln(stdout, topUsage)
			fmt.Fprintln(stdout)
			if writeSubcommands(stdout) != nil {
				return exitError
			}
			return exitOK
		case "version", "--version", "-V":
			writeVersion(stdout)
			return exitOK
		case "serve":
			topLevel = false
			args = args[1:]
		case "compare":
			return runCompare(args[1:], stdout, stderr)
		case "rerun":
			return runRerun(ctx, args[1:], terminalStdin(), stdout, stderr)
		case "merge":
			return runMerge(args[1:], stdout, stderr)
		case "sweep":
			return runSweep(ctx, args[1:], stdout, stderr)
		case "slo":
			return runSLO(ctx, args[1:], stdout, stderr)
		case "multiturn":
			return runMultiturn(ctx, args[1:], stdout, stderr)
		case "results":
			return runResults(args[1:], os.Stdin, stdout, stderr)
		}
	}
	cfg, err := cli.Parse(args, backend.Choices())
	var help *cli.HelpRequested
	switch {
	case errors.As(err, &help):
		write := func() error { return cli.WriteHelp(stdout, help.Keyword, backend.Choices()) }
		if topLevel && help.Keyword == "" {
			write = func() error { return writeTopHelp(stdout) }
		}
		if write() != nil {
			return exitError
		}
		return exitOK
	case err != nil:
		return failed(stderr, err)
	}
	if launchesAgents(cfg) {
		// The agents print the warnings, each once.
		return runClusterLocal(args, cfg, stdout, stderr)
	}
	writeWarnings(stderr, cfg)
	if code, handled := runRustCommand(ctx, args, cfg, stdout, stderr); handled {
		return code
	}
	if cfg.NumRuns > 1 {
		err = search.RunRepeated(ctx, bench.RunOnce, cfg, cfg.NumRuns, stdout, stderr)
	} else {
		err = runBenchmark(ctx, cfg, stdout, stderr)
	}
	return exitCode(ctx, err, stderr)
}

// exitCode reports a finished run's error and returns the exit code: the
// signal's when one stopped the run.
func exitCode(ctx context.Context, err error, stderr io.Writer) int {
	return serve.exitCode(ctx, err, stderr)
}

// failed prints an error that ends the command and returns its exit
// status: argparse's usage form and 2 for a usage error, 1 otherwise.
func failed(stderr io.Writer, err error) int {
	return serve.failed(stderr, err)
}

// errorForm is how a command names itself in its errors, and how it
// prints a usage error.
type errorForm struct {
	name       string
	usageError func(w io.Writer, msg string) int
}

// serve is `stampede serve`, whose usage errors are argparse's.
var serve = errorForm{name: cli.ProgramName, usageError: func(w io.Writer, msg string) int {
	cli.WriteUsageError(w, &py.UsageError{Msg: msg})
	return exitUsage
}}

func (c errorForm) exitCode(ctx context.Context, err error, stderr io.Writer) int {
	var intr interrupted
	if errors.As(context.Cause(ctx), &intr) {
		// What the run measured has been printed and saved by now; an
		// error left is what the signal cut short (model discovery, the
		// ready check) or a failed save.
		switch {
		case errors.Is(err, context.Canceled):
			fmt.Fprintf(stderr, "%s: %v\n", c.name, intr)
		case err != nil:
			c.writeError(stderr, err)
		}
		return exitSignal + int(intr.sig)
	}
	var requestsFailed *outcome.RequestsFailed
	if errors.As(err, &requestsFailed) {
		fmt.Fprintf(stderr, "%s: %v\n", c.name, requestsFailed)
		return exitRequestsFailed
	}
	var missing *cluster.MissingAgentsError
	if errors.As(err, &missing) {
		fmt.Fprintf(stderr, "%s: %v\n", cli.ProgramName, missing)
		return exitAgentsMissing
	}
	if err != nil {
		return c.failed(stderr, err)
	}
	return exitOK
}

func (c errorForm) failed(stderr io.Writer, err error) int {
	var usage *py.UsageError
	if errors.As(err, &usage) {
		return c.usageError(stderr, usage.Msg)
	}
	c.writeError(stderr, err)
	return exitError
}

// writeWarnings prints the warnings parsing raised, as Python logs them.
func writeWarnings(stderr io.Writer, cfg *plan.Plan) {
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "WARNING: %s\n", w)
	}
}

// writeError prints an error raised after parsing: a Python exception as
// "Type: message", anything else after the command's name. Messages may
// quote a server (a reason phrase, a model list), so control characters
// are escaped.
func (c errorForm) writeError(w io.Writer, err error) {
	var invalid *py.Error
	if errors.As(err, &invalid) {
		fmt.Fprintf(w, "%s: %s\n", invalid.Type, pyout.TerminalText(invalid.Msg))
		return
	}
	fmt.Fprintf(w, "%s: %s\n", c.name, pyout.TerminalText(err.Error()))
}
