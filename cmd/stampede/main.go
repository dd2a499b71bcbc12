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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes, as vllm bench serve's: argparse errors exit 2, exceptions
// raised after parsing exit 1.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// run is the command without the process around it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	cfg, err := bench.ParseArgs(args)
	var help *bench.HelpRequested
	var usage *bench.UsageError
	var invalid *bench.ValidationError
	switch {
	case errors.As(err, &help):
		if err := bench.WriteHelp(stdout, help.Keyword); err != nil {
			return exitError
		}
		return exitOK
	case errors.As(err, &usage):
		bench.WriteUsageError(stderr, usage)
		return exitUsage
	case errors.As(err, &invalid):
		fmt.Fprintf(stderr, "%s: %s\n", invalid.Type, invalid.Msg)
		return exitError
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", bench.ProgramName, err)
		return exitError
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "WARNING: %s\n", w)
	}
	if err := runBenchmark(ctx, cfg, stdout, stderr); err != nil {
		if errors.As(err, &usage) {
			bench.WriteUsageError(stderr, usage)
			return exitUsage
		}
		if errors.As(err, &invalid) {
			fmt.Fprintf(stderr, "%s: %s\n", invalid.Type, invalid.Msg)
		} else {
			fmt.Fprintf(stderr, "%s: %v\n", bench.ProgramName, err)
		}
		return exitError
	}
	return exitOK
}
