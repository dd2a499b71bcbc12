package mock

import (
	"strconv"

	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/sse"
	"github.com/valyala/fastjson"
)

// The Responses API (POST /v1/responses) as vLLM serves it: the request's
// "input" (a string or a list of messages) and "max_output_tokens"; a
// stream of typed events, each "event: <type>" and its JSON data:
//
//	response.created
//	response.output_item.added      (reasoning)      when --reasoning-tokens
//	response.reasoning_text.delta   × reasoning tokens
//	response.output_item.done
//	response.output_item.added      (function_call)  per --tool-calls call
//	response.function_call_arguments.delta × its tokens
//	response.output_item.done
//	response.output_item.added      (message)        without tool calls
//	response.content_part.added
//	response.output_text.delta      × answer tokens
//	response.output_item.done
//	response.completed              with usage (status "incomplete" when
//	                                max_output_tokens ended it, as vLLM)
//
// Each output token is one delta event on the timing model's schedule;
// the events that open and close items go out with the token beside them.
// Without "stream" the answer is the whole response object.

func (s *Server) serveResponses(cn *conn, ls *loopState, req *httpRequest, arrivalNs int64) bool {
	return s.serveGeneration(cn, ls, req, arrivalNs, kindResponses)
}

// parseResponses decodes a /v1/responses body into g, with the checks
// parseGeneration makes of max_tokens made of max_output_tokens.
func (s *Server) parseResponses(p *fastjson.Parser, body []byte, ids *[]int32, g *genParams) *apiError {
	*g = genParams{chat: true, promptTokens: g.promptTokens[:0]}
	v, aerr := s.parseBody(p, body)
	if aerr != nil {
		return aerr
	}
	if aerr := s.checkModel(v); aerr != nil {
		return aerr
	}
	switch input := v.Get("input"); {
	case input != nil && input.Type() == fastjson.TypeString:
		if g.promptTokens, aerr = s.countPrompts(input, "input", true, ids, g.promptTokens); aerr != nil {
			return aerr
		}
	case input != nil && input.Type() == fastjson.TypeArray:
		n, aerr := s.countMessages(input, "input", ids)
		if aerr != nil {
			return aerr
		}
		g.promptTokens = append(g.promptTokens, n)
	default:
		return invalid("input: want a string or a list of messages")
	}
	return s.parseTypedOptions(v, g, "max_output_tokens")
}

// parseTypedOptions reads the options the Responses and Messages bodies
// share into g ("stream", "ignore_eos", "min_tokens" and the output
// length under maxKey) and checks the length against the prompt, g's one
// count, as vLLM does; an absent length is what the model has room for.
func (s *Server) parseTypedOptions(v *fastjson.Value, g *genParams, maxKey string) *apiError {
	var err error
	if g.streaming, err = optBool(v, "stream"); err != nil {
		return invalid("stream: %v", err)
	}
	if g.ignoreEOS, err = optBool(v, "ignore_eos"); err != nil {
		return invalid("ignore_eos: %v", err)
	}
	if g.minTokens, err = optInt(v, "min_tokens", 0); err != nil || g.minTokens < 0 {
		return invalid("min_tokens: want an integer >= 0")
	}
	if g.maxTokens, err = optInt(v, maxKey, -1); err != nil {
		return invalid("%s: %v", maxKey, err)
	}
	prompt := g.promptTokens[0]
	switch {
	case prompt >= s.cfg.MaxModelLen:
		return invalid("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.", s.cfg.MaxModelLen, prompt)
	case g.maxTokens == -1 && s.cfg.DefaultMaxTokens > 0:
		g.maxTokens = min(s.cfg.DefaultMaxTokens, s.cfg.MaxModelLen-prompt)
	case g.maxTokens == -1:
		g.maxTokens = s.cfg.MaxModelLen - prompt
	case g.maxTokens < 1:
		return invalid("%s must be at least 1, got %d.", maxKey, g.maxTokens)
	case prompt+g.maxTokens > s.cfg.MaxModelLen:
		return invalid("'%s' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens.", maxKey, g.maxTokens, s.cfg.MaxModelLen, prompt)
	}
	if g.minTokens > g.maxTokens {
		return invalid("min_tokens must be less than or equal to %s=%d, got %d.", maxKey, g.maxTokens, g.minTokens)
	}
	return nil
}

// item names the output item token k belongs to: its phase and call.
func (ph *phases) item(st *stream, k int) (tokenPhase, int) {
	phase, call, _ := ph.of(st, k)
	return phase, call
}

// outputIndex is the index in "output" of the item of phase and call.
func (ph *phases) outputIndex(phase tokenPhase, call int) int {
	i := 0
	if ph.reasoning > 0 && phase != phaseReasoning {
		i = 1
	}
	if phase == phaseToolCall {
		i += call
	}
	return i
}

// appendTypedEvent frames payload as one typed SSE event in one HTTP chunk.
func (e *encoder) appendTypedEvent(dst []byte, typ string, payload []byte) []byte {
	e.event = append(e.event[:0], "event: "...)
	e.event = append(e.event, typ...)
	e.event = append(e.event, '\n')
	e.event = sse.AppendData(e.event, payload)
	return httpwire.AppendChunk(dst, e.event)
}

// eventHead starts an event's JSON: {"type":typ,"sequence_number":n,
func (e *encoder) eventHead(ph *phases, typ string) []byte {
	p := append(e.payload[:0], `{"type":"`...)
	p = append(p, typ...)
	p = append(p, `","sequence_number":`...)
	p = strconv.AppendInt(p, int64(ph.seq), 10)
	ph.seq++
	return append(p, ',')
}

func (e *encoder) appendItemID(p []byte, ph *phases, phase tokenPhase, call int) []byte {
	switch phase {
	case phaseReasoning:
		p = append(p, "rs_"...)
	case phaseToolCall:
		p = append(p, "fc_"...)
	default:
		p = append(p, "msg_"...)
	}
	p = append(p, ph.id...)
	if phase == phaseToolCall {
		p = strconv.AppendInt(p, int64(call), 10)
	}
	return p
}

// appendItem appends an output item; text is its whole text in a full
// response, or nil for an item as output_item.added announces it.
func (e *encoder) appendItem(p []byte, ph *phases, phase tokenPhase, call int, text []byte, done bool) []byte {
	status := "in_progress"
	if done {
		status = "completed"
	}
	p = append(p, `{"id":"`...)
	p = e.appendItemID(p, ph, phase, call)
	switch phase {
	case phaseReasoning:
		p = append(p, `","type":"reasoning","summary":[],"content":[`...)
		if text != nil {
			p = append(p, `{"type":"reasoning_text","text":"`...)
			p = append(p, text...)
			p = append(p, `"}`...)
		}
		p = append(p, `],"status":"`...)
	case phaseToolCall:
		p = append(p, `","type":"function_call","call_id":"call_`...)
		p = append(p, ph.id[:24]...)
		p = strconv.AppendInt(p, int64(call), 10)
		p = append(p, `","name":"`+toolName+`","arguments":"`...)
		p = append(p, text...)
		p = append(p, `","status":"`...)
	default:
		p = append(p, `","type":"message","role":"assistant","content":[`...)
		if text != nil {
			p = append(p, `{"type":"output_text","text":"`...)
			p = append(p, text...)
			p = append(p, `","annotations":[],"logprobs":null}`...)
		}
		p = append(p, `],"status":"`...)
	}
	p = append(p, status...)
	return append(p, `"}`...)
}

// appendItemEvent appends output_item.added or output_item.done.
func (e *encoder) appendItemEvent(dst []byte, ph *phases, phase tokenPhase, call int, done bool) []byte {
	typ := "response.output_item.added"
	if done {
		typ = "response.output_item.done"
	}
	p := e.eventHead(ph, typ)
	p = append(p, `"output_index":`...)
	p = strconv.AppendInt(p, int64(ph.outputIndex(phase, call)), 10)
	p = append(p, `,"item":`...)
	p = e.appendItem(p, ph, phase, call, nil, done)
	p = append(p, '}')
	e.payload = p
	dst = e.appendTypedEvent(dst, typ, p)
	if phase == phaseAnswer && !done {
		p = e.eventHead(ph, "response.content_part.added")
		p = append(p, `"item_id":"`...)
		p = e.appendItemID(p, ph, phase, call)
		p = append(p, `","output_index":`...)
		p = strconv.AppendInt(p, int64(ph.outputIndex(phase, call)), 10)
		p = append(p, `,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`...)
		e.payload = p
		dst = e.appendTypedEvent(dst, "response.content_part.added", p)
	}
	return dst
}

// appendResponseObject appends the response object: status, output (the
// items' whole text when full), usage (when ended).
func (e *encoder) appendResponseObject(p []byte, st *stream, status string, full, ended bool) []byte {
	ph := st.phases
	p = append(p, `{"id":"resp_`...)
	p = append(p, ph.id...)
	p = append(p, `","object":"response","created_at":`...)
	p = strconv.AppendInt(p, ph.createdAt, 10)
	p = append(p, `,"model":`...)
	p = append(p, ph.model...)
	p = append(p, `,"status":"`...)
	p = append(p, status...)
	p = append(p, `","incomplete_details":`...)
	if status == "incomplete" {
		p = append(p, `{"reason":"max_output_tokens"}`...)
	} else {
		p = append(p, "null"...)
	}
	p = append(p, `,"max_output_tokens":`...)
	p = strconv.AppendInt(p, int64(ph.maxOutput), 10)
	p = append(p, `,"output":[`...)
	if full {
		for k := 0; k < st.outTokens; {
			phase, call := ph.item(st, k)
			var text []byte
			for ; k < st.outTokens; k++ {
				if ph2, c2 := ph.item(st, k); ph2 != phase || c2 != call {
					break
				}
				text = append(text, st.word(k)...)
			}
			if p[len(p)-1] != '[' {
				p = append(p, ',')
			}
			p = e.appendItem(p, ph, phase, call, text, true)
		}
	}
	p = append(p, `],"error":null,"usage":`...)
	if !ended {
		return append(p, "null}"...)
	}
	p = append(p, `{"input_tokens":`...)
	p = strconv.AppendInt(p, int64(st.promptTotal), 10)
	p = append(p, `,"input_tokens_details":{"cached_tokens":0},"output_tokens":`...)
	p = strconv.AppendInt(p, int64(st.outTokens), 10)
	p = append(p, `,"output_tokens_details":{"reasoning_tokens":`...)
	p = strconv.AppendInt(p, int64(ph.reasoning), 10)
	p = append(p, `},"total_tokens":`...)
	p = strconv.AppendInt(p, int64(st.promptTotal+st.outTokens), 10)
	return append(p, "}}"...)
}

// status is the response's final status: "incomplete" when
// max_output_tokens ended it.
func (st *stream) responseStatus() string {
	if st.finishReason == "length" {
		return "incomplete"
	}
	return "completed"
}

// appendResponsesToken appends token k's delta event and the events that
// open or close items around it.
func (e *encoder) appendResponsesToken(dst []byte, st *stream, k int) []byte {
	ph := st.phases
	if k == 0 {
		p := e.eventHead(ph, "response.created")
		p = append(p, `"response":`...)
		p = e.appendResponseObject(p, st, "in_progress", false, false)
		p = append(p, '}')
		e.payload = p
		dst = e.appendTypedEvent(dst, "response.created", p)
	}
	phase, call := ph.item(st, k)
	if k == 0 {
		dst = e.appendItemEvent(dst, ph, phase, call, false)
	} else if prev, prevCall := ph.item(st, k-1); prev != phase || prevCall != call {
		dst = e.appendItemEvent(dst, ph, prev, prevCall, true)
		dst = e.appendItemEvent(dst, ph, phase, call, false)
	}

	typ := "response.output_text.delta"
	switch phase {
	case phaseReasoning:
		typ = "response.reasoning_text.delta"
	case phaseToolCall:
		typ = "response.function_call_arguments.delta"
	}
	p := e.eventHead(ph, typ)
	p = append(p, `"item_id":"`...)
	p = e.appendItemID(p, ph, phase, call)
	p = append(p, `","output_index":`...)
	p = strconv.AppendInt(p, int64(ph.outputIndex(phase, call)), 10)
	if phase != phaseToolCall {
		p = append(p, `,"content_index":0`...)
	}
	p = append(p, `,"delta":"`...)
	p = append(p, st.word(k)...)
	p = append(p, '"')
	if phase == phaseAnswer {
		p = append(p, `,"logprobs":[]`...)
	}
	p = append(p, '}')
	e.payload = p
	dst = e.appendTypedEvent(dst, typ, p)

	if st.last(k) {
		dst = e.appendItemEvent(dst, ph, phase, call, true)
		p := e.eventHead(ph, "response.completed")
		p = append(p, `"response":`...)
		p = e.appendResponseObject(p, st, st.responseStatus(), false, true)
		p = append(p, '}')
		e.payload = p
		dst = e.appendTypedEvent(dst, "response.completed", p)
		dst = httpwire.AppendLastChunk(dst)
	}
	return dst
}

// appendResponsesFull appends the whole HTTP response of a non-streaming
// Responses request.
func (e *encoder) appendResponsesFull(dst []byte, st *stream) []byte {
	e.payload = e.appendResponseObject(e.payload[:0], st, st.responseStatus(), true, true)
	return appendJSONResponse(dst, 200, e.payload, st.closeAfter)
}
