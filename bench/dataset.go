package bench

import (
	"context"
	"io"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
)

// SampleRequests samples cfg's dataset exactly as Run does before it
// builds the requests: the same model discovery, tokenizer, seed and
// prompts. It contacts a server only when the command line names one
// (endpoint.Server.SampleOnly): without one, --model and a tokenizer must
// be given, and the server-tokenizer alignment of `random` and
// `prefix_repetition` prompts is skipped. Lines Python prints while sampling
// go to stdout and stderr as in a run, except the default-temperature
// warning: sampling sends no request, so there is no temperature to warn of.
func SampleRequests(ctx context.Context, cfg *plan.Plan, stdout, stderr io.Writer) ([]datasets.Request, error) {
	quiet := *cfg
	quiet.WarnDefaultTemperature = false
	cfg = &quiet
	r, err := newRun(cfg, stdout, stderr)
	if err != nil {
		return nil, err
	}
	r.server.SampleOnly()
	model, err := r.server.DiscoverModel(ctx, stdout)
	if err != nil {
		return nil, err
	}
	tok, err := r.loadTokenizer(ctx, model)
	if err != nil {
		return nil, err
	}
	ds, err := r.sampleDataset(ctx, model, tok, !r.server.Offline())
	if err != nil {
		return nil, err
	}
	return ds.requests, nil
}

// shedPrompts drops every request's prompt and body parts once the
// requests are encoded and a cluster agent has taken its share. What stays
// is what the merged run's phases read by a request's index: its
// x-request-id, prompt and output lengths, timestamp and the audio clip's
// duration (an input of the metrics), not its bytes.
func (ds *dataset) shedPrompts() {
	for i := range ds.requests {
		q := &ds.requests[i]
		q.Prompt, q.PromptIDs, q.PromptList = "", nil, nil
		q.ChatMessages, q.MultiModal, q.Overrides = nil, nil, nil
		if q.Audio != nil {
			q.Audio = &datasets.Audio{DurationSec: q.Audio.DurationSec}
		}
	}
}
