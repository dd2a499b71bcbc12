package multiturn

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/stampede-bench/stampede/bench/endpoint"
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
	ep, err := endpoint.Open(ctx, opts.Serve, stdout, stderr, NeedsTokenizer(opts, in))
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
