package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"io"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
)

// SampleRequests samples cfg's dataset exactly as Run does before it
// builds the requests: the same model discovery, tokenizer, seed and
// prompts. The server-tokenizer alignment of `random` and
// `prefix_repetition` prompts runs only when --base-url was given, since
// without it there is no server to ask. Lines Python prints while sampling
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
	model, err := r.server.DiscoverModel(ctx, stdout)
	if err != nil {
		return nil, err
	}
	tok, err := r.loadTokenizer(ctx, model)
	if err != nil {
		return nil, err
	}
	ds, err := r.sampleDataset(ctx, model, tok, cfg.Given("base-url"))
	if err != nil {
		return nil, err
	}
	return ds.requests, nil
}

// datasetRow is one line of `stampede dataset` output: the `custom`
// dataset's fields ("prompt", "output_tokens") first, then what a replay
// or an inspection needs beyond them. Fields a request does not use are
// left out.
type datasetRow struct {
	Prompt       *string           `json:"prompt,omitempty"`
	OutputTokens int               `json:"output_tokens"`
	PromptLen    int               `json:"prompt_len"`
	RequestID    string            `json:"request_id,omitempty"`
	PromptList   []string          `json:"prompt_list,omitempty"`
	PromptIDs    []int32           `json:"prompt_token_ids,omitempty"`
	Messages     json.RawMessage   `json:"messages,omitempty"`
	MultiModal   []json.RawMessage `json:"multi_modal_content,omitempty"`
	Timestamp    float64           `json:"timestamp,omitempty"`
	Overrides    json.RawMessage   `json:"request_overrides,omitempty"`
	AudioFile    string            `json:"audio_filename,omitempty"`
	AudioSec     float64           `json:"audio_duration_sec,omitempty"`
}

// WriteDatasetJSONL writes reqs one JSON object a line, in order. A file of
// text prompts replays through `--dataset-name custom --dataset-path FILE
// --custom-output-len -1 --skip-chat-template --disable-shuffle`: the same
// prompts, output lengths and order (the custom dataset counts prompt
// tokens itself; prompt_len is the count the sampling run used).
func WriteDatasetJSONL(w io.Writer, reqs []datasets.Request) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range reqs {
		req := &reqs[i]
		row := datasetRow{
			OutputTokens: req.ExpectedOutputLen, PromptLen: req.PromptLen, RequestID: req.RequestID,
			PromptList: req.PromptList, PromptIDs: req.PromptIDs, Messages: req.ChatMessages,
			MultiModal: req.MultiModal, Timestamp: req.TimestampSec, Overrides: req.Overrides,
		}
		if req.PromptList == nil && req.PromptIDs == nil && req.ChatMessages == nil {
			row.Prompt = &req.Prompt
		}
		if req.Audio != nil {
			row.AudioFile, row.AudioSec = req.Audio.Filename, req.Audio.DurationSec
		}
		if err := enc.Encode(&row); err != nil {
			return err
		}
	}
	return bw.Flush()
}
