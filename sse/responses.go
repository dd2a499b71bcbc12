package sse

import "fmt"

// The Responses API (POST /v1/responses with "stream": true) streams typed
// events, each an SSE event whose "event:" field and data "type" name it:
//
//	event: response.output_text.delta
//	data: {"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":" the","sequence_number":7}
//
// The Decoder reads them in the same one-pass scan as the chat chunks and
// classifies them as the chat function classifies chunks: an event that
// carries generated output is a token event (TTFT is the first of them,
// each later one adds an ITL), and only the answer's text is the
// generated text.
//
//   - response.output_text.delta: a token event, Text the "delta";
//   - response.reasoning_text.delta, response.reasoning_summary_text.delta:
//     a token event without text, Reasoning when the delta is non-empty
//     (as chat's reasoning chunks count and add no text);
//   - response.function_call_arguments.delta: a token event without text,
//     ToolCall (as chat's tool_calls chunks count);
//   - response.refusal.delta: a token event without text;
//   - response.output_item.added of an item of type "function_call":
//     ToolCallsStarted = 1 (not a token event: no token yet);
//   - response.completed, response.incomplete: usage from
//     response.usage (input_tokens, output_tokens,
//     output_tokens_details.reasoning_tokens);
//   - response.failed and error: ErrMessage (response.error.message, or
//     the error event's "message"), which, as in-stream errors of chat,
//     fails the request only if it never received a token event;
//   - anything else (response.created, output_item.done, ...) is passed
//     over, and so is [DONE], which a Responses stream does not send.
//
// The data's "type" names the event; the SSE event name stands in when
// the data has none. A delta that is present and truthy must be a string,
// as chat's content must.
func (d *Decoder) decodeResponses(name []byte, out *Chunk) error {
	x := &d.f.extra
	typ := d.eventType(name)
	switch string(typ) {
	case "response.output_text.delta":
		if err := d.responsesDelta(out, true); err != nil {
			return err
		}
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		if err := d.responsesDelta(out, false); err != nil {
			return err
		}
		out.Reasoning = d.truthy(&x.delta)
	case "response.function_call_arguments.delta":
		if err := d.responsesDelta(out, false); err != nil {
			return err
		}
		out.ToolCall = true
	case "response.refusal.delta":
		if err := d.responsesDelta(out, false); err != nil {
			return err
		}
	case "response.output_item.added":
		if x.itemType.t == jsonString && string(d.key(x.itemType.start, x.itemType.end, x.itemType.esc)) == "function_call" {
			out.ToolCallsStarted = 1
		}
	case "response.completed", "response.incomplete":
		if !d.truthy(&x.response) || !d.truthy(&d.f.usage) {
			return nil
		}
		if x.response.t != jsonObject {
			return fmt.Errorf("%w: \"response\" is a JSON %s, not an object", ErrMalformedChunk, x.response.t)
		}
		if d.f.usage.t != jsonObject {
			return fmt.Errorf("%w: response.usage is a JSON %s, not an object", ErrMalformedChunk, d.f.usage.t)
		}
		out.HasUsage = true
		out.PromptTokens = d.count(&d.f.prompt)
		out.CompletionTokens = d.count(&d.f.completion)
		out.CompletionGiven = d.f.completion.t == jsonNumber
		out.ReasoningTokens = d.count(&x.reasoningTokens)
	case "response.failed", "error":
		out.ErrMessage = d.responsesError(string(typ))
	}
	return nil
}

// eventType is the type of the typed event just scanned: its data's
// "type" string, else the SSE event's name.
func (d *Decoder) eventType(name []byte) []byte {
	if t := &d.f.extra.typ; t.t == jsonString {
		return d.key(t.start, t.end, t.esc)
	}
	return name
}

// responsesDelta makes out a token event with the event's delta; the text
// is kept only for the answer's own text.
func (d *Decoder) responsesDelta(out *Chunk, answer bool) error {
	delta := &d.f.extra.delta
	switch {
	case delta.t == jsonString:
		if answer {
			out.Text = d.unescape(d.text[:0], delta)
			d.text = out.Text
		}
	case d.truthy(delta):
		return fmt.Errorf("%w: \"delta\" is a JSON %s, not a string", ErrMalformedChunk, delta.t)
	}
	out.Token = true
	return nil
}

// responsesError is the message of a response.failed event
// (response.error.message) or an error event ("message", or
// error.message); when there is none, the JSON text of the error (or of
// the whole event).
func (d *Decoder) responsesError(typ string) []byte {
	f := &d.f
	if typ == "error" && f.topMessage.t == jsonString && f.topMessage.end > f.topMessage.start {
		d.errBuf = d.unescape(d.errBuf[:0], &f.topMessage)
		return d.errBuf
	}
	switch e := &f.errValue; {
	case e.t == jsonObject && f.errMsg.t == jsonString && f.errMsg.end > f.errMsg.start:
		d.errBuf = d.unescape(d.errBuf[:0], &f.errMsg)
	case e.t == jsonString && e.end > e.start:
		d.errBuf = d.unescape(d.errBuf[:0], e)
	case e.t == jsonObject && !e.empty:
		d.errBuf = append(d.errBuf[:0], d.raw(e)...)
	default:
		d.errBuf = append(d.errBuf[:0], d.in...)
	}
	return d.errBuf
}
