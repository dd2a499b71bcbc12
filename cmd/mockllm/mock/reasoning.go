package mock

import "strconv"

// A reasoning model's stream: the first Config.ReasoningTokens output
// tokens are its thinking, the rest its answer, which with
// Config.ToolCalls is that many tool calls (their arguments streamed a
// token at a time) instead of text. Chat streams them as vLLM does with a
// reasoning parser and a tool parser:
//
//	{"delta":{"reasoning":"Let"}}                                  reasoning
//	{"delta":{"tool_calls":[{"index":0,"id":"chatcmpl-tool-…","type":"function","function":{"name":"lookup","arguments":"x"}}]}}
//	{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"y"}}]}}
//	{"delta":{"content":"the"}}                                    answer text
//
// the Responses API as reasoning_text, function_call_arguments and
// output_text deltas (responses.go), and the Messages API as thinking,
// tool_use and text blocks (messages.go). Every token is still one event, so
// the timing model is unchanged.

// phases is a stream's split of its output tokens, and the Responses
// API's running state. The writer alone touches it.
type phases struct {
	reasoning int    // tokens [0, reasoning) are reasoning
	calls     int    // tool calls the answer is split into (0: text)
	id        string // 32 hex digits naming the stream's items

	// Responses: the next sequence_number, and the request's facts its
	// events repeat.
	seq       int
	createdAt int64
	maxOutput int
	model     []byte // the model name as a JSON string

	// Messages: the index of the content block open (-1 before the
	// first) and what it holds.
	block      int
	blockPhase tokenPhase
	blockCall  int
}

// newPhases returns st's phases: nil for a completions stream or a plain
// chat stream, so those stay as they were.
func (s *Server) newPhases(st *stream, arrivalNs int64) *phases {
	typed := st.kind == kindResponses || st.kind == kindMessages
	if !typed && (st.kind != kindChat || s.cfg.ReasoningTokens == 0 && s.cfg.ToolCalls == 0) {
		return nil
	}
	ph := &phases{reasoning: min(s.cfg.ReasoningTokens, st.outTokens), id: s.hexID(st.key, st.seq),
		createdAt: s.clock.unixSec(arrivalNs), maxOutput: st.outTokens, model: s.model, block: -1}
	ph.calls = min(s.cfg.ToolCalls, st.outTokens-ph.reasoning)
	if ph.calls > 0 {
		st.finishReason = "tool_calls"
	}
	return ph
}

// tokenPhase says what output token k is: reasoning, a tool call's
// argument (call is its index, opens when it is the call's first token),
// or answer text.
type tokenPhase uint8

const (
	phaseReasoning tokenPhase = iota
	phaseToolCall
	phaseAnswer
)

func (ph *phases) of(st *stream, k int) (p tokenPhase, call int, opens bool) {
	if k < ph.reasoning {
		return phaseReasoning, 0, false
	}
	if ph.calls == 0 {
		return phaseAnswer, 0, false
	}
	answer := st.outTokens - ph.reasoning
	i := k - ph.reasoning
	call = i * ph.calls / answer
	return phaseToolCall, call, i == 0 || (i-1)*ph.calls/answer != call
}

// toolName is the function every mock tool call calls.
const toolName = "lookup"

// chatPhasePayload encodes token k of a chat stream with phases.
func (e *encoder) chatPhasePayload(st *stream, choice, k int) []byte {
	ph := st.phases
	p := append(e.payload[:0], st.prefix...)
	p = append(p, `{"index":`...)
	p = strconv.AppendInt(p, int64(choice), 10)
	switch phase, call, opens := ph.of(st, k); phase {
	case phaseReasoning:
		p = append(p, `,"delta":{"reasoning":"`...)
		p = append(p, st.word(k)...)
		p = append(p, `"}`...)
	case phaseToolCall:
		p = append(p, `,"delta":{"tool_calls":[{"index":`...)
		p = strconv.AppendInt(p, int64(call), 10)
		if opens {
			p = append(p, `,"id":"chatcmpl-tool-`...)
			p = append(p, ph.id[:24]...)
			p = strconv.AppendInt(p, int64(call), 10)
			p = append(p, `","type":"function","function":{"name":"`+toolName+`","arguments":"`...)
		} else {
			p = append(p, `,"function":{"arguments":"`...)
		}
		p = append(p, st.word(k)...)
		p = append(p, `"}}]}`...)
	default:
		p = append(p, `,"delta":{"content":"`...)
		p = append(p, st.word(k)...)
		p = append(p, `"}`...)
	}
	p = append(p, `,"logprobs":null,"finish_reason":`...)
	if st.last(k) {
		p = append(p, '"')
		p = append(p, st.finishReason...)
		p = append(p, `","stop_reason":null}]}`...)
	} else {
		p = append(p, `null}]}`...)
	}
	e.payload = p
	return p
}
