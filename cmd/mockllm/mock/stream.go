package mock

import (
	"strconv"

	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/sse"
)

// streamKind is what a scheduled request produces.
type streamKind uint8

const (
	kindCompletion streamKind = iota
	kindChat
	// kindPooled is an embeddings, pooling or rerank request: one prebuilt
	// JSON response sent when its prefill is done.
	kindPooled
	// kindResponses is a /v1/responses request: typed events (responses.go).
	kindResponses
	// kindMessages is a /v1/messages request: the Anthropic Messages
	// API's typed events (messages.go).
	kindMessages
)

// stream is one request on the generation schedule. The event loop fills
// it in and hands it to the writer; from then on only the writer touches
// it, except for conn, whose shared fields are guarded by conn.mu.
type stream struct {
	conn      *conn
	kind      streamKind
	seq       uint64 // 1-based order of arrival among scheduled requests
	key       uint64 // draw key: hash of x-request-id, else seq
	requestID string
	// traceID is the traceparent's trace id, when traced (the span
	// exporter only).
	traceID   [16]byte
	traced    bool
	arrivalNs int64
	// arrival locates the request's first byte for the arrival tap.
	arrival arrivalKey
	// headersNs is when the streaming headers were written (0: not yet).
	headersNs int64

	streaming    bool
	includeUsage bool
	// continuousUsage: stream_options.continuous_usage_stats with
	// include_usage, a running usage in every chunk (chunks.go).
	continuousUsage bool
	// promptTokens is the prompt length of each choice (several for a
	// batched completions prompt).
	promptTokens []int
	promptTotal  int
	// cachedTokens of the prompt were found in the prefix cache: prefill
	// skips them.
	cachedTokens int
	// outTokens is how many tokens each choice gets; finishReason is
	// "length" when that is max_tokens, else "stop".
	outTokens    int
	finishReason string
	closeAfter   bool
	fault        *Fault
	faultAt      int // token index of a mid-stream fault
	// prefix opens every chunk: {"id":..,"object":..,"created":..,"model":..,"choices":[
	prefix   []byte
	wordSalt uint64
	// pooled is the whole response of a kindPooled request.
	pooled []byte
	// phases is the reasoning phase and tool calls of a chat stream, and
	// the Responses and Messages APIs' item state (reasoning.go); nil for
	// a plain one.
	phases *phases

	// Writer-owned schedule state.
	next         int   // index of the next event to send
	done         int   // tokens sent before event next
	carry        int   // tokens event next carries, 0 until planned (chunks.go)
	headersSent  bool  // streaming headers have been written
	headersDueNs int64 // when delayed headers go out (slow-headers fault)
	readyNs      int64 // earliest time of the first token (TTFT + prefill)
	dueNs        int64 // per-stream mode: time of the next event
	admitStepNs  int64 // decode-step mode: the step that admitted it
	stallNs      int64 // decode-step mode: no token before this time
	stalled      bool  // the stall fault has been applied
	lastSentNs   int64
	firstSentNs  int64 // when token 0 went out (0: not yet)
	admittedNs   int64 // when it left the waiting queue
	kvHeld       int64 // tokens it holds in the modelled KV cache
}

// word returns the generated text of token k.
func (st *stream) word(k int) string {
	return words[(st.wordSalt+uint64(k))%uint64(len(words))]
}

// last reports whether event k, the planned one, is the final one: it
// carries the last token.
func (st *stream) last(int) bool { return st.done+max(st.carry, 1) >= st.outTokens }

// Stream headers. vLLM (uvicorn) answers a streaming request with a chunked
// text/event-stream body.
const (
	streamHeaders      = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n"
	streamHeadersClose = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
)

func (st *stream) appendHeaders(dst []byte) []byte {
	if st.closeAfter {
		return append(dst, streamHeadersClose...)
	}
	return append(dst, streamHeaders...)
}

// encoder builds wire bytes for the writer in reusable buffers, so that a
// token costs no allocation.
type encoder struct {
	payload []byte // one chunk's JSON
	event   []byte // the payload as an SSE event
}

// appendEvent frames payload as one SSE event in one HTTP chunk.
func (e *encoder) appendEvent(dst, payload []byte) []byte {
	e.event = sse.AppendData(e.event[:0], payload)
	return httpwire.AppendChunk(dst, e.event)
}

// appendToken appends token k of every choice of st as stream chunks,
// preceded by the role chunks when k is a chat stream's first token and
// followed by the usage chunk, [DONE] and the last chunk when k is the
// final token.
func (e *encoder) appendToken(dst []byte, st *stream, k int) []byte {
	switch st.kind {
	case kindResponses:
		return e.appendResponsesToken(dst, st, k)
	case kindMessages:
		return e.appendMessagesToken(dst, st, k)
	}
	choices := len(st.promptTokens)
	if k == 0 && st.kind == kindChat {
		for c := 0; c < choices; c++ {
			dst = e.appendEvent(dst, e.rolePayload(st, c))
		}
	}
	for c := 0; c < choices; c++ {
		dst = e.appendEvent(dst, e.tokenPayload(st, c, k))
	}
	if st.last(k) {
		if st.includeUsage {
			dst = e.appendEvent(dst, e.usagePayload(st))
		}
		e.event = sse.AppendDone(e.event[:0])
		dst = httpwire.AppendChunk(dst, e.event)
		dst = httpwire.AppendLastChunk(dst)
	}
	return dst
}

func (e *encoder) rolePayload(st *stream, choice int) []byte {
	p := append(e.payload[:0], st.prefix...)
	p = append(p, `{"index":`...)
	p = strconv.AppendInt(p, int64(choice), 10)
	p = append(p, `,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
	p = st.appendChunkUsage(p, choice, true)
	p = append(p, '}')
	e.payload = p
	return p
}

// tokenPayload encodes one token chunk with the fields vLLM sends:
// completions {"index","text","logprobs","finish_reason","stop_reason"}
// plus "usage":null when usage was requested; chat {"index","delta",
// "logprobs","finish_reason"} with "stop_reason" on the final chunk; both
// with the running usage under continuous_usage_stats (appendChunkUsage).
// The text is that of every token the event carries.
func (e *encoder) tokenPayload(st *stream, choice, k int) []byte {
	if st.kind == kindChat && st.phases != nil {
		return e.chatPhasePayload(st, choice, k)
	}
	p := append(e.payload[:0], st.prefix...)
	p = append(p, `{"index":`...)
	p = strconv.AppendInt(p, int64(choice), 10)
	if st.kind == kindChat {
		p = append(p, `,"delta":{"content":"`...)
		p = st.appendWords(p)
		p = append(p, `"},"logprobs":null,"finish_reason":`...)
		if st.last(k) {
			p = append(p, '"')
			p = append(p, st.finishReason...)
			p = append(p, `","stop_reason":null}]`...)
		} else {
			p = append(p, `null}]`...)
		}
		p = st.appendChunkUsage(p, choice, false)
		p = append(p, '}')
		e.payload = p
		return p
	}
	p = append(p, `,"text":"`...)
	p = st.appendWords(p)
	p = append(p, `","logprobs":null,"finish_reason":`...)
	if st.last(k) {
		p = append(p, '"')
		p = append(p, st.finishReason...)
		p = append(p, '"')
	} else {
		p = append(p, "null"...)
	}
	p = append(p, `,"stop_reason":null}]`...)
	p = st.appendChunkUsage(p, choice, false)
	p = append(p, '}')
	e.payload = p
	return p
}

func (e *encoder) usagePayload(st *stream) []byte {
	p := append(e.payload[:0], st.prefix...)
	p = append(p, "],"...)
	p = appendUsage(p, st.promptTotal, st.outTokens*len(st.promptTokens))
	p = append(p, '}')
	e.payload = p
	return p
}

// appendUsage appends "usage":{...} in vLLM's field order.
func appendUsage(dst []byte, prompt, completion int) []byte {
	dst = append(dst, `"usage":{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(prompt), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(prompt+completion), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(completion), 10)
	return append(dst, '}')
}

// appendFullResponse appends the complete HTTP response of a non-streaming
// completions or chat request.
func (e *encoder) appendFullResponse(dst []byte, st *stream) []byte {
	switch st.kind {
	case kindResponses:
		return e.appendResponsesFull(dst, st)
	case kindMessages:
		return e.appendMessagesFull(dst, st)
	}
	p := append(e.payload[:0], st.prefix...)
	for c := range st.promptTokens {
		if c > 0 {
			p = append(p, ',')
		}
		p = append(p, `{"index":`...)
		p = strconv.AppendInt(p, int64(c), 10)
		if st.kind == kindChat {
			p = append(p, `,"message":{"role":"assistant","content":"`...)
		} else {
			p = append(p, `,"text":"`...)
		}
		for k := 0; k < st.outTokens; k++ {
			p = append(p, st.word(k)...)
		}
		if st.kind == kindChat {
			p = append(p, `","tool_calls":[]}`...)
		} else {
			p = append(p, '"')
		}
		p = append(p, `,"logprobs":null,"finish_reason":"`...)
		p = append(p, st.finishReason...)
		p = append(p, `","stop_reason":null}`...)
	}
	p = append(p, "],"...)
	p = appendUsage(p, st.promptTotal, st.outTokens*len(st.promptTokens))
	p = append(p, '}')
	e.payload = p
	return appendJSONResponse(dst, 200, p, st.closeAfter)
}

// appendJSONResponse appends a whole HTTP response with a JSON body.
func appendJSONResponse(dst []byte, status int, body []byte, closeAfter bool) []byte {
	return appendResponse(dst, status, "application/json", body, closeAfter)
}

// appendResponse appends a whole HTTP response with a Content-Length body.
func appendResponse(dst []byte, status int, contentType string, body []byte, closeAfter bool) []byte {
	dst = httpwire.AppendStatusLine(dst, status, httpwire.ReasonPhrase(status))
	dst = httpwire.AppendHeader(dst, "content-type", contentType)
	dst = httpwire.AppendContentLength(dst, len(body))
	if closeAfter {
		dst = httpwire.AppendHeader(dst, "connection", "close")
	}
	dst = httpwire.AppendEndOfHeaders(dst)
	return append(dst, body...)
}

// appendMalformedChunk appends a chunk whose size line is not hexadecimal,
// which every HTTP/1.1 client must reject.
func appendMalformedChunk(dst []byte) []byte {
	return append(dst, "zz\r\ndata: {}\n\n\r\n"...)
}
