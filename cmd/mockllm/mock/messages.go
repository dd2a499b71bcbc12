package mock

import (
	"strconv"

	"github.com/stampede-bench/stampede/httpwire"
	"github.com/valyala/fastjson"
)

// The Anthropic Messages API (POST /v1/messages) as vLLM serves it beside
// the OpenAI APIs: the request's "messages" and "system", and
// "max_tokens" (required); a stream of typed events, each "event: <type>"
// and its JSON data:
//
//	message_start         the message, usage.input_tokens
//	content_block_start   a thinking block (--reasoning-tokens), then a
//	ping                  text block or a tool_use block per --tool-calls
//	content_block_delta   × tokens: thinking_delta, text_delta or
//	                      input_json_delta
//	content_block_stop    (a thinking block's signature_delta before it)
//	content_block_start   the next block ...
//	message_delta         stop_reason, usage (input and output tokens)
//	message_stop
//
// Each token event is one content_block_delta on the timing model's
// schedule (carrying every token the event carries); the events that open
// and close blocks and the message go out in the same write as the delta
// beside them, so the truth log's T records are the deltas. Without
// "stream" the answer is the whole message. Errors are vLLM's, in the
// Messages API's shape: {"type": "error", "error": {"type", "message"}}.

func (s *Server) serveMessages(cn *conn, ls *loopState, req *httpRequest, arrivalNs int64) bool {
	return s.serveGeneration(cn, ls, req, arrivalNs, kindMessages)
}

// parseMessages decodes a /v1/messages body into g, with the checks
// parseResponses makes of the output length; the prompt is the system
// prompt's tokens and the messages'.
func (s *Server) parseMessages(p *fastjson.Parser, body []byte, ids *[]int32, g *genParams) *apiError {
	*g = genParams{chat: true, promptTokens: g.promptTokens[:0]}
	v, aerr := s.parseBody(p, body)
	if aerr != nil {
		return aerr
	}
	if aerr := s.checkModel(v); aerr != nil {
		return aerr
	}
	prompt, aerr := s.countMessages(v.Get("messages"), "messages", ids)
	if aerr != nil {
		return aerr
	}
	system, aerr := s.countSystem(v.Get("system"), ids)
	if aerr != nil {
		return aerr
	}
	g.promptTokens = append(g.promptTokens, prompt+system)
	if f := v.Get("max_tokens"); f == nil || f.Type() == fastjson.TypeNull {
		// The Messages API requires it.
		return invalid("max_tokens: Field required")
	}
	return s.parseTypedOptions(v, g, "max_tokens")
}

// countSystem counts the tokens of a Messages request's "system": a
// string, or a list of text blocks; absent or null is none.
func (s *Server) countSystem(v *fastjson.Value, ids *[]int32) (int, *apiError) {
	if v == nil || v.Type() == fastjson.TypeNull {
		return 0, nil
	}
	switch v.Type() {
	case fastjson.TypeString:
		sb, _ := v.StringBytes()
		*ids = s.cfg.Tokenizer.Encode((*ids)[:0], string(sb), false)
		return len(*ids), nil
	case fastjson.TypeArray:
		blocks, _ := v.Array()
		total := 0
		for i, b := range blocks {
			text := b.GetStringBytes("text")
			if b.Type() != fastjson.TypeObject || text == nil {
				return 0, invalid("system[%d]: want a text block", i)
			}
			*ids = s.cfg.Tokenizer.Encode((*ids)[:0], string(text), false)
			total += len(*ids)
		}
		return total, nil
	}
	return 0, invalid("system: want a string or a list of text blocks")
}

// stopReason is the Messages API's name for st's finish reason.
func (st *stream) stopReason() string {
	switch st.finishReason {
	case "length":
		return "max_tokens"
	case "tool_calls":
		return "tool_use"
	}
	return "end_turn"
}

// messagesEvent starts the data of one typed event: {"type":"<typ>",
func (e *encoder) messagesEvent(typ string) []byte {
	p := append(e.payload[:0], `{"type":"`...)
	p = append(p, typ...)
	return append(p, `",`...)
}

// appendMessageObject appends the message: its id, model and role, the
// content blocks (all of them when full, none when the stream starts),
// the stop reason and the usage (output tokens 0 when the stream starts).
func (e *encoder) appendMessageObject(p []byte, st *stream, full bool) []byte {
	ph := st.phases
	p = append(p, `{"id":"msg_`...)
	p = append(p, ph.id...)
	p = append(p, `","type":"message","role":"assistant","model":`...)
	p = append(p, ph.model...)
	p = append(p, `,"content":[`...)
	if full {
		for k := 0; k < st.outTokens; {
			phase, call := ph.item(st, k)
			start := k
			for k < st.outTokens {
				if p2, c2 := ph.item(st, k); p2 != phase || c2 != call {
					break
				}
				k++
			}
			if start > 0 {
				p = append(p, ',')
			}
			p = appendContentBlock(p, st, phase, call, start, k)
		}
	}
	p = append(p, `],"stop_reason":`...)
	if full {
		p = append(p, '"')
		p = append(p, st.stopReason()...)
		p = append(p, '"')
	} else {
		p = append(p, "null"...)
	}
	p = append(p, `,"stop_sequence":null,"usage":{"input_tokens":`...)
	p = strconv.AppendInt(p, int64(st.promptTotal), 10)
	p = append(p, `,"output_tokens":`...)
	out := 0
	if full {
		out = st.outTokens
	}
	p = strconv.AppendInt(p, int64(out), 10)
	return append(p, "}}"...)
}

// appendContentBlock appends one content block of phase and call: empty
// as content_block_start announces it (from == to), or holding the text of
// tokens [from, to) in a whole message.
func appendContentBlock(p []byte, st *stream, phase tokenPhase, call, from, to int) []byte {
	ph := st.phases
	words := func(p []byte) []byte {
		for k := from; k < to; k++ {
			p = append(p, st.word(k)...)
		}
		return p
	}
	switch phase {
	case phaseReasoning:
		p = append(p, `{"type":"thinking","thinking":"`...)
		p = words(p)
		p = append(p, `","signature":"`...)
		if to > from {
			p = append(p, ph.id...)
		}
		return append(p, `"}`...)
	case phaseToolCall:
		p = append(p, `{"type":"tool_use","id":"toolu_`...)
		p = append(p, ph.id[:24]...)
		p = strconv.AppendInt(p, int64(call), 10)
		p = append(p, `","name":"`+toolName+`","input":{`...)
		if to > from {
			p = append(p, `"query":"`...)
			p = words(p)
			p = append(p, '"')
		}
		return append(p, "}}"...)
	}
	p = append(p, `{"type":"text","text":"`...)
	p = words(p)
	return append(p, `"}`...)
}

// appendBlockEvent appends content_block_start or content_block_stop of
// the block ph has open; a thinking block's stop is preceded by its
// signature_delta, as vLLM sends it.
func (e *encoder) appendBlockEvent(dst []byte, st *stream, stop bool) []byte {
	ph := st.phases
	if stop && ph.blockPhase == phaseReasoning {
		p := e.messagesEvent("content_block_delta")
		p = append(p, `"index":`...)
		p = strconv.AppendInt(p, int64(ph.block), 10)
		p = append(p, `,"delta":{"type":"signature_delta","signature":"`...)
		p = append(p, ph.id...)
		p = append(p, `"}}`...)
		e.payload = p
		dst = e.appendTypedEvent(dst, "content_block_delta", p)
	}
	typ := "content_block_start"
	if stop {
		typ = "content_block_stop"
	}
	p := e.messagesEvent(typ)
	p = append(p, `"index":`...)
	p = strconv.AppendInt(p, int64(ph.block), 10)
	if !stop {
		p = append(p, `,"content_block":`...)
		p = appendContentBlock(p, st, ph.blockPhase, ph.blockCall, 0, 0)
	}
	p = append(p, '}')
	e.payload = p
	return e.appendTypedEvent(dst, typ, p)
}

// appendMessagesToken appends event k's content_block_delta, carrying the
// tokens the writer planned for it, and the events around it: the message
// and its first block before the first delta, a block's stop and the next
// block's start where the tokens pass from thinking to the answer or from
// one tool call to the next, and the message's end after the last.
func (e *encoder) appendMessagesToken(dst []byte, st *stream, k int) []byte {
	ph := st.phases
	if k == 0 {
		p := e.messagesEvent("message_start")
		p = append(p, `"message":`...)
		p = e.appendMessageObject(p, st, false)
		p = append(p, '}')
		e.payload = p
		dst = e.appendTypedEvent(dst, "message_start", p)
	}
	if phase, call := ph.item(st, st.done); ph.block < 0 || phase != ph.blockPhase || call != ph.blockCall {
		if ph.block >= 0 {
			dst = e.appendBlockEvent(dst, st, true)
		}
		ph.block++
		ph.blockPhase, ph.blockCall = phase, call
		dst = e.appendBlockEvent(dst, st, false)
		if ph.block == 0 {
			// Anthropic's API pings after the first block opens.
			e.payload = append(e.payload[:0], `{"type":"ping"}`...)
			dst = e.appendTypedEvent(dst, "ping", e.payload)
		}
	}

	p := e.messagesEvent("content_block_delta")
	p = append(p, `"index":`...)
	p = strconv.AppendInt(p, int64(ph.block), 10)
	switch ph.blockPhase {
	case phaseReasoning:
		p = append(p, `,"delta":{"type":"thinking_delta","thinking":"`...)
	case phaseToolCall:
		p = append(p, `,"delta":{"type":"input_json_delta","partial_json":"`...)
	default:
		p = append(p, `,"delta":{"type":"text_delta","text":"`...)
	}
	p = st.appendWords(p)
	p = append(p, `"}}`...)
	e.payload = p
	dst = e.appendTypedEvent(dst, "content_block_delta", p)

	if st.last(k) {
		dst = e.appendBlockEvent(dst, st, true)
		p := e.messagesEvent("message_delta")
		p = append(p, `"delta":{"stop_reason":"`...)
		p = append(p, st.stopReason()...)
		p = append(p, `","stop_sequence":null},"usage":{"input_tokens":`...)
		p = strconv.AppendInt(p, int64(st.promptTotal), 10)
		p = append(p, `,"output_tokens":`...)
		p = strconv.AppendInt(p, int64(st.outTokens), 10)
		p = append(p, "}}"...)
		e.payload = p
		dst = e.appendTypedEvent(dst, "message_delta", p)
		e.payload = append(e.payload[:0], `{"type":"message_stop"}`...)
		dst = e.appendTypedEvent(dst, "message_stop", e.payload)
		dst = httpwire.AppendLastChunk(dst)
	}
	return dst
}

// appendMessagesFull appends the whole HTTP response of a non-streaming
// Messages request.
func (e *encoder) appendMessagesFull(dst []byte, st *stream) []byte {
	e.payload = e.appendMessageObject(e.payload[:0], st, true)
	return appendJSONResponse(dst, 200, e.payload, st.closeAfter)
}

// anthropicErrorType is the Messages API's error type for a status, for
// the mock's own faults; vLLM keeps its own type names in the Messages
// shape, which the request errors do.
func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 404:
		return "not_found_error"
	case 429:
		return "rate_limit_error"
	case 503, 529:
		return "overloaded_error"
	}
	return "api_error"
}

// appendAnthropicErrorBody appends {"type":"error","error":{"type","message"}}.
func appendAnthropicErrorBody(dst []byte, typ, msg string) []byte {
	dst = append(dst, `{"type":"error","error":{"type":`...)
	dst, _ = appendJSONString(dst, typ)
	dst = append(dst, `,"message":`...)
	dst, _ = appendJSONString(dst, msg)
	return append(dst, "}}"...)
}
