package bench

import (
	"context"
	"io"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
)

// StreamRequests samples cfg's dataset exactly as Run does before it
// builds the requests (the same model discovery, tokenizer, seed and
// prompts) and hands them to use, in order, a batch at a time, holding
// no more than the dataset's window: `stampede dataset` and --dry-run
// write them out as they come. It contacts a server only when the command
// line names one (endpoint.Server.SampleOnly): without one, --model and a
// tokenizer must be given, and the server-tokenizer alignment of `random`
// and `prefix_repetition` prompts is skipped. Lines Python prints while
// sampling go to stdout and stderr as in a run, except the
// default-temperature warning: sampling sends no request, so there is no
// temperature to warn of.
func StreamRequests(ctx context.Context, cfg *plan.Plan, stdout, stderr io.Writer, use datasets.Emit) error {
	quiet := *cfg
	quiet.WarnDefaultTemperature = false
	cfg = &quiet
	r, err := newRun(cfg, stdout, stderr)
	if err != nil {
		return err
	}
	r.server.SampleOnly()
	model, err := r.server.DiscoverModel(ctx, stdout)
	if err != nil {
		return err
	}
	tok, err := r.loadTokenizer(ctx, model)
	if err != nil {
		return err
	}
	globals, err := r.newGlobals()
	if err != nil {
		return err
	}
	return r.sampleDataset(ctx, model, tok, !r.server.Offline(), globals, use)
}

// SampleRequests is StreamRequests' requests in one slice.
func SampleRequests(ctx context.Context, cfg *plan.Plan, stdout, stderr io.Writer) ([]datasets.Request, error) {
	var all []datasets.Request
	err := StreamRequests(ctx, cfg, stdout, stderr, func(batch []datasets.Request) error {
		all = append(all, batch...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return all, nil
}
