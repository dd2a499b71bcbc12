package sse

import (
	"fmt"
	"strings"
)

// The Anthropic Messages API (POST /v1/messages with "stream": true)
// streams typed events, each an SSE event whose "event:" field and data
// "type" name it (vLLM, SGLang, llama.cpp and Ollama send both):
//
//	event: message_start
//	data: {"type":"message_start","message":{"id":"msg_1",...,"usage":{"input_tokens":25,"output_tokens":0}}}
//	event: content_block_start
//	data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}
//	event: content_block_delta
//	data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}
//	event: content_block_stop
//	data: {"type":"content_block_stop","index":0}
//	event: message_delta
//	data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}
//	event: message_stop
//	data: {"type":"message_stop"}
//
// The Decoder reads them in the same one-pass scan as the OpenAI chunks
// and classifies them as the chat function classifies chunks: a delta that
// carries generated output is a token event (TTFT is the first of them,
// each later one adds an ITL), and only the answer's text is generated
// text.
//
//   - content_block_delta: a token event. A text_delta's "text" is the
//     Text; a thinking_delta is Reasoning when its "thinking" is
//     non-empty (as chat's reasoning chunks count and add no text); an
//     input_json_delta (a tool call's arguments) is a ToolCall. A
//     signature_delta (the thinking block's signature) and a
//     citations_delta carry no generated token and are passed over; a
//     delta of a type not named here is a token event without text, and
//     one without a "type" is known by its field ("text", "thinking",
//     "partial_json").
//   - content_block_start of a "tool_use" (or "server_tool_use") block:
//     ToolCallsStarted = 1 (not a token event: no token yet).
//   - message_start: usage from message.usage, the prompt's tokens only:
//     input_tokens plus cache_creation_input_tokens and
//     cache_read_input_tokens where the server splits them (Anthropic's
//     own API counts cached tokens apart from input_tokens).
//   - message_delta: usage from its "usage": output_tokens, the server's
//     count of the whole answer (thinking included, as chat's
//     completion_tokens); its input tokens, when given, replace
//     message_start's.
//   - error: the request fails with the server's error type and message
//     (*StreamError); an event without a type that carries an "error" is
//     one too.
//   - message_stop, content_block_stop, ping and any other type are
//     passed over.
//
// The data's "type" names the event; the SSE event name stands in when
// the data has none. A delta field that is present and truthy must be a
// string, as chat's content must. The usage in message_start is the
// prompt's alone: its output_tokens (0, or 1 on Anthropic's API) counts
// nothing yet and is not taken.

// anthropicFields are the values a scan of an Anthropic event keeps
// beyond the shared ones: the event's "type" is extra.typ, its "message"
// extra.response, its "delta" extra.delta, its "content_block" extra.item
// and that block's type extra.itemType; the usage counts are fields'
// usage, prompt (input_tokens) and completion (output_tokens); a
// text_delta's text is fields' text; an error's message is fields'
// errMsg.
type anthropicFields struct {
	// usage.cache_creation_input_tokens, usage.cache_read_input_tokens
	cacheCreation, cacheRead jsonValue
	// delta.type, delta.thinking, delta.partial_json
	deltaType, thinking, partialJSON jsonValue
	// error.type
	errType jsonValue
}

// anthropicSlot is slot for the Anthropic kind: where to keep the value
// of key in an object of role r, and the role of that value; nil for a key
// the Decoder does not read. A new occurrence of a key clears what the
// previous one held, so the last occurrence wins.
func (d *Decoder) anthropicSlot(r role, key []byte) (*jsonValue, role) {
	f, x, a := &d.f, &d.f.extra, &d.f.anthropic
	switch r {
	case roleTop:
		switch string(key) {
		case "type":
			return &x.typ, roleNone
		case "message":
			d.resetAnthropicUsage()
			return &x.response, roleMessage
		case "usage":
			d.resetAnthropicUsage()
			return &f.usage, roleUsage
		case "delta":
			f.text, a.deltaType, a.thinking, a.partialJSON = jsonValue{}, jsonValue{}, jsonValue{}, jsonValue{}
			return &x.delta, roleBlockDelta
		case "content_block":
			x.itemType = jsonValue{}
			return &x.item, roleContentBlock
		case "error":
			f.errMsg, a.errType = jsonValue{}, jsonValue{}
			return &f.errValue, roleError
		}
	case roleMessage:
		if string(key) == "usage" {
			d.resetAnthropicUsage()
			return &f.usage, roleUsage
		}
	case roleUsage:
		switch string(key) {
		case "input_tokens":
			return &f.prompt, roleNone
		case "output_tokens":
			return &f.completion, roleNone
		case "cache_creation_input_tokens":
			return &a.cacheCreation, roleNone
		case "cache_read_input_tokens":
			return &a.cacheRead, roleNone
		}
	case roleBlockDelta:
		switch string(key) {
		case "type":
			return &a.deltaType, roleNone
		case "text":
			return &f.text, roleNone
		case "thinking":
			return &a.thinking, roleNone
		case "partial_json":
			return &a.partialJSON, roleNone
		}
	case roleContentBlock:
		if string(key) == "type" {
			return &x.itemType, roleNone
		}
	case roleError:
		switch string(key) {
		case "message":
			return &f.errMsg, roleNone
		case "type":
			return &a.errType, roleNone
		}
	}
	return nil, roleNone
}

// resetAnthropicUsage clears what an earlier usage object left.
func (d *Decoder) resetAnthropicUsage() {
	f, a := &d.f, &d.f.anthropic
	f.usage, f.prompt, f.completion = jsonValue{}, jsonValue{}, jsonValue{}
	a.cacheCreation, a.cacheRead = jsonValue{}, jsonValue{}
}

// decodeAnthropic classifies the Anthropic event just scanned.
func (d *Decoder) decodeAnthropic(name []byte, out *Chunk) error {
	x := &d.f.extra
	switch string(d.eventType(name)) {
	case "content_block_delta":
		return d.anthropicDelta(out)
	case "content_block_start":
		if x.itemType.t == jsonString {
			switch string(d.key(x.itemType.start, x.itemType.end, x.itemType.esc)) {
			case "tool_use", "server_tool_use":
				out.ToolCallsStarted = 1
			}
		}
	case "message_start":
		if err := d.anthropicUsage(out); err != nil || !out.HasUsage {
			return err
		}
		// Nothing is generated yet: the output count is message_delta's.
		out.CompletionTokens, out.CompletionGiven = -1, false
	case "message_delta":
		return d.anthropicUsage(out)
	case "error":
		return d.anthropicError()
	case "":
		if d.f.errValue.t != jsonNone {
			return d.anthropicError()
		}
	}
	return nil
}

// anthropicDelta makes out the token event of a content_block_delta.
func (d *Decoder) anthropicDelta(out *Chunk) error {
	x, a, f := &d.f.extra, &d.f.anthropic, &d.f
	switch {
	case x.delta.t == jsonNone:
		return fmt.Errorf("%w: content_block_delta has no \"delta\"", ErrMalformedChunk)
	case x.delta.t != jsonObject:
		return fmt.Errorf("%w: content_block_delta's \"delta\" is a JSON %s, not an object", ErrMalformedChunk, x.delta.t)
	}
	var typ []byte
	if a.deltaType.t == jsonString {
		typ = d.key(a.deltaType.start, a.deltaType.end, a.deltaType.esc)
	}
	switch string(typ) {
	case "signature_delta", "citations_delta":
		return nil
	case "":
		switch {
		case f.text.t != jsonNone:
			typ = []byte("text_delta")
		case a.thinking.t != jsonNone:
			typ = []byte("thinking_delta")
		case a.partialJSON.t != jsonNone:
			typ = []byte("input_json_delta")
		}
	}
	switch string(typ) {
	case "text_delta":
		if err := d.deltaString(&f.text, "text"); err != nil {
			return err
		}
		if f.text.t == jsonString {
			out.Text = d.unescape(d.text[:0], &f.text)
			d.text = out.Text
		}
	case "thinking_delta":
		if err := d.deltaString(&a.thinking, "thinking"); err != nil {
			return err
		}
		out.Reasoning = d.truthy(&a.thinking)
	case "input_json_delta":
		if err := d.deltaString(&a.partialJSON, "partial_json"); err != nil {
			return err
		}
		out.ToolCall = true
	}
	out.Token = true
	return nil
}

// deltaString checks that a delta's field, when truthy, is a string.
func (d *Decoder) deltaString(v *jsonValue, field string) error {
	if v.t != jsonString && d.truthy(v) {
		return fmt.Errorf("%w: delta.%s is a JSON %s, not a string", ErrMalformedChunk, field, v.t)
	}
	return nil
}

// anthropicUsage reads the usage of message_start or message_delta into
// out; an event without a truthy usage has none. The prompt count is
// input_tokens plus the cache counts the server gives beside it.
func (d *Decoder) anthropicUsage(out *Chunk) error {
	f, a := &d.f, &d.f.anthropic
	if !d.truthy(&f.usage) {
		return nil
	}
	if f.usage.t != jsonObject {
		return fmt.Errorf("%w: \"usage\" is a JSON %s, not an object", ErrMalformedChunk, f.usage.t)
	}
	out.HasUsage = true
	if prompt := d.count(&f.prompt); prompt >= 0 {
		for _, cached := range [...]*jsonValue{&a.cacheCreation, &a.cacheRead} {
			prompt += max(d.count(cached), 0)
		}
		out.PromptTokens = prompt
	}
	out.CompletionTokens = d.count(&f.completion)
	out.CompletionGiven = f.completion.t == jsonNumber
	return nil
}

// StreamError is an error event the server sent inside a stream (the
// Anthropic Messages API's "error" event, sent in place of the rest of the
// answer, e.g. overloaded_error): unlike an OpenAI error chunk, which
// Python passes over, it fails the request, whatever came before it.
// Type and Message are the error's, escaped and bounded as a failed
// answer's message is (MaxErrorMessage).
type StreamError struct {
	Type, Message string
}

func (e *StreamError) Error() string {
	var b strings.Builder
	b.WriteString("the server sent an error event")
	if e.Type != "" {
		b.WriteString(": ")
		b.WriteString(e.Type)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// anthropicError is the *StreamError of the error event just scanned:
// error.type and error.message; a string "error" is the message, and an
// error without a message string gives its JSON text (or, without an
// error object, the event's).
func (d *Decoder) anthropicError() error {
	f, a := &d.f, &d.f.anthropic
	e := &StreamError{}
	if f.errValue.t == jsonObject && a.errType.t == jsonString {
		e.Type = string(AppendEscaped(nil, d.unescape(nil, &a.errType), MaxErrorMessage))
	}
	e.Message = string(AppendEscaped(nil, d.responsesError("error"), MaxErrorMessage))
	return e
}
