package multiturn

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/datasets"
)

// Command runs `stampede multiturn` once its flags are parsed: read the
// input, resolve the server and model, prepare the plan, drive the
// conversations, then print the block on stdout and save what was asked.
// An interrupted run still prints and saves what finished.
func Command(ctx context.Context, opts *Options, stdout, stderr io.Writer) error {
	in, err := ReadInput(opts.InputFile)
	if err != nil {
		return err
	}
	return drive(ctx, opts, NeedsTokenizer(opts, in), func(datasets.Tokenizer) (*Input, error) { return in, nil }, stdout, stderr)
}

// drive is a run from its input on: the endpoint (with a tokenizer when
// withTokenizer), the input made with it, the plan, the conversations,
// the block and the files.
func drive(ctx context.Context, opts *Options, withTokenizer bool, input func(datasets.Tokenizer) (*Input, error), stdout, stderr io.Writer) error {
	ep, err := endpoint.Open(ctx, opts.Serve, stdout, stderr, withTokenizer)
	if err != nil {
		return err
	}
	in, err := input(ep.Tokenizer())
	if err != nil {
		return err
	}
	plan, err := Prepare(opts, in, ep.Model(), ep.Tokenizer())
	if err != nil {
		return err
	}
	turns := 0
	for _, n := range plan.Turns {
		turns += n
	}
	fmt.Fprintf(stderr, "multiturn: %d conversations, %d turns, %d clients, %d active conversations at most\n",
		len(plan.Conversations), turns, opts.NumClients, opts.MaxActiveConversations)
	out, err := Run(ctx, opts, plan, ep)
	if err != nil {
		return err
	}
	report := BuildReport(opts, plan, out, time.Now())
	report.Print(stdout)
	saved, err := report.Save(opts, out)
	for _, p := range saved {
		fmt.Fprintf(stderr, "multiturn: saved %s\n", p)
	}
	return err
}
