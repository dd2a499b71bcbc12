// Command stampede is a drop-in for `vllm bench serve`: the same flags,
// console block and result JSON, built to drive 10,000+ concurrent token
// streams from one host.
//
//	stampede serve [options]
//	stampede [options]
//	stampede tokenize --tokenizer PATH [--add-special-tokens | --decode [--skip-special-tokens]]
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
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "tokenize" {
		os.Exit(runTokenize(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	ctx, stop := interruptContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// interrupted is the cancellation cause of a run stopped by a signal.
type interrupted struct{ sig syscall.Signal }

func (e interrupted) Error() string { return "interrupted by " + e.sig.String() }

// interruptContext is cancelled, with an interrupted cause, by the first of
// sigs. The first signal asks the run to stop sending and report what it
// measured; the handler is then removed, so a second Ctrl-C ends the
// process at once if draining takes too long.
func interruptContext(parent context.Context, sigs ...os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			sig, _ := s.(syscall.Signal)
			cancel(interrupted{sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(context.Canceled)
	}
}

// Exit codes, as vllm bench serve's: argparse errors exit 2, exceptions
// raised after parsing exit 1.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	// exitSignal + n is the status of a run stopped by signal n (130 for
	// Ctrl-C), what a shell reports for Python killed by the same signal,
	// so scripts do not take a partial result for a finished run.
	exitSignal = 128
)

// run is the command without the process around it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	cfg, err := bench.ParseArgs(args)
	var help *bench.HelpRequested
	var usage *bench.UsageError
	switch {
	case errors.As(err, &help):
		if err := bench.WriteHelp(stdout, help.Keyword); err != nil {
			return exitError
		}
		return exitOK
	case errors.As(err, &usage):
		bench.WriteUsageError(stderr, usage)
		return exitUsage
	case err != nil:
		writeError(stderr, err)
		return exitError
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "WARNING: %s\n", w)
	}
	err = runBenchmark(ctx, cfg, stdout, stderr)
	var intr interrupted
	if errors.As(context.Cause(ctx), &intr) {
		// What the run measured has been printed and saved by now; an
		// error left is what the signal cut short (model discovery, the
		// ready check) or a failed save.
		switch {
		case errors.Is(err, context.Canceled):
			fmt.Fprintf(stderr, "%s: %v\n", bench.ProgramName, intr)
		case err != nil:
			writeError(stderr, err)
		}
		return exitSignal + int(intr.sig)
	}
	if err != nil {
		if errors.As(err, &usage) {
			bench.WriteUsageError(stderr, usage)
			return exitUsage
		}
		writeError(stderr, err)
		return exitError
	}
	return exitOK
}

// writeError prints an error raised after parsing: a Python exception as
// "Type: message", anything else after the program name.
func writeError(w io.Writer, err error) {
	var invalid *bench.ValidationError
	if errors.As(err, &invalid) {
		fmt.Fprintf(w, "%s: %s\n", invalid.Type, invalid.Msg)
		return
	}
	fmt.Fprintf(w, "%s: %v\n", bench.ProgramName, err)
}
