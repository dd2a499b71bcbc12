package bench

import (
	"context"
	"io"

	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/engine"
)

// Endpoint is the server side of a parsed serve configuration, for the
// commands that build their own request bodies (bench/multiturn): the
// target of --base-url/--endpoint, the model, the tokenizer, the HTTP
// framing of a body and the engine's settings, all as a serve run has
// them.
type Endpoint struct{ r *run }

// OpenEndpoint resolves cfg's target and model (asking the server's
// /v1/models when --model is not given, as serve does), and loads the
// tokenizer when withTokenizer is set (the server's /tokenize standing in
// when none can be had, with a warning).
func OpenEndpoint(ctx context.Context, cfg *cli.Config, stdout, stderr io.Writer, withTokenizer bool) (*Endpoint, error) {
	r, err := newRun(cfg, stdout, stderr)
	if err != nil {
		return nil, err
	}
	if err := r.discoverModel(ctx); err != nil {
		return nil, err
	}
	if withTokenizer {
		if err := r.loadTokenizer(ctx); err != nil {
			return nil, err
		}
	}
	return &Endpoint{r: r}, nil
}

// Model is the model name requests carry: --served-model-name, else the
// model's id.
func (e *Endpoint) Model() string {
	return BodyParams{Model: e.r.modelID, ModelName: e.r.modelName}.model()
}

// ModelID is --model, or the first model the server listed.
func (e *Endpoint) ModelID() string { return e.r.modelID }

// Tokenizer is the loaded tokenizer; nil unless OpenEndpoint was asked for
// one.
func (e *Endpoint) Tokenizer() datasets.Tokenizer { return e.r.tok }

// Frame puts a JSON body in a POST to the endpoint with serve's headers
// (Content-Type, $OPENAI_API_KEY's bearer token, --header) and extra after
// them (a key already set is replaced).
func (e *Endpoint) Frame(body []byte, extra ...cli.Header) ([]byte, error) {
	hs, err := RequestHeaders(e.r.cfg.Backend, &datasets.Request{}, e.r.cfg.APIKey, append(e.r.cfg.Headers[:len(e.r.cfg.Headers):len(e.r.cfg.Headers)], extra...))
	if err != nil {
		return nil, err
	}
	return e.r.frame("application/json", body, hs)
}

// EngineConfig is serve's engine setting (target, stream format, shards,
// timeouts, kernel stamps, bounds) for n requests, which the caller
// schedules or feeds.
func (e *Endpoint) EngineConfig(n int) engine.Config {
	return e.r.engineConfig(make([]engine.Request, n))
}

// WaitRun waits for a started engine run, aborting it when ctx's hard stop
// (a second Ctrl-C, WithHardStop) comes first.
func WaitRun(ctx context.Context, runner *engine.Runner) (*engine.Result, error) {
	return waitRun(ctx, runner)
}
