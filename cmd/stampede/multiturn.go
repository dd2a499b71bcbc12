package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/stampede-bench/stampede/bench/multiturn"
	"github.com/stampede-bench/stampede/internal/py"
)

// runMultiturn is `stampede multiturn`.
func runMultiturn(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		if a == "-h" || a == "--help" {
			fmt.Fprint(stdout, multiturn.Usage)
			return exitOK
		}
		if a == "--" {
			break
		}
	}
	opts, err := multiturn.ParseArgs(args)
	if err != nil {
		var usage *py.UsageError
		if errors.As(err, &usage) {
			fmt.Fprintf(stderr, "usage: stampede multiturn --input-file FILE [multiturn options] [serve options]\nstampede multiturn: error: %s\n", usage.Msg)
			return exitUsage
		}
		return failed(stderr, err)
	}
	writeWarnings(stderr, opts.Serve)
	return exitCode(ctx, multiturn.Command(ctx, opts, stdout, stderr), stderr)
}
