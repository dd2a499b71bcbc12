package datasets

import "encoding/json"

// Request is one sampled benchmark request, the Go twin of Python's
// SampleRequest (spec §g). Exactly one of Prompt, PromptIDs, PromptList and
// ChatMessages carries the prompt.
type Request struct {
	// Prompt is the text prompt.
	Prompt string
	// PromptIDs is a pre-tokenised prompt (--prompt-token-ids, timed_trace);
	// completions bodies send it as a list of ints.
	PromptIDs []int32
	// PromptList is a batch of texts (random --random-batch-size > 1, rerank:
	// query first, then documents).
	PromptList []string
	// ChatMessages, when set, is sent verbatim as the chat "messages".
	ChatMessages json.RawMessage
	// MultiModal holds OpenAI content parts (image_url, video_url,
	// input_audio) to send after the text part.
	MultiModal []json.RawMessage
	// PromptLen is the prompt's token count as the dataset computed it.
	PromptLen int
	// ExpectedOutputLen becomes max_tokens / max_completion_tokens.
	ExpectedOutputLen int
	// RequestID is sent as x-request-id; "" sends none.
	RequestID string
	// TimestampSec is the trace send offset (timed_trace), else 0.
	TimestampSec float64
	// Overrides is a JSON object merged over extra_body for this request
	// (dataset request_overrides, e.g. BFCL tools).
	Overrides json.RawMessage
	// Audio is the clip the openai-audio backend uploads; nil otherwise.
	Audio *Audio
}

// Tokenizer is what datasets and metrics need from a tokenizer; the pure-Go
// implementation lives in datasets/tokenizer, and a server-side fallback can
// satisfy it through /tokenize and /detokenize.
type Tokenizer interface {
	// Encode appends text's token ids to dst, with the model's special
	// tokens (BOS, CLS/SEP, ...) when addSpecial is true.
	Encode(dst []int32, text string, addSpecial bool) []int32
	// Decode turns ids back into text, dropping special tokens when
	// skipSpecial is true.
	Decode(ids []int32, skipSpecial bool) string
	// VocabSize is Hugging Face's vocab_size: the base vocabulary, added
	// tokens excluded.
	VocabSize() int
	// NumSpecialTokensToAdd is how many special tokens Encode adds to a
	// single sequence when addSpecial is true.
	NumSpecialTokensToAdd() int
	// AllSpecialIDs lists the ids of all special tokens, ascending.
	AllSpecialIDs() []int32
}
