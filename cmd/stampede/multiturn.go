package main

import (
	"context"
	"fmt"
	"io"

	"github.com/stampede-bench/stampede/bench/multiturn"
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
		return multiturnForm.failed(stderr, err)
	}
	writeWarnings(stderr, opts.Serve)
	return multiturnForm.exitCode(ctx, multiturn.Command(ctx, opts, stdout, stderr), stderr)
}

// multiturnForm names stampede multiturn in its errors, serve's options'
// included.
var multiturnForm = errorForm{name: "stampede multiturn", usageError: func(w io.Writer, msg string) int {
	fmt.Fprintf(w, "usage: stampede multiturn --input-file FILE [multiturn options] [serve options]\nstampede multiturn: error: %s\n", msg)
	return exitUsage
}}
