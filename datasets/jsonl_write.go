package datasets

import (
	"bufio"
	"encoding/json"
	"io"
)

// jsonlRow is one line of `stampede dataset` output: the `custom`
// dataset's fields ("prompt", "output_tokens") first, then what a replay
// or an inspection needs beyond them. Fields a request does not use are
// left out.
type jsonlRow struct {
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

// WriteJSONL writes reqs one JSON object a line, in order. A file of
// text prompts replays through `--dataset-name custom --dataset-path FILE
// --custom-output-len -1 --skip-chat-template --disable-shuffle`: the same
// prompts, output lengths and order (the custom dataset counts prompt
// tokens itself; prompt_len is the count the sampling run used).
func WriteJSONL(w io.Writer, reqs []Request) error {
	jw := NewJSONLWriter(w)
	if err := jw.Write(reqs); err != nil {
		return err
	}
	return jw.Flush()
}

// JSONLWriter is WriteJSONL for requests that come a batch at a time.
type JSONLWriter struct {
	bw  *bufio.Writer
	enc *json.Encoder
}

// NewJSONLWriter writes to w.
func NewJSONLWriter(w io.Writer) *JSONLWriter {
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &JSONLWriter{bw: bw, enc: enc}
}

// Write writes reqs, one line each.
func (jw *JSONLWriter) Write(reqs []Request) error {
	for i := range reqs {
		req := &reqs[i]
		row := jsonlRow{
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
		if err := jw.enc.Encode(&row); err != nil {
			return err
		}
	}
	return nil
}

// Flush writes what is buffered.
func (jw *JSONLWriter) Flush() error { return jw.bw.Flush() }
