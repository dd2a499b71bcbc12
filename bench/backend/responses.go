package backend

import (
	"fmt"
	"strconv"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
)

// setResponsesBody fills the body of --backend openai-responses, the
// Responses API (POST /v1/responses) as a benchmark uses it:
//
//	{"model", "input", "max_output_tokens": output_len, "stream": true}
//
// then, as for every OpenAI-compatible backend, "ignore_eos" and the extra
// body (sampling parameters, --extra-body), which may override any key.
// "input" is the prompt as a string, or the dataset's chat messages as
// they are (the Responses API takes {"role", "content"} messages). The
// Responses API takes neither token ids nor chat-style media parts, so a
// request that has them is refused with its id. The usage comes in the
// response.completed event, so no stream_options are needed.
func setResponsesBody(body *plan.JSONObject, req *datasets.Request) error {
	switch {
	case req.PromptIDs != nil || req.PromptList != nil:
		return fmt.Errorf("--backend openai-responses: request %q has a prompt of token ids or a list of prompts; the Responses API takes one text input (use a text dataset, or --backend openai)", req.RequestID)
	case len(req.MultiModal) > 0:
		return fmt.Errorf("--backend openai-responses: request %q carries media, which stampede does not translate to the Responses API's input parts (use --backend openai-chat)", req.RequestID)
	}
	input, err := promptValue(req)
	if err != nil {
		return err
	}
	body.Set("input", input)
	body.Set("max_output_tokens", []byte(strconv.Itoa(req.ExpectedOutputLen)))
	body.Set("stream", []byte("true"))
	return nil
}
