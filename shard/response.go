package shard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/sse"
	"github.com/valyala/fastjson"
)

// Response is one benchmark request's answer as it arrives: the parse state
// (HTTP framing, SSE events, OpenAI chunks) and the handler of its bytes,
// recording into the request's metrics.Stream by spec §b's rules — token
// events give TTFT and latency, usage counts, a non-200 status fails on its
// reason phrase without reading the body. The shard loops, the TLS
// transport and the probe loop in bench all read responses through it.
// Parsing a read calls straight back into it without any allocation; only
// the goroutine that owns it may touch it.
//
// The fields every token event touches come first and the ones only a
// head, a pooling answer or a failure needs come last, so that a read
// touches as few of a connection's cache lines as it can: with 10,000
// streams they are rarely still cached from the event before.
type Response struct {
	decoder   *sse.Decoder
	streaming bool // false for the non-streaming pooling backends

	status     int // response status code, 0 until the head arrived
	keepAlive  bool
	done       bool  // the response body ended
	bodyTs     int64 // receive time of the read being parsed
	handlerErr error // first error raised inside a parser callback
	stream     metrics.Stream

	// maxBytes bounds the bytes of one answer (0: no bound); received
	// counts them. budget is the run's memory budget for unparsed bytes,
	// of which this answer holds held.
	maxBytes int64
	received int64
	budget   *Budget
	held     int64

	http httpwire.Parser
	sse  sse.Parser

	reason []byte
	body   []byte

	// The request's own facts a pooling answer needs (SetPoolingUsage).
	pooling          PoolingUsage
	requestPromptLen int
	metadata         []byte // the "metadata" header, for UsageInMetadata
	hasMetadata      bool
}

var (
	_ httpwire.Handler = (*Response)(nil)
	_ sse.EventHandler = (*Response)(nil)
)

// PoolingUsage says where a pooling answer's prompt token count comes
// from. Python's _run_pooling_request chooses by the request's own
// encoding_format (spec §b, "Non-streaming pooling"); a server that
// answers in another form than asked fails the request as it would there.
type PoolingUsage uint8

const (
	// UsageInBody ("float", "base64", anything else) reads the JSON body's
	// usage.prompt_tokens.
	UsageInBody PoolingUsage = iota
	// UsageInMetadata ("bytes") drains the binary body and reads usage from
	// the JSON in the "metadata" response header.
	UsageInMetadata
	// UsageFromRequest ("bytes_only") drains the binary body and takes the
	// request's own prompt length.
	UsageFromRequest
)

// MissingMetadataError is the failure text of a "bytes" answer without a
// metadata header: Python's str() of the KeyError it raises.
const MissingMetadataError = "'metadata'"

// ErrClosedByPeer is the server closing the connection before the
// response was complete.
var ErrClosedByPeer = errors.New("connection closed by server")

// Init sets the chunk decoder (one per goroutine) and whether the answers
// are SSE streams.
func (r *Response) Init(decoder *sse.Decoder, streaming bool) {
	r.decoder, r.streaming = decoder, streaming
}

// SetLimits bounds each answer to maxBytes bytes (0: no bound) and charges
// the bytes it holds unparsed to budget (nil: no budget).
func (r *Response) SetLimits(maxBytes int64, budget *Budget) {
	r.maxBytes, r.budget = maxBytes, budget
}

// Stream is the request's recording state.
func (r *Response) Stream() *metrics.Stream { return &r.stream }

// KeepAlive reports whether the connection may carry another request;
// valid once Consume said the response ended well.
func (r *Response) KeepAlive() bool { return r.keepAlive }

// OnHead implements httpwire.Handler.
func (r *Response) OnHead(h *httpwire.Head, tsNs int64) {
	r.status = h.StatusCode
	if h.StatusCode != 200 {
		// The reason is only ever the failure text of a non-200 answer;
		// not copying "OK" saves each new connection an allocation.
		r.reason = append(r.reason[:0], h.Reason...)
	}
	r.keepAlive = h.KeepAlive
	if h.StatusCode == 200 && !r.streaming && r.pooling == UsageInMetadata {
		v := h.Header("metadata")
		r.metadata, r.hasMetadata = append(r.metadata[:0], v...), v != nil
	}
}

// OnBody implements httpwire.Handler: body bytes go to the SSE parser for
// streams, into the body buffer for pooling responses with a JSON body,
// and nowhere for a binary pooling body or a non-200 response (which
// fails on its status alone, as in Python).
func (r *Response) OnBody(b []byte, tsNs int64) {
	if r.status != 200 || r.handlerErr != nil {
		return
	}
	if !r.streaming {
		if r.pooling == UsageInBody {
			r.body = append(r.body, b...)
		}
		return
	}
	r.bodyTs = tsNs
	if err := r.sse.Feed(b, r); err != nil {
		r.handlerErr = err
	}
}

// OnEnd implements httpwire.Handler.
func (r *Response) OnEnd(tsNs int64) {
	r.done = true
	r.bodyTs = tsNs
}

// OnEvent implements sse.EventHandler: one SSE event is one OpenAI chunk.
func (r *Response) OnEvent(ev *sse.Event) error {
	// The chunk lives on the stack: kept in the Response, its 112 bytes
	// were two more cold cache lines written per event at 10,000 streams.
	var chunk sse.Chunk
	if err := r.decoder.DecodeEvent(ev, &chunk); err != nil {
		if ev.Unterminated {
			// Python drops a trailing unterminated piece that is not JSON.
			return nil
		}
		return err
	}
	switch {
	case chunk.Done:
	case chunk.Token:
		r.stream.Token(r.bodyTs, chunk.Text)
		r.stream.RunningUsage(chunk.RunningCompletionTokens)
	case chunk.HasUsage:
		r.stream.Usage(chunk.PromptTokens, chunk.CompletionTokens)
	}
	recordReasoning(&r.stream, r.bodyTs, &chunk)
	if chunk.ErrMessage != nil {
		// Python passes over the chunk; the count tells the user why the
		// requests it left without a token failed.
		r.stream.ServerMessage(chunk.ErrMessage)
	}
	return nil
}

// Reset clears what a response left, for the next request on the same
// connection or the same request sent again on a fresh one. The stream is
// the caller's to begin.
func (r *Response) Reset() {
	r.giveBack()
	r.received = 0
	r.status = 0
	r.reason = r.reason[:0]
	r.keepAlive = false
	r.done = false
	r.handlerErr = nil
	r.body = r.body[:0]
	r.metadata, r.hasMetadata = r.metadata[:0], false
	r.http.Reset(false)
	r.sse.Reset()
}

// Consume parses the next bytes of the answer, received at tsNs, and says
// whether the request is decided: failed (failure is its error text — a
// protocol error, a malformed chunk, or the reason phrase of a status other
// than 200), or ended well (ok; KeepAlive then says whether the connection
// may be reused: bytes after the answer belong to no request). used is how
// many bytes of b the answer took.
func (r *Response) Consume(b []byte, tsNs int64) (used int, failure string, ok, decided bool) {
	n := len(b)
	over := r.maxBytes > 0 && r.received+int64(n) > r.maxBytes
	if over {
		// Parse what the limit allows: an answer that ends within it is
		// still good.
		b = b[:r.maxBytes-r.received]
	}
	used, err := r.http.Feed(b, tsNs, r)
	r.received += int64(used)
	if err == nil {
		err = r.handlerErr
	}
	switch {
	case err != nil:
		r.giveBack()
		return used, r.FailureText(err), false, true
	case r.status != 0 && r.status != 200:
		r.giveBack()
		return used, string(r.reason), false, true
	case r.done:
		r.giveBack()
		r.keepAlive = used == n && r.http.KeepAlive()
		return used, "", true, true
	case over:
		r.giveBack()
		return used, "response exceeded --max-response-bytes (" + byteCount(r.maxBytes) + ") " + r.progressText(), false, true
	}
	if failure, ok := r.account(); !ok {
		return used, failure, false, true
	}
	return used, "", false, false
}

// account charges the budget with the change in the bytes this answer
// holds unparsed. It fails the answer if it grew while the total is over
// the limit; an answer that shrank or held still never fails.
func (r *Response) account() (failure string, ok bool) {
	if r.budget == nil {
		return "", true
	}
	held := int64(r.sse.Buffered() + len(r.body))
	if held == r.held {
		return "", true
	}
	grew := held > r.held
	total, ok := r.budget.charge(held - r.held)
	r.held = held
	if ok || !grew {
		return "", true
	}
	what := "an unfinished SSE event"
	if !r.streaming {
		what = "an unfinished body"
	}
	failure = "response exceeded the memory budget for unparsed bytes (--max-buffered-bytes " + byteCount(r.budget.limit) +
		"): it held " + byteCount(held) + " of " + what + ", all requests in flight " + byteCount(total) + ", " + r.progressText()
	r.giveBack()
	return failure, false
}

// giveBack returns what the answer held to the budget; the request ended
// or starts over.
func (r *Response) giveBack() {
	if r.held != 0 {
		r.budget.charge(-r.held)
		r.held = 0
	}
}

// Closed decides the request when the server closed the connection at tsNs
// after some bytes of the answer: only a body framed by the close can still
// end well, and the connection is not reused.
func (r *Response) Closed(tsNs int64) (failure string, ok bool) {
	r.giveBack()
	err := r.http.CloseRead(tsNs, r)
	if err == nil {
		err = r.handlerErr
	}
	switch {
	case err != nil:
		return r.FailureText(err), false
	case r.status != 200:
		return string(r.reason), false
	case !r.done:
		return r.FailureText(ErrClosedByPeer), false
	}
	r.keepAlive = false
	return "", true
}

// SetPoolingUsage tells a pooling Response where the next answer's usage
// is and the request's own prompt length (for UsageFromRequest). It holds
// until changed; streams ignore it.
func (r *Response) SetPoolingUsage(u PoolingUsage, requestPromptLen int) {
	r.pooling, r.requestPromptLen = u, requestPromptLen
}

// End records an answer that ended well on rec: a stream succeeds iff a
// token event arrived (after its last unterminated event is flushed); a
// pooling answer takes its usage where SetPoolingUsage said (JSON parsed
// with p), and counts seqs inputs.
func (r *Response) End(rec *metrics.Recorder, p *fastjson.Parser, seqs int) {
	if r.streaming {
		if err := r.sse.Flush(r); err != nil {
			rec.Fail(&r.stream, r.FailureText(err))
		} else {
			rec.EndStream(&r.stream)
		}
		return
	}
	prompt := int64(-1)
	switch r.pooling {
	case UsageFromRequest:
		prompt = int64(r.requestPromptLen)
	case UsageInMetadata:
		if !r.hasMetadata {
			rec.Fail(&r.stream, MissingMetadataError)
			return
		}
		v, err := p.ParseBytes(r.metadata)
		if err != nil {
			rec.Fail(&r.stream, "malformed JSON in the metadata response header: "+err.Error())
			return
		}
		var failure string
		if prompt, failure = promptTokens(v); failure != "" {
			rec.Fail(&r.stream, failure)
			return
		}
	default:
		v, err := p.ParseBytes(r.body)
		if err != nil {
			rec.Fail(&r.stream, "malformed JSON response body: "+err.Error())
			return
		}
		var failure string
		if prompt, failure = promptTokens(v); failure != "" {
			rec.Fail(&r.stream, failure)
			return
		}
	}
	r.stream.Usage(prompt, -1)
	rec.EndPooling(&r.stream, r.bodyTs, max(seqs, 1))
}

// promptTokens is a pooling answer's usage.prompt_tokens, -1 when absent
// or not a number. Python reads it as answer.get("usage", {}).get(
// "prompt_tokens", 0), so an answer or a present usage that is not a JSON
// object fails the request with the AttributeError's text.
func promptTokens(answer *fastjson.Value) (prompt int64, failure string) {
	o, err := answer.Object()
	if err != nil {
		return -1, noGetError(answer)
	}
	usage := sse.LastField(o, "usage")
	if usage == nil {
		return -1, ""
	}
	u, err := usage.Object()
	if err != nil {
		return -1, noGetError(usage)
	}
	if n := sse.LastField(u, "prompt_tokens"); n != nil && n.Type() == fastjson.TypeNumber {
		return int64(n.GetFloat64()), ""
	}
	return -1, ""
}

// noGetError is Python's text for calling .get on a JSON value that is not
// an object: "'list' object has no attribute 'get'".
func noGetError(v *fastjson.Value) string {
	name := "NoneType"
	switch v.Type() {
	case fastjson.TypeArray:
		name = "list"
	case fastjson.TypeString:
		name = "str"
	case fastjson.TypeTrue, fastjson.TypeFalse:
		name = "bool"
	case fastjson.TypeNumber:
		name = "int"
		if bytes.ContainsAny(v.MarshalTo(nil), ".eE") {
			name = "float"
		}
	}
	return "'" + name + "' object has no attribute 'get'"
}

// progressText describes how far the answer got, for error texts.
func (r *Response) progressText() string {
	if r.status == 0 {
		return "before the response head"
	}
	n := r.stream.TokenEvents()
	if n == 1 {
		return "after 1 token event"
	}
	return "after " + strconv.Itoa(n) + " token events"
}

// FailureText turns what ended a request early into its error text, saying
// how far the answer got.
func (r *Response) FailureText(err error) string {
	var pe *httpwire.ProtocolError
	switch {
	case errors.As(err, &pe):
		if errors.Is(pe, io.ErrUnexpectedEOF) && r.status != 0 {
			// "connection closed in chunked body after 12 token events"
			return pe.What + " " + r.progressText()
		}
		return pe.Error()
	case IsReset(err):
		return "connection reset by peer " + r.progressText()
	case err == ErrClosedByPeer:
		return "connection closed by server " + r.progressText()
	}
	return fmt.Sprintf("%v (%s)", err, r.progressText())
}
