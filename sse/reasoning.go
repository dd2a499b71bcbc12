package sse

// Reasoning and tool calls in chat chunks, and the values the Responses
// decoder (responses.go) keeps, read by the same one-pass scan (scan.go).
//
// Python's chat function counts a chunk as a token event whenever its
// "choices" is a non-empty list, so a chunk that carries only
// delta.reasoning_content, delta.reasoning or delta.tool_calls is a token
// event (it sets TTFT and adds an ITL), and only delta.content goes into
// the generated text. Decode keeps exactly that; what it reads here is
// stampede's own account (Chunk.Reasoning, ToolCall, ToolCallsStarted,
// ReasoningTokens), which never changes Token, Text or the usage counts.

// extraFields are the values a scan keeps beyond Python's.
type extraFields struct {
	// Chat: choices[0].delta's reasoning texts and tool calls, and the
	// tool_calls elements that carry a non-empty "id" (a call's first
	// delta). toolID is the element being scanned.
	reasoningContent, reasoning, toolCalls jsonValue
	toolElem, toolID                       jsonValue
	toolCallsStarted                       int

	// usage.completion_tokens_details.reasoning_tokens (chat), or
	// response.usage.output_tokens_details.reasoning_tokens (Responses).
	details, reasoningTokens jsonValue

	// Responses: the event's "type" and "delta", its "response" object
	// and its "item"'s "type".
	typ, delta, response, item, itemType jsonValue
}

// resetDelta clears what a previous occurrence of "choices" or "delta"
// left, as the last occurrence of a key wins.
func (x *extraFields) resetDelta() {
	x.reasoningContent, x.reasoning, x.toolCalls, x.toolID = jsonValue{}, jsonValue{}, jsonValue{}, jsonValue{}
	x.toolCallsStarted = 0
}

// extraSlot is slot's part for the values above: where to keep the value
// of key in an object of role r, and ok when the key is one of them.
func (d *Decoder) extraSlot(r role, key []byte) (slot *jsonValue, sub role, ok bool) {
	x := &d.f.extra
	responses := d.kind == Responses
	switch r {
	case roleTop:
		if !responses {
			return nil, roleNone, false
		}
		switch string(key) {
		case "type":
			return &x.typ, roleNone, true
		case "delta":
			return &x.delta, roleNone, true
		case "response":
			d.f.usage, d.f.prompt, d.f.completion = jsonValue{}, jsonValue{}, jsonValue{}
			x.details, x.reasoningTokens = jsonValue{}, jsonValue{}
			return &x.response, roleResponse, true
		case "item":
			x.itemType = jsonValue{}
			return &x.item, roleItem, true
		}
	case roleResponse:
		switch string(key) {
		case "usage":
			d.f.prompt, d.f.completion = jsonValue{}, jsonValue{}
			x.details, x.reasoningTokens = jsonValue{}, jsonValue{}
			return &d.f.usage, roleUsage, true
		case "error":
			d.f.errMsg = jsonValue{}
			return &d.f.errValue, roleError, true
		}
	case roleItem:
		if string(key) == "type" {
			return &x.itemType, roleNone, true
		}
	case roleDelta:
		switch string(key) {
		case "reasoning_content":
			return &x.reasoningContent, roleNone, true
		case "reasoning":
			return &x.reasoning, roleNone, true
		case "tool_calls":
			x.toolCallsStarted = 0
			return &x.toolCalls, roleToolCalls, true
		}
	case roleToolCall:
		if string(key) == "id" {
			return &x.toolID, roleNone, true
		}
	case roleUsage:
		switch {
		case responses && string(key) == "input_tokens":
			return &d.f.prompt, roleNone, true
		case responses && string(key) == "output_tokens":
			return &d.f.completion, roleNone, true
		case responses && (string(key) == "prompt_tokens" || string(key) == "completion_tokens"):
			// Not the Responses API's names: not read.
			return &d.discard, roleNone, true
		case string(key) == "completion_tokens_details" && !responses,
			string(key) == "output_tokens_details" && responses:
			x.reasoningTokens = jsonValue{}
			return &x.details, roleUsageDetails, true
		}
	case roleUsageDetails:
		if string(key) == "reasoning_tokens" {
			return &x.reasoningTokens, roleNone, true
		}
	}
	return nil, roleNone, false
}

// toolCallSlot is where the scan puts the next element of tool_calls.
func (d *Decoder) toolCallSlot() (*jsonValue, role) {
	d.f.extra.toolID = jsonValue{}
	return &d.f.extra.toolElem, roleToolCall
}

// countToolCall counts the element of tool_calls just scanned if it opens
// a call: an object with a non-empty "id", which OpenAI and vLLM send in a
// call's first delta only.
func (d *Decoder) countToolCall() {
	x := &d.f.extra
	if x.toolElem.t == jsonObject && x.toolID.t == jsonString && x.toolID.end > x.toolID.start {
		x.toolCallsStarted++
	}
}

// deltaExtras reads a chat token chunk's reasoning and tool calls. Python
// reads neither, so a value of any type is taken for its truth and never
// fails the chunk.
func (d *Decoder) deltaExtras(out *Chunk) {
	if d.kind == Completions {
		return
	}
	x := &d.f.extra
	out.Reasoning = d.truthy(&x.reasoningContent) || d.truthy(&x.reasoning)
	if x.toolCalls.t == jsonArray && !x.toolCalls.empty {
		out.ToolCall = true
		out.ToolCallsStarted = x.toolCallsStarted
	}
}
