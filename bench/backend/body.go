package backend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/sse"
)

// BodyParams are a body's run-wide inputs.
type BodyParams struct {
	// Model is --model, or the id the server's /v1/models reported.
	Model string
	// ModelName, when non-empty, is sent as "model" instead of Model:
	// --served-model-name, the /v1/models name, or the request's LoRA
	// adapter (Python sets both model and model_name to the adapter).
	ModelName string
	// Logprobs is --logprobs; completions bodies send null without it.
	Logprobs *int
	// IgnoreEOS adds "ignore_eos": true (Python omits the key when false).
	IgnoreEOS bool
	// ExtraBody is {**sampling params, **--extra-body} (Config.
	// RequestExtraBody), merged last so it can override any field.
	ExtraBody plan.JSONObject
	// ContinuousUsage (--per-token-itl) asks for a running usage object in
	// every chunk (streamOptions).
	ContinuousUsage bool
}

// Body is what req posts to the backend: the Content-Type the body needs
// ("" where the request function leaves it to the HTTP client's JSON
// default) and the body, multipart/form-data for the audio backends
// (BuildAudioRequest) and JSON otherwise (BuildRequestBody).
func Body(backend string, req *datasets.Request, p BodyParams) (contentType string, body []byte, err error) {
	if Of(backend).multipart {
		return BuildAudioRequest(req, req.Audio, p, NewAudioBoundary())
	}
	body, err = BuildRequestBody(backend, req, p)
	return "", body, err
}

// BuildRequestBody returns the exact bytes Python's client posts for req:
// json.dumps(payload) with ", " and ": " separators, ensure_ascii
// escaping, floats as repr, keys in the payload dict's insertion order.
// The per-request extra body is {**p.ExtraBody, **req.Overrides}; like
// dict.update it overwrites existing keys in place and appends new ones.
// vllm-rerank applies neither ignore_eos nor the extra body, as in Python.
// openai-audio posts multipart/form-data and is not built here.
func BuildRequestBody(backend string, req *datasets.Request, p BodyParams) ([]byte, error) {
	b, err := lookupBackend(backend)
	if err != nil {
		return nil, err
	}
	var body plan.JSONObject
	body.Set("model", pyString(p.SentModel()))
	switch b.api.kind {
	case completionsKind:
		prompt, err := promptValue(req)
		if err != nil {
			return nil, err
		}
		logprobs := []byte("null")
		if p.Logprobs != nil {
			logprobs = []byte(strconv.Itoa(*p.Logprobs))
		}
		body.Set("prompt", prompt)
		body.Set("repetition_penalty", []byte("1.0"))
		body.Set("max_tokens", []byte(strconv.Itoa(req.ExpectedOutputLen)))
		body.Set("logprobs", logprobs)
		body.Set("stream", []byte("true"))
		body.Set("stream_options", p.streamOptions())
	case chatKind:
		text, err := promptValue(req)
		if err != nil {
			return nil, err
		}
		messages, err := chatMessages(req, text, false)
		if err != nil {
			return nil, err
		}
		body.Set("messages", messages)
		body.Set("max_completion_tokens", []byte(strconv.Itoa(req.ExpectedOutputLen)))
		body.Set("stream", []byte("true"))
		body.Set("stream_options", p.streamOptions())
	case responsesKind:
		if err := setResponsesBody(&body, req); err != nil {
			return nil, err
		}
	case anthropicKind:
		if err := setAnthropicBody(&body, req); err != nil {
			return nil, err
		}
	case embeddingsKind:
		if err := setEmbeddingsInput(&body, b, req); err != nil {
			return nil, err
		}
		body.Set("truncate_prompt_tokens", []byte("-1"))
	case infinityKind:
		if err := setInfinityInput(&body, b, req); err != nil {
			return nil, err
		}
	case poolingKind:
		body.Set("truncate_prompt_tokens", []byte("-1"))
		prompt, err := promptValue(req)
		if err != nil {
			return nil, err
		}
		body.Set("input", prompt)
	case rerankKind:
		if len(req.PromptList) < 2 {
			return nil, fmt.Errorf("backend vllm-rerank: request %q needs a query and at least one document (a prompt list of 2 or more), got %d prompts", req.RequestID, len(req.PromptList))
		}
		body.Set("query", pyString(req.PromptList[0]))
		body.Set("documents", pyStringList(req.PromptList[1:]))
		body.Set("truncate_prompt_tokens", []byte("-1"))
		return body.EncodePy(), nil
	default:
		return nil, fmt.Errorf("--backend %s: posts multipart/form-data audio, which stampede does not build", backend)
	}
	if p.IgnoreEOS {
		body.Set("ignore_eos", []byte("true"))
	}
	extra, err := p.extraBody(req)
	if err != nil {
		return nil, err
	}
	if b.api.kind == anthropicKind {
		if extra, err = anthropicTools(extra); err != nil {
			return nil, err
		}
	}
	for key, value := range extra.All() {
		v, err := py.Reencode(value)
		if err != nil {
			return nil, fmt.Errorf("extra body key %q: %w", key, err)
		}
		body.Set(key, v)
	}
	return body.EncodePy(), nil
}

// extraBody is the per-request extra body, {**p.ExtraBody,
// **req.Overrides}: an override replaces a key in place, new keys follow.
// Values are JSON text as given, not yet in json.dumps form.
func (p BodyParams) extraBody(req *datasets.Request) (plan.JSONObject, error) {
	extra := p.ExtraBody.Clone()
	if len(req.Overrides) > 0 {
		overrides, ok := plan.JSONText(req.Overrides).Object()
		if !ok {
			return plan.JSONObject{}, fmt.Errorf("request %q: request overrides must be a JSON object, got %s", req.RequestID, req.Overrides)
		}
		extra.Merge(overrides)
	}
	return extra, nil
}

const (
	streamOptionsUsage      = `{"include_usage": true}`
	streamOptionsContinuous = `{"include_usage": true, "continuous_usage_stats": true}`
)

// streamOptions is the "stream_options" value of a completions or chat
// body, in json.dumps form: with --per-token-itl, vLLM's running usage in
// every chunk, from which the shards count the tokens each chunk carried.
func (p BodyParams) streamOptions() []byte {
	if p.ContinuousUsage {
		return []byte(streamOptionsContinuous)
	}
	return []byte(streamOptionsUsage)
}

// SentModel is the name requests carry as "model": ModelName, else Model.
func (p BodyParams) SentModel() string {
	if p.ModelName != "" {
		return p.ModelName
	}
	return p.Model
}

// setEmbeddingsInput fills "input" (openai-embeddings) or "messages" (the
// embeddings-chat family, with clip's and vlm2vec's prompt rewriting).
func setEmbeddingsInput(body *plan.JSONObject, b *Backend, req *datasets.Request) error {
	text, err := promptValue(req)
	if err != nil {
		return err
	}
	if !b.chatInput {
		body.Set("input", text)
		return nil
	}
	if len(req.MultiModal) > 0 {
		switch b.mediaText {
		case blankText:
			text = pyString("")
		case vlm2vecText:
			if idx, ok := trailingIndex(req.RequestID); !ok || idx%2 == 0 {
				text = pyString("Represent the given image.")
			} else {
				text = pyString("Represent the given image with the following question: " + req.Prompt)
			}
		}
	}
	messages, err := chatMessages(req, text, b.mediaText == vlm2vecText)
	if err != nil {
		return err
	}
	body.Set("messages", messages)
	return nil
}

// setInfinityInput is the Infinity server's body: the prompt as "input",
// or, for an empty prompt (clip blanks it when media is attached), the one
// media item's URL with its modality ("image_url" → "image").
func setInfinityInput(body *plan.JSONObject, b *Backend, req *datasets.Request) error {
	backend := b.name
	blank := b.mediaText == blankText && len(req.MultiModal) > 0
	if !blank && (req.Prompt != "" || len(req.PromptList) > 0 || len(req.PromptIDs) > 0) {
		prompt, err := promptValue(req)
		if err != nil {
			return err
		}
		body.Set("input", prompt)
		return nil
	}
	if len(req.MultiModal) != 1 {
		return fmt.Errorf("backend %s: request %q has no prompt, so it needs exactly one media item, got %d", backend, req.RequestID, len(req.MultiModal))
	}
	var item map[string]json.RawMessage
	var kind string
	if json.Unmarshal(req.MultiModal[0], &item) != nil || json.Unmarshal(item["type"], &kind) != nil {
		return fmt.Errorf("backend %s: request %q: media item %s has no \"type\"", backend, req.RequestID, req.MultiModal[0])
	}
	var ref struct {
		URL *string `json:"url"`
	}
	if json.Unmarshal(item[kind], &ref) != nil || ref.URL == nil {
		return fmt.Errorf("backend %s: request %q: media item %s has no %q.url", backend, req.RequestID, req.MultiModal[0], kind)
	}
	modality, _, _ := strings.Cut(kind, "_")
	body.Set("input", pyString(*ref.URL))
	body.Set("modality", pyString(modality))
	return nil
}

var trailingDigits = regexp.MustCompile(`(\d+)$`)

// trailingIndex is _try_extract_request_idx: the request id's trailing
// digits as a number.
func trailingIndex(id string) (int, bool) {
	m := trailingDigits.FindString(id)
	if m == "" {
		return 0, false
	}
	n, err := strconv.Atoi(m)
	return n, err == nil
}

// promptValue is the request's prompt as Python's payload holds it: a
// string, a list of token ids, a list of strings, or (a chat-formatted
// dataset prompt) the message list.
func promptValue(req *datasets.Request) ([]byte, error) {
	switch {
	case req.PromptIDs != nil:
		var b bytes.Buffer
		b.WriteByte('[')
		for i, id := range req.PromptIDs {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(int(id)))
		}
		b.WriteByte(']')
		return b.Bytes(), nil
	case req.PromptList != nil:
		return pyStringList(req.PromptList), nil
	case req.ChatMessages != nil:
		return py.Reencode(req.ChatMessages)
	}
	return pyString(req.Prompt), nil
}

// chatMessages is _get_chat_messages: the dataset's messages verbatim, or
// one user message whose content is [{"type": "text", "text": text}] with
// the media parts after it (or before it, mediaFirst). text is a JSON
// value: the prompt as Python holds it, normally a string.
func chatMessages(req *datasets.Request, text []byte, mediaFirst bool) ([]byte, error) {
	if req.ChatMessages != nil {
		return py.Reencode(req.ChatMessages)
	}
	var parts [][]byte
	for _, m := range req.MultiModal {
		v, err := py.Reencode(m)
		if err != nil {
			return nil, fmt.Errorf("request %q: media item: %w", req.RequestID, err)
		}
		parts = append(parts, v)
	}
	var textPart plan.JSONObject
	textPart.Set("type", pyString("text"))
	textPart.Set("text", text)
	if mediaFirst {
		parts = append(parts, textPart.EncodePy())
	} else {
		parts = append([][]byte{textPart.EncodePy()}, parts...)
	}
	var b bytes.Buffer
	b.WriteString(`[{"role": "user", "content": [`)
	b.Write(bytes.Join(parts, []byte(", ")))
	b.WriteString("]}]")
	return b.Bytes(), nil
}

// RequestHeaders are the headers Python's request function passes, in its
// dict order: Content-Type (only the functions that set it; completions
// leaves it to aiohttp's JSON default, so the wire layer must add
// "Content-Type: application/json" when it is absent), Authorization
// with apiKey ($OPENAI_API_KEY) when non-empty, the --header pairs (a key
// already present is replaced in place, as dict |= does; keys compare
// case-sensitively as Python's dict keys do), then x-request-id when the
// request has an id. The Messages API's key goes in x-api-key instead,
// followed by anthropic-version (both before --header, which may replace
// them).
func RequestHeaders(backend string, req *datasets.Request, apiKey string, extra []plan.Header) ([]plan.Header, error) {
	b, err := lookupBackend(backend)
	if err != nil {
		return nil, err
	}
	var hs []plan.Header
	set := func(k, v string) {
		for i := range hs {
			if hs[i].Key == k {
				hs[i].Value = v
				return
			}
		}
		hs = append(hs, plan.Header{Key: k, Value: v})
	}
	if b.api.contentType {
		set("Content-Type", "application/json")
	}
	switch {
	case apiKey == "":
	case b.apiKey.header != "":
		set(b.apiKey.header, apiKey)
	default:
		set("Authorization", "Bearer "+apiKey)
	}
	if b.api.kind == anthropicKind {
		set("anthropic-version", anthropicVersion)
	}
	for _, h := range extra {
		set(h.Key, h.Value)
	}
	if req.RequestID != "" {
		set("x-request-id", req.RequestID)
	}
	return hs, nil
}

// NumInputSequences is the pooling metrics' input count for req: the
// rerank documents; 1 for the embeddings-chat family (openai-embeddings-
// chat, -clip, -vlm2vec), which posts one message list and passes Python's
// default; otherwise _get_num_input_sequences, the prompt list's length,
// else 1.
func NumInputSequences(backend string, req *datasets.Request) int {
	b := Of(backend)
	switch {
	case b.api.kind == rerankKind:
		return len(req.PromptList) - 1
	case b.chatInput:
		return 1
	}
	if len(req.PromptList) > 0 {
		return len(req.PromptList)
	}
	return 1
}

// PoolingUsage is where Python's _run_pooling_request finds the prompt
// tokens of req's answer: by payload.get("encoding_format", "float"),
// which only the extra body can set ("bytes": the metadata response
// header; "bytes_only": the request's own prompt length; anything else:
// the JSON body). vllm-rerank posts no extra body, and the streaming
// backends have no pooling answer.
func PoolingUsage(backend string, req *datasets.Request, p BodyParams) (sse.PoolingUsage, error) {
	b, err := lookupBackend(backend)
	if err != nil {
		return sse.UsageInBody, err
	}
	switch b.api.kind {
	case embeddingsKind, infinityKind, poolingKind:
	default:
		return sse.UsageInBody, nil
	}
	extra, err := p.extraBody(req)
	if err != nil {
		return sse.UsageInBody, err
	}
	raw, ok := extra.Get("encoding_format")
	var format string
	if !ok || json.Unmarshal(raw, &format) != nil {
		return sse.UsageInBody, nil
	}
	switch format {
	case "bytes":
		return sse.UsageInMetadata, nil
	case "bytes_only":
		return sse.UsageFromRequest, nil
	}
	return sse.UsageInBody, nil
}
