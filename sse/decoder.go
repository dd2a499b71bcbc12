package sse

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// Kind selects the OpenAI response shape.
type Kind uint8

const (
	Completions Kind = iota // choices[0].text
	Chat                    // choices[0].delta.content (reasoning chunks still count)
	// Audio is Chat's shape as the transcription and translation function
	// reads it: usage gives only completion_tokens, its prompt_tokens is
	// never taken (spec §b, "No prompt_tokens handling").
	Audio
	// Responses is the Responses API's event stream (/v1/responses):
	// events told apart by their "type" (or SSE event name), see
	// responses.go.
	Responses
	// Anthropic is the Anthropic Messages API's event stream
	// (/v1/messages): message_start, content_block_delta, message_delta
	// and the rest, see anthropic.go.
	Anthropic
)

// String names the kind as the backends do.
func (k Kind) String() string {
	switch k {
	case Completions:
		return "completions"
	case Chat:
		return "chat"
	case Audio:
		return "audio"
	case Responses:
		return "responses"
	case Anthropic:
		return "anthropic"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Chunk is one decoded event. Text aliases the Decoder's internal buffer, valid until the next
// Decode.
type Chunk struct {
	Done     bool   // data was [DONE]
	Token    bool   // a token event per spec §b: a JSON object whose "choices" is a non-empty list
	Text     []byte // the token text (nil when null/missing; still a token event)
	HasUsage bool   // a truthy "usage" object outside a token event
	// From usage; -1 when the field is absent, null or not a number.
	PromptTokens, CompletionTokens int64
	// CompletionGiven: the chunk's usage object (a usage chunk's, or one
	// inside a token event) had a numeric completion_tokens, so that a
	// count the server gave as -1 is told from an absent one.
	CompletionGiven bool
	// RunningCompletionTokens is usage.completion_tokens inside a token
	// event: the running count a server sends in every chunk when asked
	// for stream_options.continuous_usage_stats (running.go). -1 when the
	// token event has no usage object or no numeric count. Python never
	// reads it, so it changes nothing else.
	RunningCompletionTokens int64
	// Message of an in-stream {"error": {...}} / {"message":...} object; when
	// the error carries no message string, its JSON text. Nil otherwise. Like
	// Python, Decode does not fail on it: the request fails later only if it
	// never received a token event.
	ErrMessage []byte

	// What stampede reads beyond Python (reasoning.go); none of it changes
	// Token, Text or the usage counts.
	//
	// Reasoning: a token event that carries reasoning text (chat's
	// delta.reasoning_content or delta.reasoning; a Responses reasoning or
	// reasoning summary delta). ToolCall: a token event that carries a
	// tool-call delta (chat's delta.tool_calls; a Responses
	// function_call_arguments delta). ToolCallsStarted counts the tool
	// calls the chunk opens (chat: tool_calls elements with an "id"; a
	// Responses output_item.added of a function_call).
	Reasoning, ToolCall bool
	ToolCallsStarted    int
	// ReasoningTokens is the usage's completion_tokens_details (chat) or
	// output_tokens_details (Responses) reasoning_tokens; -1 when absent.
	ReasoningTokens int64
}

// ErrMalformedChunk is wrapped by every Decode error but a *StreamError
// (an Anthropic error event, anthropic.go): the chunk is one on which
// `vllm bench serve` raises and fails the request.
var ErrMalformedChunk = errors.New("sse: malformed stream chunk")

// Decoder decodes OpenAI stream chunks; one per shard/caller, not safe for
// concurrent use. It reads each chunk in a single scan that validates it and
// keeps only the values an event needs (scan.go).
type Decoder struct {
	kind    Kind
	in      []byte    // the chunk being decoded
	f       fields    // what the scan kept of it
	err     error     // the scan's error
	discard jsonValue // where the scan puts a value it does not keep
	keyBuf  []byte    // an unescaped key
	text    []byte    // Chunk.Text
	errBuf  []byte    // Chunk.ErrMessage
	json    fastjson.Parser
}

// NewDecoder returns a Decoder for the given response shape.
func NewDecoder(kind Kind) *Decoder { return &Decoder{kind: kind} }

// Kind reports the response shape d decodes.
func (d *Decoder) Kind() Kind { return d.kind }

// Decode decodes one event's data into out. It returns an error exactly where Python's request
// function would raise (invalid JSON; chat token chunk without "delta"), with a clear message.
//
// The classification follows the request functions of `vllm bench serve`
// (spec §b) step by step:
//
//   - data "[DONE]" (surrounding whitespace ignored) ends the stream;
//   - anything else must be a JSON object (json.loads, then data.get);
//   - a truthy "choices" makes a token event; it must be a list whose first
//     element is an object, whose "text" (completions) or whose "delta"
//     object's "content" (chat) is a string or falsy; null, missing or
//     falsy text is an empty token;
//   - otherwise a truthy "usage" must be an object, and gives the token
//     counts (Audio: only completion_tokens);
//   - an error object is reported in ErrMessage and is not a Decode error.
//
// Where a JSON key repeats, the last occurrence counts, as in a Python dict.
// After an error out describes no event: Token, Done and HasUsage are false.
func (d *Decoder) Decode(data []byte, out *Chunk) error { return d.decode(data, nil, out) }

// DecodeEvent decodes one SSE event as Decode decodes its data; a
// Responses or Anthropic event without a "type" is known by the event's
// name. For the Anthropic kind an error event is returned as a
// *StreamError (anthropic.go).
func (d *Decoder) DecodeEvent(ev *Event, out *Chunk) error { return d.decode(ev.Data, ev.Name, out) }

func (d *Decoder) decode(data, name []byte, out *Chunk) error {
	*out = Chunk{PromptTokens: -1, CompletionTokens: -1, ReasoningTokens: -1, RunningCompletionTokens: -1}
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		out.Done = true
		return nil
	}
	// Python decodes the body as strict UTF-8 and parses with strict
	// json.loads; the scan checks both.
	d.in = data
	if err := d.scan(); err != nil {
		if !utf8.Valid(data) {
			return fmt.Errorf("%w: not valid UTF-8", ErrMalformedChunk)
		}
		return fmt.Errorf("%w: invalid JSON: %v", ErrMalformedChunk, err)
	}
	f := &d.f
	if f.top.t != jsonObject {
		return fmt.Errorf("%w: chunk is a JSON %s, not an object", ErrMalformedChunk, f.top.t)
	}
	switch d.kind {
	case Responses:
		return d.decodeResponses(name, out)
	case Anthropic:
		return d.decodeAnthropic(name, out)
	}
	if d.truthy(&f.choices) {
		if err := d.decodeToken(out); err != nil {
			return err
		}
		out.Token = true
		out.RunningCompletionTokens = d.runningCompletion()
		out.CompletionGiven = f.usage.t == jsonObject && f.completion.t == jsonNumber
		return nil
	}
	if d.truthy(&f.usage) {
		if f.usage.t != jsonObject {
			return fmt.Errorf("%w: \"usage\" is a JSON %s, not an object", ErrMalformedChunk, f.usage.t)
		}
		out.HasUsage = true
		if d.kind != Audio {
			out.PromptTokens = d.count(&f.prompt)
		}
		out.CompletionTokens = d.count(&f.completion)
		out.CompletionGiven = f.completion.t == jsonNumber
		out.ReasoningTokens = d.count(&f.extra.reasoningTokens)
	}
	out.ErrMessage = d.errorMessage()
	return nil
}

// decodeToken reads the text of a token chunk whose "choices" is truthy.
func (d *Decoder) decodeToken(out *Chunk) error {
	f := &d.f
	if f.choices.t != jsonArray {
		return fmt.Errorf("%w: \"choices\" is a JSON %s, not a list", ErrMalformedChunk, f.choices.t)
	}
	if f.first.t != jsonObject {
		return fmt.Errorf("%w: choices[0] is a JSON %s, not an object", ErrMalformedChunk, f.first.t)
	}
	if d.kind != Completions {
		if f.delta.t == jsonNone {
			return fmt.Errorf("%w: chat chunk has no \"delta\" in choices[0]", ErrMalformedChunk)
		}
		if f.delta.t != jsonObject {
			return fmt.Errorf("%w: choices[0].delta is a JSON %s, not an object", ErrMalformedChunk, f.delta.t)
		}
	}
	switch text := &f.text; {
	case text.t == jsonString:
		out.Text = d.unescape(d.text[:0], text)
		d.text = out.Text
	case d.truthy(text):
		// Python's `generated_text += text or ""` raises a TypeError.
		return fmt.Errorf("%w: token text is a JSON %s, not a string", ErrMalformedChunk, text.t)
	}
	d.deltaExtras(out)
	return nil
}

// unescape appends the text of string v to dst; never nil.
func (d *Decoder) unescape(dst []byte, v *jsonValue) []byte {
	if dst == nil {
		dst = make([]byte, 0, 64)
	}
	if !v.esc {
		return append(dst, d.raw(v)...)
	}
	return appendUnescaped(dst, d.raw(v))
}

// errorMessage returns the message of an in-stream error object: vLLM's
// {"error": {"message": ...}} (or {"error": "..."}), or the older top-level
// {"object": "error", "message": ...}.
func (d *Decoder) errorMessage() []byte {
	f := &d.f
	msg := &f.errMsg
	switch e := &f.errValue; e.t {
	case jsonObject:
	case jsonString:
		if e.end > e.start {
			d.errBuf = d.unescape(d.errBuf[:0], e)
			return d.errBuf
		}
		return nil
	default:
		if f.object.t != jsonString {
			return nil
		}
		if d.errBuf = d.unescape(d.errBuf[:0], &f.object); string(d.errBuf) != "error" {
			return nil
		}
		msg = &f.topMessage
	}
	if msg.t == jsonString && msg.end > msg.start {
		d.errBuf = d.unescape(d.errBuf[:0], msg)
		return d.errBuf
	}
	return d.marshalErrorHolder()
}

// marshalErrorHolder returns the JSON text of an error object that carries
// no message, in the form it has always taken: fastjson's re-encoding of the
// object after the reads the Decoder made of it (a read unescapes a string
// or an object's keys, which changes how fastjson writes them back). It runs
// only for such an error, so a second parse costs nothing per token.
func (d *Decoder) marshalErrorHolder() []byte {
	v, err := d.json.ParseBytes(d.in)
	if err != nil {
		return nil // the scan accepted it; fastjson accepts what the scan does
	}
	obj, _ := v.Object()
	// The reads Decode made of the top level, in order.
	truthy(LastField(obj, "choices"))
	if usage := LastField(obj, "usage"); truthy(usage) {
		u, _ := usage.Object()
		if d.kind != Audio {
			count(LastField(u, "prompt_tokens"))
		}
		count(LastField(u, "completion_tokens"))
	}
	holder := obj
	if e := LastField(obj, "error"); e != nil && e.Type() == fastjson.TypeObject {
		holder, _ = e.Object()
	} else if o := LastField(obj, "object"); o != nil {
		o.Type()
	}
	if m := LastField(holder, "message"); m != nil {
		m.Type()
	}
	d.errBuf = holder.MarshalTo(d.errBuf[:0])
	return d.errBuf
}

// LastField returns the value of the last occurrence of key in o, or nil.
// fastjson's Get returns the first; Python's dict keeps the last.
func LastField(o *fastjson.Object, key string) *fastjson.Value {
	var found *fastjson.Value
	o.Visit(func(k []byte, v *fastjson.Value) {
		if string(k) == key {
			found = v
		}
	})
	return found
}

// truthy is Python's bool() of a parsed JSON value; a missing value (nil) is
// falsy like the None that dict.get returns.
func truthy(v *fastjson.Value) bool {
	if v == nil {
		return false
	}
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		return o.Len() > 0
	case fastjson.TypeArray:
		a, _ := v.Array()
		return len(a) > 0
	case fastjson.TypeString:
		s, _ := v.StringBytes()
		return len(s) > 0
	case fastjson.TypeNumber:
		f, err := v.Float64()
		return err != nil || f != 0
	case fastjson.TypeTrue:
		return true
	}
	return false
}

// count reads a token count; -1 stands for a missing, null or non-numeric
// field (Python would carry None, or the odd value, onwards).
func count(v *fastjson.Value) int64 {
	if v == nil || v.Type() != fastjson.TypeNumber {
		return -1
	}
	if n, err := v.Int64(); err == nil {
		return n
	}
	f, err := v.Float64()
	if err != nil {
		return -1
	}
	return int64(f)
}
